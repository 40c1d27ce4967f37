/**
 * How a failed run is written: the error the job keeps and, when it may be retried, when. Kept apart from
 * `run.ts`, which decides that a run failed.
 */
import { classify, isBreakwaterError, type Classification } from '../core/index.js';
import type { Backoff } from '../policy/index.js';
import type { JobError } from '../store/index.js';

/** Longest stored error message, in characters. */
const MAX_ERROR_MESSAGE = 1_000;

/** What {@link failureOf} needs of the job type. */
export interface RetryRules {
  backoff: Backoff;
  /** Longest carried wait a retry waits out, ms (see `DefineJobOptions.maxRetryWaitMs`). */
  maxRetryWaitMs: number;
}

/** What a failed run writes: its error, and when the next attempt runs (undefined: the dead letter). */
export interface FailurePlan {
  error: JobError;
  /** Ms since the epoch on the runtime's clock, or undefined when the job must not be retried. */
  runAt: number | undefined;
}

/**
 * The stored error of a run that failed at `now` with `cause`, and when its next attempt runs.
 *
 * The wait the failure carried (`classify(cause).retryAfterMs`: a BreakwaterError's `retryAfterMs`, such as
 * an open breaker's remaining open time or a limit's reset, or a thrown `Response`'s `Retry-After`) is kept
 * as `error.retryAt = now + ceil(retryAfterMs)`, whatever happens next, so a dead letter still says when to
 * come back.
 *
 * No retry (`runAt` undefined) when the failure is not `retryable` (permanent, fatal, our own rate/spend
 * limits, an unknown outcome of a write: docs/architecture.md#classification), when no attempts are left, or
 * when the carried wait is longer than `maxRetryWaitMs`: the job ends now with the wait reported rather than
 * sitting parked past it. Otherwise the next attempt runs at `max(now + ceil(backoff.next(attempts, 0)),
 * retryAt)`: never inside the wait, so attempts are not spent against an open breaker or a dependency's
 * `Retry-After`.
 */
export function failureOf(
  cause: unknown,
  attempts: number,
  maxAttempts: number,
  rules: RetryRules,
  now: number,
): FailurePlan {
  const c = classifyRunFailure(cause, now);
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
  const waitMs = c.retryAfterMs !== undefined && Number.isFinite(c.retryAfterMs) ? c.retryAfterMs : 0;
  if (waitMs > 0) error.retryAt = now + Math.ceil(waitMs);
  if (!c.retryable || attempts >= maxAttempts || waitMs > rules.maxRetryWaitMs) {
    return { error, runAt: undefined };
  }
  const planned = rules.backoff.next(attempts, 0);
  const backoffAt = now + Math.ceil(Number.isFinite(planned) && planned > 0 ? planned : 0);
  return { error, runAt: Math.max(backoffAt, error.retryAt ?? backoffAt) };
}

/**
 * How the runtime reads a run's failure: core's `classify`, except that an error nothing recognizes (a plain
 * `Error`, a thrown string) is `handler_failed` (transient, so retried per the job's attempts and backoff)
 * rather than `upstream_unavailable`: it came from the handler's own code, and naming a dependency would send
 * the operator looking in the wrong place. `now`: ms since the epoch, to read an HTTP-date `Retry-After`.
 */
export function classifyRunFailure(cause: unknown, now?: number): Classification {
  return classify(cause, { nowMs: now, unclassified: 'handler_failed' });
}

/**
 * The message as stored: at most {@link MAX_ERROR_MESSAGE} characters, and a time-relative hint ("try again
 * in about 30 seconds") made general ("try again shortly"): the message is read long after it was written
 * (`get_job_status`, the dashboard, `jobs show`), when the count would be wrong. Readers put back what is left
 * of the wait from `retryAt` (`error-view.ts`).
 */
function messageOf(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(
    /try again in about \d+ (?:seconds?|minutes?)/g,
    'try again shortly',
  );
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE - 1)}…` : text;
}
