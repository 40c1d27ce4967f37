/**
 * Resources and prompts (MCP "Resources", "Prompts"), for both eras: one {@link Catalog} the 2025 sessions
 * (`sdk.ts`) and the 2026-07-28 requests (`sdk-v2.ts`) serve alike. A read or a get runs like a tool call:
 * under its deadline, with the caller's `PrincipalContext` (the server binds it), and a failure is a JSON-RPC
 * error, since neither result has an error form. Static lists only: no templates, subscriptions,
 * completions or list cache hints here.
 */
import { PrincipalContext, type Clock, type Principal } from '../core/index.js';
import {
  inputRequiredOf,
  isInputRequiredAnswer,
  type InputChannel,
  type InputRequiredAnswer,
} from './input.js';
import { promptResult, type McpPrompt, type PromptListing, type PromptResult } from './prompt.js';
import {
  contentsOf,
  type McpResource,
  type ReadContext,
  type ResourceContents,
  type ResourceListing,
} from './resource.js';
import { toolErrorInfo } from './results.js';
import { parseArgs, type ToolContext } from './tool.js';
import { correlationIdFrom, runUnderDeadline, type CallScope, type Settled } from './run.js';
import { McpProtocolError, RPC } from './types.js';

/** One catalog request as an adapter hands it over. */
export interface CatalogRequest {
  /** Aborts when the client cancels the request (or its session closes). */
  signal: AbortSignal;
  headers: Record<string, string | string[] | undefined>;
  /** How the read or get asks the user (2026-07-28: the request's round; 2025: the session). */
  input?: InputChannel;
}

/** What the adapters serve: `resources/list|read` when there are resources, `prompts/list|get` with prompts. */
export interface Catalog {
  readonly resources?: {
    list(): readonly ResourceListing[];
    /** The contents, or the questions of a read that waits for input (2026-07-28). */
    read(
      uri: string,
      request: CatalogRequest,
    ): Promise<{ contents: ResourceContents[] } | InputRequiredAnswer>;
  };
  readonly prompts?: {
    list(): readonly PromptListing[];
    /** The prompt, or the questions of a get that waits for input (2026-07-28). */
    get(name: string, args: unknown, request: CatalogRequest): Promise<PromptResult | InputRequiredAnswer>;
  };
}

/** Options of {@link createCatalog}. */
export interface CatalogOptions {
  resources: readonly McpResource[];
  prompts: readonly McpPrompt[];
  clock: Clock;
  /** Hears failures classified `internal_error` (bugs), as for tools. */
  report(error: unknown, context: { tool?: string; correlationId?: string }): void;
}

/**
 * The catalog of an app's resources and prompts. Errors, all `McpProtocolError`:
 * - an unknown URI: -32602 with `data: { uri }` (2026-07-28 "Resources", error handling: SEP-2164);
 * - an unknown prompt: -32602 with `data: { name }`; bad arguments: -32602 naming up to five problems;
 * - a read or get that threw or ran out of time: -32603 with `data: { error }`, the {@link toolErrorInfo}
 *   of the failure (`code`, `category`, `retryable`, `retry_after_ms`, `outcome`), so a client can tell a
 *   timeout or an open breaker from a bug; a bug gets the generic sentence only.
 */
export function createCatalog(options: CatalogOptions): Catalog {
  const { clock, report } = options;
  const byUri = new Map(options.resources.map((item) => [item.uri, item]));
  const byName = new Map(options.prompts.map((item) => [item.name, item]));
  const resourceListings = options.resources.map((item) => item.listing);
  const promptListings = options.prompts.map((item) => item.listing);

  async function run<T>(
    owner: { name: string; deadlineMs: number },
    request: CatalogRequest,
    work: Parameters<typeof runUnderDeadline<T>>[3],
  ): Promise<T | InputRequiredAnswer> {
    const scope: CallScope = {
      signal: request.signal,
      correlationId: correlationIdFrom(request.headers),
      progressToken: undefined,
      sendProgress: () => Promise.resolve(),
      input: request.input,
    };
    // Reads and gets change nothing: a cut-off one has outcome `failed`.
    const settled: Settled<T> = await runUnderDeadline(
      { ...owner, annotations: { readOnlyHint: true } },
      scope,
      clock,
      work,
    );
    let asked: InputRequiredAnswer | undefined;
    try {
      asked = inputRequiredOf(request.input);
    } catch (error) {
      throw failure(error, owner.name, scope.correlationId);
    }
    if (asked !== undefined) return asked;
    if (settled.ok) return settled.value;
    throw failure(settled.error, owner.name, scope.correlationId);
  }

  function failure(error: unknown, name: string, correlationId: string): McpProtocolError {
    const info = toolErrorInfo(error, { idempotent: true });
    if (info.category === 'internal_error') report(error, { tool: name, correlationId });
    return new McpProtocolError(RPC.internalError, info.message, { error: info });
  }

  return {
    resources:
      options.resources.length === 0
        ? undefined
        : {
            list: () => resourceListings,
            async read(uri, request) {
              const item = byUri.get(uri);
              if (item === undefined)
                throw new McpProtocolError(RPC.invalidParams, `Resource not found: ${uri}`, { uri });
              const name = `resource ${uri}`;
              const body = await run({ name, deadlineMs: item.deadlineMs }, request, (ctx) =>
                item.read(readContext(ctx)),
              );
              if (isInputRequiredAnswer(body)) return body;
              try {
                return { contents: contentsOf(item, body) };
              } catch (error) {
                throw failure(error, name, correlationIdFrom(request.headers));
              }
            },
          },
    prompts:
      options.prompts.length === 0
        ? undefined
        : {
            list: () => promptListings,
            async get(name, args, request) {
              const item = byName.get(name);
              if (item === undefined)
                throw new McpProtocolError(RPC.invalidParams, `Unknown prompt: ${name}`, { name });
              const parsed = await parseArgs(item, args);
              if (!parsed.ok)
                throw new McpProtocolError(
                  RPC.invalidParams,
                  `The arguments of prompt ${name} are not valid: ${parsed.problems}.`,
                  { name },
                );
              const owner = { name: `prompt ${name}`, deadlineMs: item.deadlineMs };
              const value = await run(owner, request, (ctx) =>
                item.get(parsed.value as never, readContext(ctx)),
              );
              if (isInputRequiredAnswer(value)) return value;
              try {
                return promptResult(value);
              } catch (error) {
                throw failure(error, owner.name, correlationIdFrom(request.headers));
              }
            },
          },
  };
}

/** The part of a tool's context a read or get sees. */
function readContext(ctx: ToolContext): ReadContext {
  const { signal, deadline, correlationId, inputSupport, requestInput, requestInputs } = ctx;
  return { signal, deadline, correlationId, inputSupport, requestInput, requestInputs };
}

/** `catalog` with every read and get run for `principal` (a session's, or a 2026-07-28 request's caller). */
export function catalogFor(catalog: Catalog, principal: Principal): Catalog {
  const { resources, prompts } = catalog;
  return {
    resources:
      resources === undefined
        ? undefined
        : {
            list: resources.list,
            read: (uri, request) => PrincipalContext.run(principal, () => resources.read(uri, request)),
          },
    prompts:
      prompts === undefined
        ? undefined
        : {
            list: prompts.list,
            get: (name, args, request) =>
              PrincipalContext.run(principal, () => prompts.get(name, args, request)),
          },
  };
}
