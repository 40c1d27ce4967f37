import { BreakwaterError, ERROR_CODES, isBreakwaterError } from './errors.js';

/** The media type of an RFC 9457 problem details document. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * An RFC 9457 problem details document with Breakwater's extension members.
 * `type` is a stable URN per code (`urn:breakwater:error:<code>`); `retry_after_ms` (ms) and `outcome` are
 * always present so a client never has to guess; `operation_id` only when the failure belongs to one.
 */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  retryable: boolean;
  retry_after_ms: number | null;
  outcome: 'failed' | 'unknown';
  instance?: string;
  operation_id?: string;
  [extension: string]: unknown;
}

/**
 * Members an extension (`details`) may never set: RFC 9457's standard members and Breakwater's own. An absent
 * `instance` or `operation_id` stays absent rather than being filled in from `details`.
 */
const RESERVED_MEMBERS: ReadonlySet<string> = new Set([
  'type',
  'title',
  'status',
  'detail',
  'instance',
  'code',
  'retryable',
  'retry_after_ms',
  'outcome',
  'operation_id',
]);

/**
 * Serializes any thrown value as problem details (RFC 9457, section 3). A non-Breakwater error becomes
 * `canceled` (an `AbortError`), `timeout` (a `TimeoutError`) or `internal_error` (500); the detail never
 * leaks the original message or stack.
 *
 * @param error what was thrown
 * @param instance optional URI reference naming this occurrence (for example the request path)
 */
export function toProblem(error: unknown, instance?: string): ProblemDetails {
  const err = isBreakwaterError(error) ? error : fromForeign(error);
  const problem: ProblemDetails = {
    type: `urn:breakwater:error:${err.code}`,
    title: ERROR_CODES[err.code].title,
    status: err.status,
    detail: err.message,
    code: err.code,
    // After an unknown outcome a blind resend may repeat the effect: reconcile first
    // (docs/architecture.md#outcomes).
    retryable: err.kind === 'transient' && err.outcome === 'failed',
    retry_after_ms: err.retryAfterMs ?? null,
    outcome: err.outcome,
  };
  if (instance !== undefined) problem.instance = instance;
  if (err.operationId !== undefined) problem.operation_id = err.operationId;
  if (err.details !== undefined) {
    for (const [key, value] of Object.entries(err.details)) {
      // Extension members must not overwrite the standard ones (RFC 9457, section 3.2).
      // defineProperty, so a `__proto__` key from parsed JSON stays a plain member.
      if (!RESERVED_MEMBERS.has(key)) {
        Object.defineProperty(problem, key, { value, enumerable: true, writable: true, configurable: true });
      }
    }
  }
  return problem;
}

/**
 * The HTTP `Retry-After` header value for an error (whole seconds, rounded up, RFC 9110 section 10.2.3),
 * or `undefined` when the error carries no (finite) retry hint.
 */
export function retryAfterHeader(error: BreakwaterError): string | undefined {
  if (error.retryAfterMs === undefined || !Number.isFinite(error.retryAfterMs)) return undefined;
  return String(Math.max(0, Math.ceil(error.retryAfterMs / 1000)));
}

/**
 * A non-Breakwater failure as the client may see it: a caller's abort (`AbortError`) is `canceled` and an
 * `AbortSignal.timeout()` firing (`TimeoutError`) is `timeout`; anything else is `internal_error`, whose
 * detail never repeats the original message.
 */
function fromForeign(error: unknown): BreakwaterError {
  const name = error instanceof Error || error instanceof DOMException ? error.name : undefined;
  if (name === 'AbortError') return new BreakwaterError('canceled');
  if (name === 'TimeoutError') return new BreakwaterError('timeout');
  return new BreakwaterError('internal_error');
}
