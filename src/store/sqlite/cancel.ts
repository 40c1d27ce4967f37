import type { JobRecord } from '../jobs.js';
import { notifyAvailable, notifyCancelRequested, type SqliteContext } from './context.js';
import type { AppendEvent } from './events.js';
import type { NotifySuccessor } from './ordering.js';
import { JOB_COLUMNS, prepareJobRows, toJobRecord } from './rows.js';

/**
 * Prepares `JobStore.cancel`, one `BEGIN IMMEDIATE` transaction that reads the status and acts on it (the
 * write lock held from the start means no claim can slip in between):
 * - `pending` or `input_required` (no worker holds it): `canceled` at once, `job.canceled` `{ attempts }`.
 * - `in_progress`: only `cancel_requested_at` is set (the first request's time is kept) and
 *   `cancel_requested` is notified; the worker sees the request on its next heartbeat and finishes the job.
 *   A lease that expires first ends `canceled` at the next claim.
 * - terminal: unchanged.
 */
export function prepareCancel(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (id: string) => JobRecord | undefined {
  const { db } = ctx;
  const select = prepareJobRows<[string]>(db, `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`);
  const cancelPending = prepareJobRows<[number, number, string]>(
    db,
    `UPDATE jobs SET status = 'canceled', finished_at = ?, updated_at = ?
      WHERE id = ?
      RETURNING ${JOB_COLUMNS}`,
  );
  const requestCancel = prepareJobRows<[number, number, string]>(
    db,
    `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, ?), updated_at = ?
      WHERE id = ?
      RETURNING ${JOB_COLUMNS}`,
  );
  return db.transaction((id: string) => {
    const row = select.get(id);
    if (row === undefined) return undefined;
    const current = toJobRecord(row);
    const now = ctx.clock.now();
    switch (current.status) {
      case 'pending':
      case 'input_required': {
        const job = toJobRecord(cancelPending.get(now, now, id)!);
        appendEvent(id, 'job.canceled', { attempts: job.attempts }, now);
        // The next job of its ordering key no longer waits for it.
        notifySuccessor(job.orderingKey);
        return job;
      }
      case 'in_progress': {
        const job = toJobRecord(requestCancel.get(now, now, id)!);
        notifyCancelRequested(ctx, id);
        return job;
      }
      default:
        return current;
    }
  }).immediate;
}

/**
 * Prepares `JobStore.retryFailed`: a dead-lettered (`failed`) job back to `pending` with `attempts = 0` and
 * `runAt = now`, and `job_available` (`retried: true`). The last error is kept (it is why the job is being
 * retried); the finish time and any old cancel request are cleared. The contract names no event for this step,
 * so none is written; the next claim's `job.started` continues the job's seq. Any other status: the job
 * unchanged (`retried: false`).
 *
 * The status condition sits in the UPDATE itself, so it is one fenced statement; the read after it (in the same
 * write transaction) serves the "unchanged" and "missing" answers.
 */
export function prepareRetryFailed(
  ctx: SqliteContext,
): (id: string) => { job: JobRecord; retried: boolean } | undefined {
  const { db } = ctx;
  const retry = prepareJobRows<[number, number, string]>(
    db,
    `UPDATE jobs SET status = 'pending', attempts = 0, run_at = ?, finished_at = NULL,
                     cancel_requested_at = NULL, updated_at = ?
      WHERE id = ? AND status = 'failed'
      RETURNING ${JOB_COLUMNS}`,
  );
  const select = prepareJobRows<[string]>(db, `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`);
  return db.transaction((id: string) => {
    const now = ctx.clock.now();
    const row = retry.get(now, now, id);
    if (row === undefined) {
      const current = select.get(id);
      return current === undefined ? undefined : { job: toJobRecord(current), retried: false };
    }
    const job = toJobRecord(row);
    notifyAvailable(ctx, job.type, now);
    return { job, retried: true };
  }).immediate;
}
