import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  defineOptions,
  isBreakwaterError,
  isRequestTimeout,
  jsonDepthExceeds,
  o,
  PrincipalContext,
  tooDeep,
  type BreakwaterError,
  type Principal,
} from '../core/index.js';
import {
  PROBLEM_RENDERER,
  createErrorHandler,
  insufficientScope,
  missingScopes,
  type ErrorRenderer,
} from '../http/index.js';
import { callerPrincipal } from '../jobs/index.js';
import { createMcpServer, type BreakwaterMcpServer, type McpServerOptions } from './server.js';

/** Options of {@link mcpRoutes}; validated at once (an OptionsError names every bad option). */
export interface McpRoutesOptions {
  /** The endpoint's path (default `/mcp`). */
  path?: string;
  /** Largest POST body in bytes (integer >= 1, default 4 194 304, the SDK's own limit). */
  bodyLimitBytes?: number;
}

/** The route registrar {@link mcpRoutes} returns, with the server it serves. */
export type McpRoutes = ((app: FastifyInstance) => void) & { readonly server: BreakwaterMcpServer };

/**
 * Defaults of {@link McpRoutesOptions}; the largest POST body is the SDK's own limit when it reads bodies
 * itself (4 MiB).
 */
export const MCP_ROUTES_DEFAULTS = { path: '/mcp', bodyLimitBytes: 4 * 1024 * 1024 } as const;

/** Checks {@link McpRoutesOptions} and applies {@link MCP_ROUTES_DEFAULTS}. */
const parseOptions = defineOptions<McpRoutesOptions>()('mcpRoutes', {
  path: o.string().min(1).default(MCP_ROUTES_DEFAULTS.path),
  bodyLimitBytes: o.number().int().min(1).default(MCP_ROUTES_DEFAULTS.bodyLimitBytes),
});

/**
 * The MCP endpoint as Fastify routes: `POST`, `GET` and `DELETE` on `path` (Streamable HTTP, MCP
 * 2025-11-25 with sessions and 2026-07-28 stateless, see the server's `handle`), handed to the server on the raw Node request and response (`reply.hijack()`; the POST body
 * as Fastify parsed it), under `PrincipalContext` with the caller the HTTP edge admitted (`request.principal`;
 * see jobs' `callerPrincipal` for a host without the edge): sessions, tasks and job tools belong to it (see
 * `sessions.ts`, `task-store.ts`). Bodies Fastify cannot read are answered as JSON-RPC errors: invalid JSON → 400
 * `-32700`, a non-JSON content type → 415, too large → 413. A `preClose` hook closes every session, so open
 * SSE streams end and `app.close()` does not wait on them.
 *
 * ```ts
 * const mcp = mcpRoutes({ name: 'giftgenius', version: '1.0.0', tools, jobs, store, publicUrl });
 * mcp(app); // before app.listen()
 * ```
 *
 * @param server a server from `createMcpServer`, or its options (one is created).
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option, owner `mcpRoutes` or
 *   `createMcpServer`.
 */
export function mcpRoutes(
  server: BreakwaterMcpServer | McpServerOptions,
  options: McpRoutesOptions = {},
): McpRoutes {
  const { path, bodyLimitBytes: bodyLimit } = parseOptions(options);
  const mcp: BreakwaterMcpServer = isServer(server) ? server : createMcpServer(server);

  const scopedTools = new Map(
    mcp.tools.filter((tool) => tool.scopes.length > 0).map((tool) => [tool.name, tool.scopes]),
  );

  const register = (app: FastifyInstance): void => {
    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: path,
      bodyLimit,
      config: { access: ['mcp'] },
      errorHandler: createErrorHandler(MCP_ERRORS),
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        // Before the SDK (and the tool's argument checks, fingerprints and audit) walks it. On a Breakwater
        // server the body parser has refused it already; this holds on any Fastify host.
        if (jsonDepthExceeds(request.body)) throw tooDeep();
        const principal = callerPrincipal(request.principal);
        if (scopedTools.size > 0 && request.method === 'POST') {
          const refused = toolScopeRefusal(request.body, principal, scopedTools);
          if (refused !== undefined) return refuseScope(request, reply, refused, principal);
        }
        // The SDK writes the response itself (SSE streams included): Fastify must not touch it.
        reply.hijack();
        await PrincipalContext.run(principal, () => mcp.handle(request.raw, reply.raw, request.body));
      },
    });
    app.addHook('preClose', async () => {
      await mcp.close();
    });
  };
  return Object.assign(register, { server: mcp });
}

