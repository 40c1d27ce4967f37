/**
 * The adapter to the MCP TypeScript SDK's v2 line (`@modelcontextprotocol/server`, `/node`): the only file
 * of mcp/ that imports it. It serves the 2026-07-28 revision of the protocol (stateless: no session, each
 * request carries its version and capabilities in `_meta`; `server/discover`; the `Mcp-Method`/`Mcp-Name`
 * header checks; `resultType` on every result) through the SDK's `createMcpHandler`, created with
 * `legacy: 'reject'`: requests of the 2025 revisions stay with the session-keeping transport of `sdk.ts`,
 * and {@link ModernEndpoint.accepts} (the SDK's own routing predicate) tells the two apart.
 *
 * The handler checks neither `Host`/`Origin` nor a token: the HTTP edge in front of `/mcp` does. The SDK calls
 * a server factory once per request; here it builds a low-level `Server` over the request's own
 * {@link ModernHandlers} (bound by the caller to the request's principal), handed through the SDK's
 * pass-through `authInfo`, so nothing of one request is reachable from another.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  inputRequired,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type AuthInfo,
  type CallToolResult,
  type GetPromptResult,
  type InputRequests,
  type InputRequiredResult,
  type McpRequestContext,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Catalog, CatalogRequest, CompletionRef } from './catalog.js';
import { InputRound, inputSupportOf, isInputRequiredAnswer, type InputRequiredAnswer } from './input.js';
import { isSealedState, stateTarget, type SealedState } from './input-state.js';
import { HEADER_MISMATCH, paramHeaderMismatch, paramHeadersOf } from './param-headers.js';
import type { CacheHint } from './resource.js';
import type { SdkToolCall } from './sdk.js';
import {
  negotiatesTasks,
  tasksCapabilityMissing,
  TASKS_EXTENSION,
  type CreateTaskResult,
} from './tasks-wire.js';
import { McpProtocolError, type ToolListing, type ToolResult } from './types.js';

/** What one 2026-07-28 request may ask of mcp/: tools, resources, prompts, and tasks (the extension). */
export interface ModernHandlers {
  listTools(): readonly ToolListing[];
  /**
   * `call.task` is always undefined on this path; `call.tasksExtension` says whether the request declared the
   * tasks extension. A {@link CreateTaskResult} (`resultType: "task"`) is answered as it is. `call.input` is the
   * request's round of answers: a call that waits for input answers an {@link InputRequiredAnswer}.
   */
  callTool(call: SdkToolCall): Promise<ToolResult | CreateTaskResult | InputRequiredAnswer>;
  /** Resources and prompts; each capability is declared only when the catalog has it. */
  catalog: Catalog;
  /**
   * The tasks extension (`io.modelcontextprotocol/tasks`, see `tasks-ext.ts`), when the server has job tools:
   * then `server/discover` declares it, and `tasks/get`, `tasks/update` and `tasks/cancel` are served to
   * requests that declare it (others get -32021). Without it those methods are unknown (-32601).
   */
  tasks?: ModernTaskHandlers;
  /** The caller's principal id: `requestState` minted for one caller is refused for another. */
  callerId: string;
}

/** The `tasks/*` methods of the tasks extension, bound to the request's principal. */
export interface ModernTaskHandlers {
  /** `tasks/get`: the detailed task. @throws McpProtocolError -32602 for an unknown task. */
  get(taskId: string): Promise<object>;
  /** `tasks/cancel` (the ack is empty). @throws McpProtocolError -32602 for an unknown task. */
  cancel(taskId: string): Promise<void>;
  /** `tasks/update` (the ack is empty). @throws McpProtocolError -32602 for an unknown task. */
  update(taskId: string, inputResponses: unknown): Promise<void>;
}

/**
 * The params of `tasks/get`, `tasks/update` and `tasks/cancel`. The SDK lifts `inputResponses` (of
 * `tasks/update`) out of the params into `ctx.mcpReq.inputResponses`, as for any request of 2026-07-28.
 */
const TASK_PARAMS = z.looseObject({ taskId: z.string() });

/** Options of {@link createModernEndpoint}. */
export interface ModernEndpointOptions {
  name: string;
  version: string;
  instructions?: string;
  /** Out-of-band errors and requests the SDK refused (reporting only; the answer is already given). */
  onError?(error: Error): void;
  /** The HMAC-SHA256 key that signs `requestState` (at least 32 bytes; a string counts its UTF-8 bytes). */
  requestStateKey: Uint8Array | string;
  /** How long a minted `requestState` is accepted, ms. */
  requestStateTtlMs: number;
  /** Source of time of the `requestState` expiry. */
  clock: { now(): number };
}

