/**
 * Resources, resource templates, prompts and completions (MCP "Resources", "Prompts", "Completion"), for both
 * eras: one {@link Catalog} the 2025 sessions (`sdk.ts`) and the 2026-07-28 requests (`sdk-v2.ts`) serve
 * alike. A read, a get, a template's `list` and a completion run like a tool call: under their deadline,
 * with the caller's `PrincipalContext` (see {@link catalogFor}), and a failure is a JSON-RPC error, since
 * none of these results has an error form. Lists are paged (see `catalog-pages.ts`); what a caller may not
 * see (`scopes`) is left out of its lists and answered as unknown.
 */
import { hasScope, PrincipalContext, type Clock, type Principal } from '../core/index.js';
import { pageOf } from './catalog-pages.js';
import {
  inputRequiredOf,
  isInputRequiredAnswer,
  type InputChannel,
  type InputRequiredAnswer,
} from './input.js';
import { promptResult, type McpPrompt, type PromptListing, type PromptResult } from './prompt.js';
import {
  contentsOf,
  type CacheHint,
  type McpResource,
  type ReadContext,
  type ResourceContents,
  type ResourceListing,
} from './resource.js';
import type { Completer, McpResourceTemplate, ResourceTemplateListing } from './resource-template.js';
import { toolErrorInfo } from './results.js';
import { parseArgs, type LogLevel, type ToolContext } from './tool.js';
import { correlationIdFrom, runUnderDeadline, type CallScope, type Settled } from './run.js';
import { McpProtocolError, RPC } from './types.js';

/** One catalog request as an adapter hands it over. */
export interface CatalogRequest {
  /** Aborts when the client cancels the request (or its session closes). */
  signal: AbortSignal;
  headers: Record<string, string | string[] | undefined>;
  /** Sends `notifications/message` for this request when the client asked for `level` (else absent). */
  log?(level: LogLevel, data: unknown): Promise<void>;
  /** How a read or get asks the user (2026-07-28: the request's round; 2025: the session); else none. */
  input?: InputChannel;
}

/** A `completion/complete` reference (MCP `PromptReference` or `ResourceTemplateReference`). */
export type CompletionRef = { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string };

/** A `completion/complete` result's `completion`. */
export type Completion = {
  values: string[];
  total: number;
  hasMore: boolean;
};

/** Most values one completion answers (MCP "Completion": "Must not exceed 100 items"). */
export const MAX_COMPLETION_VALUES = 100;
/** Most resources one template's `list` adds to `resources/list`. */
export const MAX_TEMPLATE_LIST = 1_000;

/** What the adapters serve; each part (and its capability) only when the app has something for it. */
export interface Catalog {
  readonly resources?: {
    list(
      cursor: string | undefined,
      request: CatalogRequest,
    ): Promise<ListPage<'resources', ResourceListing>>;
    /** Present when there are templates: `resources/templates/list`. */
    templates?(cursor: string | undefined): ListPage<'resourceTemplates', ResourceTemplateListing>;
    /** True when the caller may see `uri`: a visible resource has it, or a visible template makes it. */
    knows(uri: string): boolean;
    /**
     * `cacheHint` is the resource's (or template's), for 2026-07-28 results only; the questions of a read
     * that waits for input (2026-07-28) instead.
     */
    read(
      uri: string,
      request: CatalogRequest,
    ): Promise<{ contents: ResourceContents[]; cacheHint?: CacheHint } | InputRequiredAnswer>;
  };
  readonly prompts?: {
    list(cursor: string | undefined): ListPage<'prompts', PromptListing>;
    /** The prompt, or the questions of a get that waits for input (2026-07-28). */
    get(name: string, args: unknown, request: CatalogRequest): Promise<PromptResult | InputRequiredAnswer>;
  };
  /** Present when a prompt or a template has completers. */
  readonly completions?: {
    complete(
      ref: CompletionRef,
      argument: { name: string; value: string },
      context: Record<string, string> | undefined,
      request: CatalogRequest,
    ): Promise<{ completion: Completion }>;
  };
  /** The cache hints of the 2026-07-28 list results, by method (absent: the SDK's defaults). */
  readonly cacheHints: Partial<
    Record<'tools/list' | 'resources/list' | 'resources/templates/list' | 'prompts/list', CacheHint>
  >;
}

