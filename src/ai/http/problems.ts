/**
 * Errors of the AI gateway over HTTP: `application/problem+json` (RFC 9457, via core `toProblem`) with one
 * more member, `error`, in the shape OpenAI-compatible clients read (`{ message, type, code, param }`), so
 * the official `openai` client's `APIError` carries our message and code. ai/ cannot import server/, so this
 * answers on its own, like webhooks/routes.ts.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  PROBLEM_CONTENT_TYPE,
  isBreakwaterError,
  isRequestTimeout,
  requestNotReceived,
  retryAfterHeader,
  toProblem,
} from '../../core/index.js';
import { pathOf } from '../../http/index.js';

export { pathOf };

/**
 * The headers of an error answer: `Retry-After`; for `rate_limited`, `x-ratelimit-limit/remaining/reset`;
 * for our own limits, and for a failure after the gateway's own retries, `x-should-retry: false` (the official
 * OpenAI clients obey it: a client retrying our own refusal, or retries already made, only adds load); and
 * the step, provider, model and attempts when a step was tried.
 */
export function problemHeaders(error: BreakwaterError): Record<string, string> {
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterHeader(error);
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  const d = error.details ?? {};
  if (error.code === 'rate_limited' || error.code === 'spend_limited') headers['x-should-retry'] = 'false';
  // The gateway has retried already (its own policy, `x-breakwater-max-attempts`): a client retrying on top
  // would multiply the calls to a failing provider (3 attempts × 3 tries of the OpenAI SDK's defaults = 9).
  else if (typeof d.attempts === 'number' && d.attempts > 1) headers['x-should-retry'] = 'false';
  if (error.code === 'rate_limited' && typeof d.limit === 'number') {
    headers['x-ratelimit-limit'] = String(d.limit);
    headers['x-ratelimit-remaining'] = String(Math.max(0, Number(d.remaining ?? 0)));
    headers['x-ratelimit-reset'] = String(Math.ceil(Number(d.reset_ms ?? 0) / 1000));
  }
  if (typeof d.step === 'string') headers['x-breakwater-step'] = d.step;
  if (typeof d.provider === 'string') headers['x-breakwater-provider'] = d.provider;
  if (typeof d.model === 'string') headers['x-breakwater-model'] = d.model;
  if (typeof d.attempts === 'number') headers['x-breakwater-attempts'] = String(d.attempts);
  return headers;
}

/** The problem document with its OpenAI-shaped `error` member. */
export function problemBody(error: BreakwaterError, instance: string): Record<string, unknown> {
  const problem = toProblem(error, instance);
  const d = error.details ?? {};
  const reason = typeof d.reason === 'string' ? d.reason : error.code;
  const param = typeof d.header === 'string' ? d.header : typeof d.field === 'string' ? d.field : null;
  return { ...problem, error: { message: problem.detail, type: problem.code, code: reason, param } };
}

/** Answers `error` as problem+json with {@link problemHeaders}. */
export function sendAiProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  error: BreakwaterError,
  extraHeaders: Record<string, string> = {},
): FastifyReply {
  return reply
    .code(error.status)
    .headers({ ...extraHeaders, ...problemHeaders(error) })
    .header('content-type', `${PROBLEM_CONTENT_TYPE}; charset=utf-8`)
    .send(problemBody(error, pathOf(request)));
}

/**
 * The host server's request timeout (Fastify's `FST_ERR_HANDLER_TIMEOUT`, which `createServer` raises too)
 * as the AI route answers it: a body still arriving never ran, so 408 `timeout` with `Connection: close`
 * (send it again); otherwise 504 `timeout`, retryable, since a completion has no effect beyond its cost (the
 * same reason the gateway retries provider calls). Undefined for any other error.
 */
export function inboundTimeout(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): BreakwaterError | undefined {
  if (!isRequestTimeout(error)) return undefined;
  if (request.raw.complete === false) {
    void reply.header('connection', 'close');
    return requestNotReceived('ai-gateway');
  }
  return new BreakwaterError('timeout', {
    message: 'The answer did not come within the server request timeout; try again, or ask for less.',
    source: 'ai-gateway',
  });
}

/**
 * Any failure as the BreakwaterError the client gets: ours as they are; Fastify's client errors (malformed
 * JSON, a body over the limit, an unsupported Content-Type) with their status; anything else
 * `internal_error` (its message is not shown).
 */
export function toAiError(error: unknown): BreakwaterError {
  if (isBreakwaterError(error)) return error;
  const fst = error as Partial<FastifyError> | null;
  const status = typeof fst?.statusCode === 'number' ? fst.statusCode : 500;
  if (status === 413) return new BreakwaterError('payload_too_large');
  if (status >= 400 && status < 500) {
    const own = typeof fst?.code === 'string' && fst.code.startsWith('FST_');
    return new BreakwaterError('invalid_payload', {
      status,
      ...(own && typeof fst?.message === 'string' ? { message: fst.message } : {}),
      details: { reason: 'invalid_body' },
    });
  }
  return new BreakwaterError('internal_error');
}