/** The 2026-07-28 side of the MCP endpoint. */
export interface ModernEndpoint {
  /**
   * True when the SDK routes this request to the 2026-07-28 path: a POST carrying the per-request `_meta`
   * envelope claim, or naming a modern revision in `MCP-Protocol-Version` (malformed ones included: this
   * path owns their errors). False for `initialize`, GET, DELETE and everything else of the 2025 revisions.
   */
  accepts(req: IncomingMessage, body: unknown): Promise<boolean>;
  /** Answers one request {@link accepts} took, with `handlers` serving it. Never rejects. */
  handle(req: IncomingMessage, res: ServerResponse, body: unknown, handlers: ModernHandlers): Promise<void>;
  /** Aborts the requests in flight on this path. */
  close(): Promise<void>;
}

/**
 * A checker of values against a JSON Schema (the dialect its `$schema` names, 2020-12 without one), with the
 * SDK's validator (AJV on Node). Resolves with the problems found (message and path), none for a valid value.
 * @throws Error when the schema does not compile (a bug of the definition).
 */
export function jsonSchemaChecker(
  schema: Record<string, unknown>,
): (value: unknown) => Promise<{ message: string; path: PropertyKey[] }[]> {
  const standard = fromJsonSchema(schema as Parameters<typeof fromJsonSchema>[0])['~standard'];
  // Compiled now, so a bad schema fails at definition rather than at the first call.
  void standard.validate({});
  return async (value) => {
    const result = await standard.validate(value);
    return (result.issues ?? []).map((issue) => ({
      message: issue.message,
      path: (issue.path ?? []).map((segment) => (typeof segment === 'object' ? segment.key : segment)),
    }));
  };
}

/** The key under `authInfo.extra` that carries a request's {@link ModernHandlers} to the server factory. */
const HANDLERS = Symbol('breakwater.mcp.handlers');

/** Creates the 2026-07-28 endpoint (one SDK handler; a `Server` per request). */
export function createModernEndpoint(options: ModernEndpointOptions): ModernEndpoint {
  const codec = createRequestStateCodec<SealedState>({
    key: options.requestStateKey,
    // A backstop: the expiry that counts is the state's own, on the server's clock (see `roundOf`).
    ttlSeconds: Math.ceil(options.requestStateTtlMs / 1000) + 1,
    // The state answers one caller's one method: minted for A, refused for B (the spec's user-binding MUST).
    bind: (ctx) => `${ctx.mcpReq.method}\0${handlersOf(ctx.http?.authInfo)?.callerId ?? ''}`,
  });
  const factory = (context: McpRequestContext): Server => {
    const handlers = handlersOf(context.authInfo);
    // Every request reaches the factory through `handle`, which always sets them.
    if (handlers === undefined) throw new Error('mcp: a 2026-07-28 request without its handlers');
    return modernServer(options, handlers, codec);
  };
  const handler = createMcpHandler(factory, {
    legacy: 'reject',
    onerror: (error) => options.onError?.(error),
  });
  return {
    async accepts(req, body) {
      if (req.method !== 'POST') return false;
      return !(await isLegacyRequest(await toWebRequest(req, body), body));
    },
    async handle(req, res, body, handlers) {
      if (rejectedParamHeaders(req, res, body, handlers)) return;
      const authInfo: AuthInfo = { token: '', clientId: '', scopes: [], extra: { [HANDLERS]: handlers } };
      const serve = toNodeHandler(
        { fetch: (request, requestOptions) => handler.fetch(request, { ...requestOptions, authInfo }) },
        { onerror: (error) => options.onError?.(error) },
      );
      await serve(req, res, body);
    },
    close: () => handler.close(),
  };
}

/**
 * Answers a `tools/call` whose `Mcp-Param-*` headers disagree with its arguments (see `param-headers.ts`):
 * HTTP 400, JSON-RPC -32020, before any handler runs. True when it answered.
 */