/** One page of a list result: the items under `key`, and `nextCursor` while more follow. */
export type ListPage<K extends string, T> = { [P in K]: T[] } & { nextCursor?: string };

/** Options of {@link createCatalog}. */
export interface CatalogOptions {
  resources: readonly (McpResource | McpResourceTemplate)[];
  prompts: readonly McpPrompt[];
  /** Entries per list page (integer >= 1). */
  pageSize: number;
  cacheHints: Catalog['cacheHints'];
  clock: Clock;
  /** Hears failures classified `internal_error` (bugs), as for tools. */
  report(error: unknown, context: { tool?: string; correlationId?: string }): void;
}

/** True when the caller (the bound principal) holds every scope of `item` (`admin` holds all). */
function visible(item: { scopes: readonly string[] }): boolean {
  if (item.scopes.length === 0) return true;
  const principal = PrincipalContext.get();
  return principal !== undefined && item.scopes.every((scope) => hasScope(principal, scope));
}

/**
 * The catalog of an app's resources, templates and prompts. Errors, all `McpProtocolError`:
 * - an unknown URI (none of the resources, none of the templates makes it, or the template's read threw
 *   `BreakwaterError('not_found')`): -32602 with `data: { uri }` (2026-07-28 "Resources", SEP-2164);
 * - an unknown prompt: -32602 with `data: { name }`; bad arguments: -32602 naming up to five problems;
 * - a completion of an unknown prompt or template: -32602 with `data: { ref }`;
 * - a bad cursor: -32602 with `data: { cursor }`;
 * - a read, get, list or completion that threw or ran out of time: -32603 with `data: { error }`, the
 *   {@link toolErrorInfo} of the failure (`code`, `category`, `retryable`, `retry_after_ms`, `outcome`), so a
 *   client can tell a timeout or an open breaker from a bug; a bug gets the generic sentence only.
 * What a caller lacks the `scopes` of is answered exactly as what does not exist.
 */
