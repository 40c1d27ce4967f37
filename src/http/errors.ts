/**
 * The edge's one error handler and the renderers capabilities choose for their routes
 * (docs/http.md#one-error-handler-a-renderer-per-front). Capabilities throw `BreakwaterError`; the edge
 * answers. One function, {@link createErrorHandler}, decides for every route what a failure becomes
 * (`toHttpError`, unless the route's renderer names it), how it is logged (5xx at `error` with the original
 * error and its stack, 4xx at `info`), the status, `Retry-After`, `Content-Type: application/problem+json`
 * and the masking of foreign messages. What a capability's clients read differently, the body (the AI
 * gateway's OpenAI-shaped `error` member, MCP's JSON-RPC errors) and headers of its own, comes from its
 * {@link ErrorRenderer}.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  PROBLEM_CONTENT_TYPE,
  isRequestTimeout,
  requestNotReceived,
  retryAfterHeader,
  toProblem,
} from '../core/index.js';
import { pathOf, toHttpError } from './problems.js';

/** How the errors of a group of routes are answered; see {@link installErrorRenderer}. */
export interface ErrorRenderer {
  /**
   * The body of the answer to `error` (serialized as JSON). Called with the status, `Retry-After` and
   * `Content-Type: application/problem+json; charset=utf-8` already set on `reply`: a renderer may add
   * headers of its own, or set another content type (MCP's JSON-RPC errors are `application/json`).
   * `cause` is what was thrown, for a renderer whose body depends on it (a JSON parse error is `-32700`).
   */
  body(error: BreakwaterError, request: FastifyRequest, reply: FastifyReply, cause: unknown): unknown;
  /**
   * Optional: the `BreakwaterError` a failure stands for on these routes, where the capability reads it
   * otherwise than the edge (the webhook route's 408; the AI route's 504 `timeout` for a completion, which
   * has no effect beyond its cost). Undefined, or no `read`, leaves it to the edge: a request timeout while
   * the body was still arriving is 408 `timeout` with `Connection: close`, anything else `toHttpError`.
   */
  read?(cause: unknown, request: FastifyRequest, reply: FastifyReply): BreakwaterError | undefined;
  /**
   * Optional: told of each error answer on these routes, once it is logged and before it is written (not
   * when the reply had already gone out), e.g. to count rejected webhook deliveries.
   */
  answered?(error: BreakwaterError, request: FastifyRequest): void;
}

/** The default renderer: the error as an RFC 9457 problem (core `toProblem`), `instance` the request path. */
export const PROBLEM_RENDERER: ErrorRenderer = Object.freeze({
  body: (error: BreakwaterError, request: FastifyRequest) => toProblem(error, pathOf(request)),
});

/**
 * The error handler that answers with `renderer` (default {@link PROBLEM_RENDERER}): maps the failure (the
 * renderer's `read`, else a body that did not arrive in time, else `toHttpError`), logs it, and answers with
 * its status, `Retry-After` (whole seconds, when the error has `retryAfterMs`) and the renderer's body. An
 * error after the reply went out (a stream that started, the request timeout's own answer) is only logged.
 * For a Fastify scope's `setErrorHandler` or a route's `errorHandler` option; most callers want
 * {@link installErrorRenderer}.
 */
export function createErrorHandler(
  renderer: ErrorRenderer = PROBLEM_RENDERER,
): (cause: unknown, request: FastifyRequest, reply: FastifyReply) => void {
  return (cause, request, reply) => {
    const error =
      renderer.read?.(cause, request, reply) ??
      notReceived(cause, request, reply) ??
      toHttpError(cause, request.method);
    if (error.status >= 500) request.log.error({ err: cause, code: error.code }, 'request failed');
    else request.log.info({ code: error.code, status: error.status }, error.message);
    if (reply.sent || reply.raw.headersSent) return;
    renderer.answered?.(error, request);
    answer(reply, error, renderer, cause);
  };
}

/**
 * The server's error handler: {@link createErrorHandler} with problem+json bodies. `createServer` sets it on
 * the whole app; a scope with its own renderer replaces it there.
 */
export const handleError = createErrorHandler();

/**
 * Answers the errors of `scope` (a Fastify plugin's instance: its routes and those of its children) with
 * `renderer`, through the edge's one handler ({@link createErrorHandler}). On a Breakwater server a scope
 * that keeps problem+json needs no call; a capability mounted on any Fastify app calls it so that its
 * routes answer the same there.
 */
export function installErrorRenderer(
  scope: FastifyInstance,
  renderer: ErrorRenderer = PROBLEM_RENDERER,
): void {
  scope.setErrorHandler(createErrorHandler(renderer));
}

/**
 * Answers with `error` as `application/problem+json` (RFC 9457, via core `toProblem`; `instance` is the
 * request path) and `Retry-After` in whole seconds when the error carries `retryAfterMs`. For routes and
 * hooks that answer an error themselves instead of throwing it (the graceful close's 503).
 */
export function sendProblem(reply: FastifyReply, error: BreakwaterError): FastifyReply {
  return answer(reply, error, PROBLEM_RENDERER, error);
}

/** The not-found handler: every unknown route (and method) is a `not_found` problem. */
export function handleNotFound(request: FastifyRequest, reply: FastifyReply): void {
  sendProblem(
    reply,
    new BreakwaterError('not_found', { message: `There is no route ${request.method} ${pathOf(request)}.` }),
  );
}

/**
 * Fastify's `frameworkErrors`: a malformed URL (`FST_ERR_BAD_URL`) or a failing route constraint, raised
 * before routing, answered as problem+json like everything else.
 */
export function handleFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
  sendProblem(
    reply,
    status < 500
      ? new BreakwaterError('invalid_payload', { status, message: 'The request URL is not valid.' })
      : new BreakwaterError('internal_error'),
  );
}

function answer(
  reply: FastifyReply,
  error: BreakwaterError,
  renderer: ErrorRenderer,
  cause: unknown,
): FastifyReply {
  const retryAfter = retryAfterHeader(error);
  if (retryAfter !== undefined) void reply.header('retry-after', retryAfter);
  void reply.code(error.status).header('content-type', `${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
  return reply.send(renderer.body(error, reply.request, reply, cause));
}

/**
 * The request timeout fired while the request itself was still arriving (a body sent too slowly): nothing ran,
 * so it is 408 `timeout`, safe to send again (RFC 9110, section 15.5.9), not the 504 of a request that may
 * have taken effect; and the half-read connection cannot carry another request, so it closes.
 */
function notReceived(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): BreakwaterError | undefined {
  if (!isRequestTimeout(error)) return undefined;
  // `complete` is Node's "the whole message was parsed"; an injected request (light-my-request) has none.
  if (request.raw.complete !== false) return undefined;
  void reply.header('connection', 'close');
  return requestNotReceived('server');
}
