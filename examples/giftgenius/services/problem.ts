import type { FastifyReply } from 'fastify';

/** The media type of an RFC 9457 problem details document. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The problem details body every GiftGenius service answers errors with (RFC 9457): `type` is
 * `https://giftgenius.example/problems/<code>`, `code` a stable snake_case machine code, `detail` a sentence
 * about this occurrence. Extra members (for example `idempotency_key`) may follow.
 */
export interface ServiceProblem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  [extension: string]: unknown;
}

const TITLES: Readonly<Record<string, string>> = {
  invalid_request: 'Invalid request',
  not_found: 'Not found',
  product_not_found: 'Product not found',
  order_not_found: 'Order not found',
  payment_intent_not_found: 'Payment intent not found',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  idempotency_key_missing: 'Idempotency key missing',
  idempotency_key_mismatch: 'Idempotency key reused with a different request',
  idempotency_in_progress: 'A request with this idempotency key is in progress',
  service_unavailable: 'Service unavailable',
  internal_error: 'Internal error',
  rate_limited: 'Too many requests',
  bad_gateway: 'Bad gateway',
  gateway_timeout: 'Gateway timeout',
  request_refused: 'Request refused',
  server_error: 'Server error',
};

/**
 * A failure a route throws to answer with problem details; the service's error handler turns it into the
 * response. `extensions` become extra members of the body.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly extensions: Readonly<Record<string, unknown>> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

/** The problem details body for `status`/`code`/`detail` plus `extensions`. */
export function problemBody(
  status: number,
  code: string,
  detail: string,
  extensions: Readonly<Record<string, unknown>> = {},
): ServiceProblem {
  const body: ServiceProblem = {
    type: `https://giftgenius.example/problems/${code}`,
    title: TITLES[code] ?? 'Error',
    status,
    code,
    detail,
  };
  // Extension members never overwrite the standard ones (RFC 9457, section 3.2).
  for (const [key, value] of Object.entries(extensions)) if (!(key in body)) body[key] = value;
  return body;
}

/** Answers `reply` with problem details (status, `application/problem+json`). */
export function sendProblem(
  reply: FastifyReply,
  status: number,
  code: string,
  detail: string,
  extensions: Readonly<Record<string, unknown>> = {},
): FastifyReply {
  return reply
    .code(status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(problemBody(status, code, detail, extensions)));
}

/** 400 `invalid_request` naming what is wrong with the input. */
export function invalid(detail: string): HttpProblem {
  return new HttpProblem(400, 'invalid_request', detail);
}

/** The request body as a plain object, or a 400 when it is anything else (an array, a string, null). */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

/** A required string field, trimmed, of 1..`maxLength` characters. */
export function requiredString(body: Record<string, unknown>, field: string, maxLength = 200): string {
  const value = body[field];
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalid(`${field} is required and must be a non-empty string.`);
  }
  if (value.length > maxLength) throw invalid(`${field} must be at most ${maxLength} characters.`);
  return value.trim();
}

/** An optional string field (absent or null → undefined), trimmed, of 1..`maxLength` characters. */
export function optionalString(
  body: Record<string, unknown>,
  field: string,
  maxLength = 200,
): string | undefined {
  if (body[field] === undefined || body[field] === null) return undefined;
  return requiredString(body, field, maxLength);
}

/** A required integer field in `min..max`. */
export function integerField(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${field} must be an integer from ${min} to ${max}.`);
  }
  return value;
}

/**
 * A required amount in US dollars: a finite number above 0 and at most `max`; with `wholeCents`, also at most
 * two decimals (a charge), without it any precision (a budget).
 */
export function usdField(
  value: unknown,
  field: string,
  { max = 1_000_000, wholeCents = false } = {},
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max) {
    throw invalid(`${field} must be a number of US dollars above 0 and at most ${max}.`);
  }
  if (wholeCents && Math.abs(value * 100 - Math.round(value * 100)) > 1e-6) {
    throw invalid(`${field} must have at most two decimals (whole cents).`);
  }
  return value;
}
