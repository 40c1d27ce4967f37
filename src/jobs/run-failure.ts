/**
 * How a failed run is written: the error the job keeps and, when it may be retried, when. Kept apart from
 * `run.ts`, which decides that a run failed.
 */
import { classify, isBreakwaterError } from '../core/index.js';
import type { Backoff } from '../policy/index.js';
import type { JobError } from '../store/index.js';

/** Longest stored error message, in characters. */
const MAX_ERROR_MESSAGE = 1_000;

/** A retry hint (`Retry-After`) is honoured up to one hour: a larger one would park the job for good. */
const MAX_RETRY_HINT_MS = 3_600_000;

/**
 * The stored error of a run that failed with `cause`, and the delay before its next attempt in ms, or
 * undefined when it must not be retried: not `retryable` (permanent, fatal, our own rate/spend limits, an
 * unknown outcome of a write: DESIGN "Classification") or no attempts left. The delay is the type's backoff
 * for this attempt, or the failure's `retryAfterMs` (capped at one hour) when larger, rounded up to a ms.
 */
export function failureOf(
  cause: unknown,
  attempts: number,
  maxAttempts: number,
  backoff: Backoff,
): { error: JobError; retryInMs: number | undefined } {
  const c = classify(cause);
  const error: JobError = {
    code: isBreakwaterError(cause) ? cause.code : c.code,
    message: messageOf(cause),
    kind: c.kind,
  };
  if (isBreakwaterError(cause)) {
    error.userFacing = true;
    const dependencyCode = cause.details?.['dependency_code'];
    if (typeof dependencyCode === 'string') error.dependencyCode = dependencyCode;
    if (cause.outcome === 'unknown') error.outcome = 'unknown';
  }
  if (!c.retryable || attempts >= maxAttempts) return { error, retryInMs: undefined };
  const planned = backoff.next(attempts, 0);
  const hintMs = Math.min(c.retryAfterMs ?? 0, MAX_RETRY_HINT_MS);
  const delayMs = Math.max(Number.isFinite(planned) && planned > 0 ? planned : 0, hintMs);
  return { error, retryInMs: Math.ceil(delayMs) };
}

/**
 * The message as stored: at most {@link MAX_ERROR_MESSAGE} characters, and a time-relative hint ("try again
 * in about 30 seconds") made general ("try again shortly"): the message is read long after it was written
 * (`get_job_status`, the dashboard, `jobs show`), when the count would be wrong.
 */
function messageOf(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(
    /try again in about \d+ (?:seconds?|minutes?)/g,
    'try again shortly',
  );
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE - 1)}…` : text;
}
