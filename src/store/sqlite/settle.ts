import { storedJobError, type JobError, type JobEvent, type LeaseRef } from '../jobs.js';
import { notifyAvailable, type SqliteContext } from './context.js';
import type { AppendEvent, InsertEvent } from './events.js';
import type { NotifySuccessor } from './ordering.js';
import { toJson } from './rows.js';

/**
 * The end of a run: `complete`, `fail`, `finishCanceled` and `release`. Each writes the state change and its
 * event in one `BEGIN IMMEDIATE` transaction: `complete` and `fail` are steps of the group commit (`batch.ts`)
 * and run in the batch's, serializing the result or error before their first write; the other two are their
 * own.
 *
 * Every one is fenced the same way: the job must be `in_progress` with the caller's token. A worker that lost
 * its lease (reclaimed by another claim, which moved the token, or ended by cancel or expiry) matches nothing
 * and gets `undefined` / `false`, so it can never overwrite the run that replaced it. Lease expiry alone does
 * not fence: until another claim takes the job, the late run is still its only run and may settle it.
 * Leaving `in_progress` clears `lease_owner` and `lease_expires_at`; `lease_token` keeps growing.
 *
 * A job with an ordering key that ends (completed, failed, canceled) may unblock the next job of its key:
 * each end queues `job_available` for it (`NotifySuccessor`), so a worker waiting for it wakes at once. A
 * scheduled retry stays `pending` and keeps its successors blocked, so it announces nothing for them.
 */

/** The fenced read `fail` and `release` decide from. */
interface Leased {
  type: string;
  attempts: number;
  maxAttempts: number;
  cancelRequestedAt: number | null;
  orderingKey: string | null;
}

const LEASED_SQL = `SELECT type, attempts, max_attempts AS maxAttempts, cancel_requested_at AS cancelRequestedAt,
  ordering_key AS orderingKey
  FROM jobs WHERE id = ? AND lease_token = ? AND status = 'in_progress'`;

/**
 * Prepares `JobStore.complete`: `completed` with the result and `job.completed` `{ result }`. The fenced read
 * is the check: no row means a stale lease. `error` keeps the last failure, if an earlier attempt had
 * one.
 */
export function prepareComplete(
  ctx: SqliteContext,
  insertEvent: InsertEvent,
  notifySuccessor: NotifySuccessor,
): (lease: LeaseRef, result: unknown) => JobEvent | undefined {
  // The fenced read, then the UPDATE by rowid that takes the `job.completed` seq (see InsertEvent): cheaper
  // than one UPDATE ... RETURNING, which SQLite serves through a temporary table per statement.
  const leased = ctx.db
    .prepare<[string, number], [rowid: number, seq: number, orderingKey: string | null]>(
      `SELECT rowid, next_seq, ordering_key FROM jobs WHERE id = ? AND lease_token = ? AND status = 'in_progress'`,
    )
    .raw(true);
  const complete = ctx.db.prepare<[string | null, number, number, number]>(
    `UPDATE jobs SET status = 'completed', result = ?, lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?, updated_at = ?, next_seq = next_seq + 1
      WHERE rowid = ?`,
  );
  return (lease: LeaseRef, result: unknown) => {
    // Both serializations before the first write (batch.ts), the event's from the column's, so they agree.
    const resultJson = toJson(result);
    const eventJson = `{"result":${resultJson ?? 'null'}}`;
    const row = leased.get(lease.id, lease.token);
    if (row === undefined) return undefined;
    const now = ctx.clock.now();
    complete.run(resultJson, now, now, row[0]);
    notifySuccessor(row[2]);
    return insertEvent(
      lease.id,
      row[1],
      'job.completed',
      { result: result === undefined ? null : result },
      now,
      eventJson,
    );
  };
}

/**
 * Prepares `JobStore.fail`. With `retryAt` and attempts left: `pending` at `retryAt` with the error kept,
 * `job.retrying` `{ error, nextAttempt, runAt }`, and `job_available` so a worker sleeping until later wakes to
 * re-plan. Otherwise the dead letter: `failed`, `job.failed` `{ error, attempts }`.
 *
 * A job whose cancel was requested while this run was failing is not retried: it ends `canceled`
 * (`job.canceled` `{ attempts }`, the error kept), since a retry would run work the user asked to stop.
 */
