/**
 * Errors of the AI gateway over HTTP, as the renderers the edge's one error handler answers with
 * (`installErrorRenderer`): `application/problem+json` (RFC 9457, via core `toProblem`) with one more
 * member, `error`, in the shape OpenAI-compatible clients read (`{ message, type, code, param }`), so the
 * official `openai` client's `APIError` carries our message and code. The edge sets the status and
 * `Retry-After` and logs; this adds the gateway's own headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BreakwaterError, isBreakwaterError, isRequestTimeout, toProblem } from '../../core/index.js';
import { pathOf, toHttpError, type ErrorRenderer } from '../../http/index.js';

/**
 * The gateway's own headers of an error answer (the edge sets `Retry-After`): for `rate_limited`,
 * `x-ratelimit-limit/remaining/reset`;
 * for our own limits, and for a failure after the gateway's own retries, `x-should-retry: false` (the official
 * OpenAI clients obey it: a client retrying our own refusal, or retries already made, only adds load); and
 * the step, provider, model and attempts when a step was tried; `Allow` on a 405.
 */
export function problemHeaders(error: BreakwaterError): Record<string, string> {
  const headers: Record<string, string> = {};
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
  // A 405's methods (RFC 9110, section 15.5.6: the response must carry Allow).
  if (error.status === 405 && typeof d.allow === 'string') headers['allow'] = d.allow;
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

/**
 * The completions route's errors (an {@link ErrorRenderer} for the edge's one handler): problem+json with
 * the OpenAI-shaped `error` member ({@link problemBody}) and {@link problemHeaders}. A failure is read by
 * {@link toAiError}, except a request timeout while the body was still arriving, which the edge answers
 * 408 `timeout` with `Connection: close` (nothing ran; send it again).
 */
export const AI_ERRORS: ErrorRenderer = Object.freeze({
  read: (cause: unknown, request: FastifyRequest) =>
    isRequestTimeout(cause) && request.raw.complete === false ? undefined : toAiError(cause),
  body: aiBody,
});

/**
 * The routes admin API's errors: the same bodies and headers as {@link AI_ERRORS}; a request timeout is
 * the edge's (a write's outcome is unknown, so 504 `outcome_unknown`), a body Fastify refused is
 * `reason: 'invalid_body'`.
 */
export const AI_ADMIN_ERRORS: ErrorRenderer = Object.freeze({
  read: (cause: unknown) => (isRequestTimeout(cause) ? undefined : toAiError(cause)),
  body: aiBody,
});

function aiBody(error: BreakwaterError, request: FastifyRequest, reply: FastifyReply): unknown {
  void reply.headers(problemHeaders(error));
  return problemBody(error, pathOf(request));
}

/**
 * Any failure as the BreakwaterError the client gets: ours as they are; the host server's request timeout
 * (Fastify's `FST_ERR_HANDLER_TIMEOUT`, which `createServer` raises too) as 504 `timeout`, retryable, since a
 * completion has no effect beyond its cost (the same reason the gateway retries provider calls); anything
 * else as the edge reads it (`toHttpError`: Fastify's client errors, malformed JSON, a body over the limit,
 * an unsupported Content-Type, with their status; `internal_error` with its message hidden), and a refused
 * body (`invalid_payload` without a reason) as `reason: 'invalid_body'`, the OpenAI-style `error.code`.
 */
export function toAiError(error: unknown): BreakwaterError {
  if (isBreakwaterError(error)) return error;
  if (isRequestTimeout(error)) {
    return new BreakwaterError('timeout', {
      message: 'The answer did not come within the server request timeout; try again, or ask for less.',
      source: 'ai-gateway',
    });
  }
  const mapped = toHttpError(error, 'POST');
  if (mapped.code !== 'invalid_payload' || mapped.details?.reason !== undefined) return mapped;
  return new BreakwaterError('invalid_payload', {
    status: mapped.status,
    message: mapped.message,
    details: { ...mapped.details, reason: 'invalid_body' },
  });
}