export function createCatalog(options: CatalogOptions): Catalog {
  const { clock, report, pageSize } = options;
  const statics = options.resources.filter((item): item is McpResource => item.kind === 'resource');
  const templates = options.resources.filter(
    (item): item is McpResourceTemplate => item.kind === 'resourceTemplate',
  );
  const byUri = new Map(statics.map((item) => [item.uri, item]));
  const byName = new Map(options.prompts.map((item) => [item.name, item]));
  const byTemplate = new Map(templates.map((item) => [item.uriTemplate, item]));
  const completable =
    templates.some((item) => Object.keys(item.complete).length > 0) ||
    options.prompts.some((item) => Object.keys(item.complete).length > 0);

  async function run<T>(
    owner: { name: string; deadlineMs: number },
    request: CatalogRequest,
    work: (ctx: ReadContext) => T | Promise<T>,
  ): Promise<T | InputRequiredAnswer> {
    const scope: CallScope = {
      signal: request.signal,
      correlationId: correlationIdFrom(request.headers),
      progressToken: undefined,
      sendProgress: () => Promise.resolve(),
      sendLog: request.log,
      input: request.input,
    };
    // Reads, gets, lists and completions change nothing: a cut-off one has outcome `failed`.
    const settled: Settled<T> = await runUnderDeadline(
      { ...owner, annotations: { readOnlyHint: true } },
      scope,
      clock,
      (ctx) => work(readContext(ctx)),
    );
    let asked: InputRequiredAnswer | undefined;
    try {
      asked = inputRequiredOf(request.input);
    } catch (error) {
      if (error instanceof McpProtocolError) throw error;
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

  const notFound = (uri: string): McpProtocolError =>
    new McpProtocolError(RPC.invalidParams, `Resource not found: ${uri}`, { uri });
  const unknownPrompt = (name: string): McpProtocolError =>
    new McpProtocolError(RPC.invalidParams, `Unknown prompt: ${name}`, { name });

  async function listResources(request: CatalogRequest): Promise<ResourceListing[]> {
    const listings = statics.filter(visible).map((item) => item.listing);
    for (const template of templates) {
      if (template.list === undefined || !visible(template)) continue;
      const list = template.list;
      const owner = { name: `resource template ${template.uriTemplate}`, deadlineMs: template.deadlineMs };
      const found = await run(owner, request, (ctx) => list(ctx));
      if (!Array.isArray(found))
        throw failure(new TypeError(`${owner.name}: list must return an array`), owner.name, '');
      listings.push(...(found as ResourceListing[]).slice(0, MAX_TEMPLATE_LIST));
    }
    return listings;
  }

  async function readTemplate(
    template: McpResourceTemplate,
    variables: Record<string, string>,
    uri: string,
    request: CatalogRequest,
  ): Promise<{ contents: ResourceContents[]; cacheHint?: CacheHint } | InputRequiredAnswer> {
    const name = `resource template ${template.uriTemplate}`;
    let body: unknown;
    try {
      body = await run({ name, deadlineMs: template.deadlineMs }, request, (ctx) =>
        template.read(variables, { ...ctx, uri }),
      );
    } catch (error) {
      const cause =
        error instanceof McpProtocolError ? (error.data as { error?: { code?: string } }) : undefined;
      if (cause?.error?.code === 'not_found') throw notFound(uri);
      throw error;
    }
    if (isInputRequiredAnswer(body)) return body;
    try {
      return withHint(contentsOf({ uri, mimeType: template.mimeType }, body), template.cacheHint);
    } catch (error) {
      throw failure(error, name, correlationIdFrom(request.headers));
    }
  }

  async function complete(
    completer: Completer | undefined,
    owner: { name: string; deadlineMs: number },
    value: string,
    context: Record<string, string> | undefined,
    request: CatalogRequest,
  ): Promise<{ completion: Completion }> {
    if (completer === undefined) return { completion: { values: [], total: 0, hasMore: false } };
    const found = await run(owner, request, (ctx) => completer(value, { ...ctx, arguments: { ...context } }));
    if (!Array.isArray(found) || !found.every((item) => typeof item === 'string'))
      throw failure(new TypeError(`${owner.name}: a completer must return strings`), owner.name, '');
    const values = (found as string[]).slice(0, MAX_COMPLETION_VALUES);
    return { completion: { values, total: found.length, hasMore: found.length > values.length } };
  }

  return {
    cacheHints: options.cacheHints,
    resources:
      options.resources.length === 0
        ? undefined
        : {
            async list(cursor, request) {
              const listings = await listResources(request);
              return pageOf('resources', listings, cursor, pageSize);
            },
            templates:
              templates.length === 0
                ? undefined
                : (cursor) =>
                    pageOf(
                      'resourceTemplates',
                      templates.filter(visible).map((t) => t.listing),
                      cursor,
                      pageSize,
                    ),
            knows(uri) {
              const item = byUri.get(uri);
              if (item !== undefined && visible(item)) return true;
              return templates.some(
                (template) => visible(template) && template.template.match(uri) !== undefined,
              );
            },
            async read(uri, request) {
              const item = byUri.get(uri);
              if (item !== undefined && visible(item)) {
                const name = `resource ${uri}`;
                const body = await run({ name, deadlineMs: item.deadlineMs }, request, (ctx) =>
                  item.read(ctx),
                );
                if (isInputRequiredAnswer(body)) return body;
                try {
                  return withHint(contentsOf(item, body), item.cacheHint);
                } catch (error) {
                  throw failure(error, name, correlationIdFrom(request.headers));
                }
              }
              for (const template of templates) {
                if (!visible(template)) continue;
                const variables = template.template.match(uri);
                if (variables !== undefined) return readTemplate(template, variables, uri, request);
              }
              throw notFound(uri);
            },
          },
    prompts:
      options.prompts.length === 0
        ? undefined
        : {
            list: (cursor) =>
              pageOf(
                'prompts',
                options.prompts.filter(visible).map((item) => item.listing),
                cursor,
                pageSize,
              ),
            async get(name, args, request) {
              const item = byName.get(name);
              if (item === undefined || !visible(item)) throw unknownPrompt(name);
              const parsed = await parseArgs(item, args);
              if (!parsed.ok)
                throw new McpProtocolError(
                  RPC.invalidParams,
                  `The arguments of prompt ${name} are not valid: ${parsed.problems}.`,
                  { name },
                );
              const owner = { name: `prompt ${name}`, deadlineMs: item.deadlineMs };
              const value = await run(owner, request, (ctx) => item.get(parsed.value as never, ctx));
              if (isInputRequiredAnswer(value)) return value;
              try {
                return promptResult(value);
              } catch (error) {
                throw failure(error, owner.name, correlationIdFrom(request.headers));
              }
            },
          },
    completions: !completable
      ? undefined
      : {
          complete(ref, argument, context, request) {
            if (ref.type === 'ref/prompt') {
              const item = byName.get(ref.name);
              if (item === undefined || !visible(item)) throw unknownPrompt(ref.name);
              const owner = { name: `prompt ${item.name}`, deadlineMs: item.deadlineMs };
              return complete(item.complete[argument.name], owner, argument.value, context, request);
            }
            const template = byTemplate.get(ref.uri);
            if (template === undefined || !visible(template))
              throw new McpProtocolError(RPC.invalidParams, `Resource template not found: ${ref.uri}`, {
                ref,
              });
            const owner = {
              name: `resource template ${template.uriTemplate}`,
              deadlineMs: template.deadlineMs,
            };
            return complete(template.complete[argument.name], owner, argument.value, context, request);
          },
        },
  };
}

/** The part of a tool's context a read, get, list or completion sees. */
function readContext(ctx: ToolContext): ReadContext {
  const { signal, deadline, correlationId, log, inputSupport, requestInput, requestInputs } = ctx;
  return { signal, deadline, correlationId, log, inputSupport, requestInput, requestInputs };
}

function withHint(
  contents: ResourceContents[],
  cacheHint: CacheHint | undefined,
): { contents: ResourceContents[]; cacheHint?: CacheHint } {
  return cacheHint === undefined ? { contents } : { contents, cacheHint };
}

/**
 * `catalog` with every list, read, get and completion run for `principal` (a session's, or a 2026-07-28
 * request's caller): its scopes decide what it sees, and reads run under its `PrincipalContext`.
 */
export function catalogFor(catalog: Catalog, principal: Principal): Catalog {
  const as = <T>(fn: () => T): T => PrincipalContext.run(principal, fn);
  const { resources, prompts, completions } = catalog;
  const templates = resources?.templates;
  return {
    cacheHints: catalog.cacheHints,
    resources:
      resources === undefined
        ? undefined
        : {
            list: (cursor, request) => as(() => resources.list(cursor, request)),
            templates: templates === undefined ? undefined : (cursor) => as(() => templates(cursor)),
            knows: (uri) => as(() => resources.knows(uri)),
            read: (uri, request) => as(() => resources.read(uri, request)),
          },
    prompts:
      prompts === undefined
        ? undefined
        : {
            list: (cursor) => as(() => prompts.list(cursor)),
            get: (name, args, request) => as(() => prompts.get(name, args, request)),
          },
    completions:
      completions === undefined
        ? undefined
        : {
            complete: (ref, argument, context, request) =>
              as(() => completions.complete(ref, argument, context, request)),
          },
  };
}