export function prepareFail(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (lease: LeaseRef, error: JobError, retryAt?: number) => JobEvent | undefined {
  const { db } = ctx;
  const leased = db.prepare<[string, number], Leased>(LEASED_SQL);
  const retry = db.prepare<[string | null, number, number, string]>(
    `UPDATE jobs SET status = 'pending', error = ?, run_at = ?, lease_owner = NULL, lease_expires_at = NULL,
                     updated_at = ?
      WHERE id = ?`,
  );
  const end = db.prepare<[string, string | null, number, number, string]>(
    `UPDATE jobs SET status = ?, error = ?, lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?, updated_at = ?
      WHERE id = ?`,
  );
  return (lease: LeaseRef, error: JobError, retryAt?: number) => {
    // Every serialization before the first write (batch.ts); the events embed the column's text.
    const stored = storedJobError(error);
    const errorJson = toJson(stored);
    const errorText = errorJson ?? 'null';
    const job = leased.get(lease.id, lease.token);
    if (job === undefined) return undefined;
    const now = ctx.clock.now();
    const { attempts } = job;
    if (retryAt !== undefined && attempts < job.maxAttempts) {
      if (job.cancelRequestedAt !== null) {
        end.run('canceled', errorJson, now, now, lease.id);
        notifySuccessor(job.orderingKey);
        return appendEvent(lease.id, 'job.canceled', { attempts }, now, `{"attempts":${attempts}}`);
      }
      retry.run(errorJson, retryAt, now, lease.id);
      notifyAvailable(ctx, job.type, retryAt);
      return appendEvent(
        lease.id,
        'job.retrying',
        { error: stored, nextAttempt: attempts + 1, runAt: retryAt },
        now,
        `{"error":${errorText},"nextAttempt":${attempts + 1},"runAt":${JSON.stringify(retryAt)}}`,
      );
    }
    end.run('failed', errorJson, now, now, lease.id);
    notifySuccessor(job.orderingKey);
    return appendEvent(
      lease.id,
      'job.failed',
      { error: stored, attempts },
      now,
      `{"error":${errorText},"attempts":${attempts}}`,
    );
  };
}

/** Prepares `JobStore.finishCanceled`: `canceled` and `job.canceled` `{ attempts }`, fenced like the rest. */
export function prepareFinishCanceled(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (lease: LeaseRef) => JobEvent | undefined {
  const cancel = ctx.db.prepare<
    [number, number, string, number],
    { attempts: number; orderingKey: string | null }
  >(
    `UPDATE jobs SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?, updated_at = ?
      WHERE id = ? AND lease_token = ? AND status = 'in_progress'
      RETURNING attempts, ordering_key AS orderingKey`,
  );
  return ctx.db.transaction((lease: LeaseRef) => {
    const now = ctx.clock.now();
    const row = cancel.get(now, now, lease.id, lease.token);
    if (row === undefined) return undefined;
    notifySuccessor(row.orderingKey);
    return appendEvent(lease.id, 'job.canceled', { attempts: row.attempts }, now);
  }).immediate;
}

/**
 * Prepares `JobStore.release` (graceful shutdown): `pending` at `now` with `attempts - 1`, no event, and
 * `job_available` so another worker picks it up at once.
 *
 * A job whose cancel was requested is not handed back to run again: it ends `canceled` (`job.canceled`
 * `{ attempts }`, the released run not counted), as `finishCanceled` would.
 */
export function prepareRelease(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (lease: LeaseRef) => boolean {
  const { db } = ctx;
  const leased = db.prepare<[string, number], Leased>(LEASED_SQL);
  const release = db.prepare<[number, number, string]>(
    `UPDATE jobs SET status = 'pending', run_at = ?, attempts = attempts - 1, lease_owner = NULL,
                     lease_expires_at = NULL, updated_at = ?
      WHERE id = ?`,
  );
  const cancel = db.prepare<[number, number, string]>(
    `UPDATE jobs SET status = 'canceled', attempts = attempts - 1, lease_owner = NULL,
                     lease_expires_at = NULL, finished_at = ?, updated_at = ?
      WHERE id = ?`,
  );
  return db.transaction((lease: LeaseRef) => {
    const job = leased.get(lease.id, lease.token);
    if (job === undefined) return false;
    const now = ctx.clock.now();
    if (job.cancelRequestedAt !== null) {
      cancel.run(now, now, lease.id);
      appendEvent(lease.id, 'job.canceled', { attempts: job.attempts - 1 }, now);
      notifySuccessor(job.orderingKey);
    } else {
      release.run(now, now, lease.id);
      notifyAvailable(ctx, job.type, now);
    }
    return true;
  }).immediate;
}
