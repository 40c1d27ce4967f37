/**
 * A stored job error as a reader tells it, at the time it is read: what is left of the wait the failure
 * carried, and the message with that wait. Shared by every reader (`GET /jobs/:id`, the SSE `job.failed` and
 * `job.retrying` events, MCP `get_job_status` and `tasks/result`), so they all say the same.
 */
import { withRetryHint } from '../core/index.js';
import type { JobError } from '../store/index.js';

/**
 * What is left of the wait a job's failure carried, in whole ms at `now` (the reader's clock, ms since the
 * epoch): `max(0, ceil(retryAt - now))`, 0 once the wait is over, and null when no wait was known (no
 * `retryAt`, or no error).
 */
export function retryAfterMsOf(
  error: Pick<JobError, 'retryAt'> | null | undefined,
  now: number,
): number | null {
  const retryAt = error?.retryAt;
  if (typeof retryAt !== 'number' || !Number.isFinite(retryAt)) return null;
  return Math.max(0, Math.ceil(retryAt - now));
}

/**
 * The stored message with what is left of the wait: the runtime stores "try again shortly" in place of the
 * count it was written with (`run-failure.ts`), and this puts back "try again in about N seconds" for the
 * wait left at `now`, worded and rounded as core's `sentenceFor` does. Once the wait is over, or when none
 * was known, or the message has no "try again shortly" to replace, the stored message is returned as it is.
 */
export function jobErrorMessage(error: Pick<JobError, 'message' | 'retryAt'>, now: number): string {
  return withRetryHint(error.message, retryAfterMsOf(error, now));
}
