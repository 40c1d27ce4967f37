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
  createMcpHandler,
  fromJsonSchema,
  isLegacyRequest,
  ProtocolError,
  Server,
  type AuthInfo,
  type CallToolResult,
  type GetPromptResult,
  type McpRequestContext,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Catalog, CatalogRequest, CompletionRef } from './catalog.js';
import { HEADER_MISMATCH, paramHeaderMismatch, paramHeadersOf } from './param-headers.js';
import type { CacheHint } from './resource.js';
import type { SdkToolCall } from './sdk.js';
import { McpProtocolError, type ToolListing, type ToolResult } from './types.js';

/** What one 2026-07-28 request may ask of mcp/: tools (no tasks: a job tool answers with its job's handle). */
export interface ModernHandlers {
  listTools(): readonly ToolListing[];
  /** `call.task` is always undefined on this path. */
  callTool(call: SdkToolCall): Promise<ToolResult>;
  /** Resources and prompts; each capability is declared only when the catalog has it. */
  catalog: Catalog;
}

/** Options of {@link createModernEndpoint}. */
export interface ModernEndpointOptions {
  name: string;
  version: string;
  instructions?: string;
  /** Out-of-band errors and requests the SDK refused (reporting only; the answer is already given). */
  onError?(error: Error): void;
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
  const factory = (context: McpRequestContext): Server => {
    const handlers = (context.authInfo?.extra as { [HANDLERS]?: ModernHandlers } | undefined)?.[HANDLERS];
    // Every request reaches the factory through `handle`, which always sets them.
    if (handlers === undefined) throw new Error('mcp: a 2026-07-28 request without its handlers');
    return modernServer(options, handlers);
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

/** One request's `Server`: tools, and resources, prompts and completions when the app has them, over `handlers`. */
function modernServer(options: ModernEndpointOptions, handlers: ModernHandlers): Server {
  const { resources, prompts, completions, cacheHints } = handlers.catalog;
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: {
        tools: { listChanged: false },
        // Log messages go out only for a request whose `_meta` names a log level (the SDK's `mcpReq.log`).
        logging: {},
        ...(resources === undefined ? {} : { resources: { listChanged: false } }),
        ...(prompts === undefined ? {} : { prompts: { listChanged: false } }),
        ...(completions === undefined ? {} : { completions: {} }),
      },
      instructions: options.instructions,
      cacheHints,
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
    server.setRequestHandler('resources/read', (request, ctx) =>
      protocolErrors(async () => {
        const { contents, cacheHint } = await resources.read(request.params.uri, catalogRequest(ctx));
        return { contents, ...hintFields(cacheHint) };
      }),
    );
  }
  if (prompts !== undefined) {
    server.setRequestHandler('prompts/list', (request) =>
      protocolErrors(async () => prompts.list(request.params?.cursor)),
    );
    server.setRequestHandler('prompts/get', async (request, ctx) => {
      const result = await protocolErrors(() =>
        prompts.get(request.params.name, request.params.arguments, catalogRequest(ctx)),
      );
      return result as GetPromptResult;
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
    const call: SdkToolCall = {
      name: params.name,
      arguments: params.arguments,
      requestId: ctx.mcpReq.id,
      progressToken: params._meta?.progressToken,
      task: undefined,
      signal: ctx.mcpReq.signal,
      headers: headersOf(ctx.http?.req),
      notify: (method, notificationParams) => ctx.mcpReq.notify({ method, params: notificationParams }),
      log: (level, data) => ctx.mcpReq.log(level, data),
    };
    const result = await protocolErrors(() => handlers.callTool(call));
    return server.projectCallToolResult(result as CallToolResult, undefined);
  });
  return server;
}

/** A resource's own cache hint as the result fields the SDK keeps (a field left out: its fallback). */
function hintFields(hint: CacheHint | undefined): CacheHint {
  const fields: CacheHint = {};
  if (hint?.ttlMs !== undefined) fields.ttlMs = hint.ttlMs;
  if (hint?.cacheScope !== undefined) fields.cacheScope = hint.cacheScope;
  return fields;
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