function rejectedParamHeaders(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  handlers: ModernHandlers,
): boolean {
  const message = body as {
    method?: unknown;
    id?: unknown;
    params?: { name?: unknown; arguments?: unknown };
  };
  if (typeof message !== 'object' || message === null || message.method !== 'tools/call') return false;
  const tool = handlers.listTools().find((listing) => listing.name === message.params?.name);
  if (tool === undefined) return false;
  const declared = paramHeadersOf(tool.inputSchema as Record<string, unknown>);
  if (declared.length === 0) return false;
  const mismatch = paramHeaderMismatch(declared, message.params?.arguments, (name) => {
    const value = req.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  });
  if (mismatch === undefined) return false;
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: HEADER_MISMATCH, ...mismatch } }));
  return true;
}

/** The request's {@link ModernHandlers}, carried by `authInfo.extra`. */
function handlersOf(authInfo: AuthInfo | undefined): ModernHandlers | undefined {
  return (authInfo?.extra as { [HANDLERS]?: ModernHandlers } | undefined)?.[HANDLERS];
}

/** One request's multi-round-trip part: its round of answers, and how to answer when questions remain. */
interface ModernInput {
  round: InputRound;
  answer(asked: InputRequiredAnswer): Promise<InputRequiredResult>;
}

/**
 * The round of a request to `name` (a tool, a prompt, a URI) with `args`. The SDK already refused a state that
 * fails its MAC or binding (-32602, "Invalid or expired requestState"); a state minted for another request
 * (name or arguments) or past its expiry is refused the same way here.
 */
function roundOf(
  options: ModernEndpointOptions,
  codec: RequestStateCodec<SealedState>,
  ctx: ServerContext,
  name: string,
  args: unknown,
): ModernInput {
  const target = stateTarget(ctx.mcpReq.method, name, args);
  const state = ctx.mcpReq.requestState<SealedState>();
  if (state !== undefined && (!isSealedState(state) || state.t !== target || state.e < options.clock.now()))
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', {
      reason: 'invalid_request_state',
    });
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const round = new InputRound(
    inputSupportOf(envelope?.[CLIENT_CAPABILITIES_META_KEY]),
    state === undefined ? undefined : { round: state.r, answers: state.a },
    ctx.mcpReq.inputResponses,
  );
  return {
    round,
    async answer(asked) {
      const sealed: SealedState = {
        r: asked.state.round,
        a: asked.state.answers,
        t: target,
        e: options.clock.now() + options.requestStateTtlMs,
      };
      return inputRequired({
        inputRequests: asked.inputRequests as InputRequests,
        requestState: await codec.mint(sealed, ctx),
      });
    },
  };
}