/**
 * The refusal of the first `tools/call` in a POST (one message or a batch) naming a tool whose scopes the
 * principal lacks, or undefined. Checked before the SDK sees the request, so the answer can be HTTP 403 with
 * a scope challenge (the MCP authorization spec, "Scope Challenge Handling"), which an OAuth client acts on.
 */
function toolScopeRefusal(
  body: unknown,
  principal: Principal,
  scopedTools: ReadonlyMap<string, readonly string[]>,
): BreakwaterError | undefined {
  for (const message of Array.isArray(body) ? body : [body]) {
    const call = message as { method?: unknown; params?: { name?: unknown } } | null;
    if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') continue;
    const required = scopedTools.get(call.params.name);
    if (required === undefined) continue;
    const missing = missingScopes(principal, required);
    if (missing.length > 0) return insufficientScope(`The tool ${call.params.name}`, required, missing);
  }
  return undefined;
}

/** Answers a scope refusal: 403, the edge's `WWW-Authenticate` challenge, a JSON-RPC error body. */
function refuseScope(
  request: FastifyRequest,
  reply: FastifyReply,
  error: BreakwaterError,
  principal: Principal,
): FastifyReply {
  const challenge = request.server.authenticator?.challenge(error, principal);
  if (challenge !== undefined) void reply.header('www-authenticate', challenge);
  const id = (request.body as { id?: unknown } | null)?.id;
  return reply
    .code(403)
    .header('content-type', 'application/json')
    .send({
      jsonrpc: '2.0',
      error: { code: -32001, message: error.message, data: { reason: 'insufficient_scope' } },
      id: typeof id === 'string' || typeof id === 'number' ? id : null,
    });
}

/** A refusal of the HTTP edge (src/http/edge.ts): no or a bad credential, a scope, a foreign or malformed Host. */
function isEdgeRefusal(error: unknown): boolean {
  if (!isBreakwaterError(error)) return false;
  const reason = error.details?.reason;
  return error.code === 'unauthorized' || reason === 'host_missing' || reason === 'host_malformed';
}

function isServer(value: BreakwaterMcpServer | McpServerOptions): value is BreakwaterMcpServer {
  return typeof (value as BreakwaterMcpServer).handle === 'function';
}

/**
 * The endpoint's errors, answered by the edge's one handler (status, `Retry-After`, logging): Fastify's body
 * failures (before the handler runs) as JSON-RPC errors, like the SDK's own (`application/json`, `id: null`):
 * invalid JSON → 400 `-32700`, a non-JSON content type → 415, too large → 413, a body that did not arrive in
 * time → 408 (with `Connection: close`), a BreakwaterError about the body (nested too deep) → `-32600` Invalid
 * Request with its status and message, a fault of ours → `-32603`. The edge's refusals (its `onRequest` hook:
 * 401 without a credential, 403 for a foreign `Host`, 400 for a malformed one) are answered as on every other
 * route, problem+json with the edge's `WWW-Authenticate`, which an OAuth client needs to find the
 * authorization server.
 */
const MCP_ERRORS: ErrorRenderer = Object.freeze({
  body(error: BreakwaterError, request: FastifyRequest, reply: FastifyReply, cause: unknown): unknown {
    if (isEdgeRefusal(cause)) return PROBLEM_RENDERER.body(error, request, reply, cause);
    void reply.header('content-type', 'application/json');
    return { jsonrpc: '2.0', error: rpcError(error, cause), id: null };
  },
});

function rpcError(error: BreakwaterError, cause: unknown): { code: number; message: string } {
  if (isBreakwaterError(cause) && error.status < 500) return { code: -32600, message: error.message };
  if (error.status >= 500) return { code: -32603, message: 'Internal error' };
  if (isRequestTimeout(cause)) {
    return { code: -32000, message: 'Request Timeout: the request body did not arrive in time' };
  }
  if (error.status === 415) {
    return { code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' };
  }
  if (error.status === 413) {
    return { code: -32000, message: 'Payload Too Large: the request body exceeds the limit' };
  }
  const fst = cause as Partial<FastifyError> | null;
  if (error.status === 400 && fst?.code?.startsWith('FST_ERR_CTP_') === true) {
    return { code: -32700, message: 'Parse error: Invalid JSON' };
  }
  return { code: -32000, message: 'Bad Request' };
}