/** One request's `Server`: tools, and resources, prompts and completions when the app has them, over `handlers`. */
function modernServer(
  options: ModernEndpointOptions,
  handlers: ModernHandlers,
  codec: RequestStateCodec<SealedState>,
): Server {
  const { resources, prompts, completions, cacheHints } = handlers.catalog;
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: {
        tools: { listChanged: false },
        // Log messages go out only for a request whose `_meta` names a log level (the SDK's `mcpReq.log`).
        logging: {},
        ...(resources === undefined ? {} : { resources: { listChanged: false, subscribe: true } }),
        ...(prompts === undefined ? {} : { prompts: { listChanged: false } }),
        ...(completions === undefined ? {} : { completions: {} }),
        ...(handlers.tasks === undefined ? {} : { extensions: { [TASKS_EXTENSION]: {} } }),
      },
      instructions: options.instructions,
      cacheHints,
      // Refuses a state that fails its MAC, binding or the codec's expiry: -32602 before any handler runs.
      requestState: { verify: codec.verify },
    },
  );
  // 2026-07-28 removed `logging/setLevel` (the level travels in each request's `_meta`): not served here.
  server.removeRequestHandler('logging/setLevel');
  const catalogRequest = (ctx: ServerContext): CatalogRequest => ({
    signal: ctx.mcpReq.signal,
    headers: headersOf(ctx.http?.req),
    log: (level, data) => ctx.mcpReq.log(level, data),
  });
  if (resources !== undefined) {
    server.setRequestHandler('resources/list', (request, ctx) =>
      protocolErrors(() => resources.list(request.params?.cursor, catalogRequest(ctx))),
    );
    const templates = resources.templates;
    if (templates !== undefined)
      server.setRequestHandler('resources/templates/list', (request) =>
        protocolErrors(async () => templates(request.params?.cursor)),
      );
    server.setRequestHandler('resources/read', async (request, ctx) => {
      const input = roundOf(options, codec, ctx, request.params.uri, {});
      const result = await protocolErrors(() =>
        resources.read(request.params.uri, { ...catalogRequest(ctx), input: input.round }),
      );
      if (isInputRequiredAnswer(result)) return input.answer(result);
      return { contents: result.contents, ...hintFields(result.cacheHint) };
    });
  }
  if (prompts !== undefined) {
    server.setRequestHandler('prompts/list', (request) =>
      protocolErrors(async () => prompts.list(request.params?.cursor)),
    );
    server.setRequestHandler('prompts/get', async (request, ctx) => {
      const { name, arguments: args } = request.params;
      const input = roundOf(options, codec, ctx, name, args ?? {});
      const result = await protocolErrors(() =>
        prompts.get(name, args, { ...catalogRequest(ctx), input: input.round }),
      );
      return isInputRequiredAnswer(result) ? input.answer(result) : (result as GetPromptResult);
    });
  }
  if (completions !== undefined) {
    server.setRequestHandler('completion/complete', (request, ctx) =>
      protocolErrors(() =>
        completions.complete(
          request.params.ref as CompletionRef,
          request.params.argument,
          request.params.context?.arguments,
          catalogRequest(ctx),
        ),
      ),
    );
  }
  server.setRequestHandler('tools/list', () => ({ tools: [...handlers.listTools()] }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const params = request.params;
    const input = roundOf(options, codec, ctx, params.name, params.arguments ?? {});
    const call: SdkToolCall = {
      name: params.name,
      arguments: params.arguments,
      requestId: ctx.mcpReq.id,
      progressToken: params._meta?.progressToken,
      task: undefined,
      tasksExtension: declaresTasks(ctx.mcpReq.envelope),
      signal: ctx.mcpReq.signal,
      headers: headersOf(ctx.http?.req),
      notify: (method, notificationParams) => ctx.mcpReq.notify({ method, params: notificationParams }),
      log: (level, data) => ctx.mcpReq.log(level, data),
      input: input.round,
    };
    const result = await protocolErrors(() => handlers.callTool(call));
    if (isInputRequiredAnswer(result)) return input.answer(result);
    if ((result as { resultType?: unknown }).resultType === 'task') return result as never;
    return server.projectCallToolResult(result as CallToolResult, undefined);
  });
  const tasks = handlers.tasks;
  if (tasks !== undefined) {
    /** Runs a `tasks/*` method for a request that declared the extension; -32021 for one that did not. */
    const gated = async (
      method: string,
      ctx: { mcpReq: { envelope?: object } },
      fn: () => Promise<object>,
    ): Promise<Record<string, unknown>> => {
      if (!declaresTasks(ctx.mcpReq.envelope)) {
        const error = tasksCapabilityMissing(method);
        throw new ProtocolError(error.rpcCode, error.message, error.data);
      }
      return (await protocolErrors(fn)) as Record<string, unknown>;
    };
    server.setRequestHandler('tasks/get', { params: TASK_PARAMS }, (params, ctx) =>
      gated('tasks/get', ctx, () => tasks.get(params.taskId)),
    );
    server.setRequestHandler('tasks/cancel', { params: TASK_PARAMS }, (params, ctx) =>
      gated('tasks/cancel', ctx, async () => (await tasks.cancel(params.taskId), {})),
    );
    server.setRequestHandler('tasks/update', { params: TASK_PARAMS }, (params, ctx) =>
      gated(
        'tasks/update',
        ctx,
        async () => (await tasks.update(params.taskId, ctx.mcpReq.inputResponses), {}),
      ),
    );
  }
  return server;
}

/** A resource's own cache hint as the result fields the SDK keeps (a field left out: its fallback). */
function hintFields(hint: CacheHint | undefined): CacheHint {
  const fields: CacheHint = {};
  if (hint?.ttlMs !== undefined) fields.ttlMs = hint.ttlMs;
  if (hint?.cacheScope !== undefined) fields.cacheScope = hint.cacheScope;
  return fields;
}

/** True when a request's `_meta` envelope (as the SDK lifted it) declares the tasks extension. */
function declaresTasks(envelope: object | undefined): boolean {
  return negotiatesTasks((envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY]);
}

/** The request's headers as Node shows them (lower-case names). */
function headersOf(request: Request | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  request?.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return headers;
}

/** Runs `fn`, turning our {@link McpProtocolError} into the SDK's JSON-RPC error. */
async function protocolErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof McpProtocolError) throw new ProtocolError(error.rpcCode, error.message, error.data);
    throw error;
  }
}
