import { storedJobError, type JobError, type JobEvent, type LeaseRef } from '../jobs.js';
import { json, ms, type Db, query } from './db.js';
import { toEvent, type EventRow } from './rows.js';

/**
 * The ends of a run: complete, fail (retry or dead letter), finish canceled, release. Each is one statement
 * whose WHERE clause is the fencing check (`in_progress` under the caller's token): a run that lost its
 * lease matches no row and changes nothing. The UPDATE takes the row lock and the event's seq from
 * `next_seq`; the INSERT of the event reads the UPDATE's RETURNING, so state and event commit together or
 * not at all. Leaving `in_progress` clears the lease owner and expiry; the token stays, as the fence for
 * later claims.
 */

/** `in_progress` → `completed` with `result`; writes `job.completed` `{ result }`. */
export async function complete(db: Db, lease: LeaseRef, result: unknown): Promise<JobEvent | undefined> {
  const now = ms(db.clock.now());
  const inserted = await query<EventRow>(
    db.pool,
    `WITH done AS (
       UPDATE ${db.jobs}
       SET status = 'completed', result = $4::jsonb, lease_owner = NULL, lease_expires_at = NULL,
           next_seq = next_seq + 1, updated_at = $3, finished_at = $3
       WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
       RETURNING id, next_seq - 1 AS seq
     )
     INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
     SELECT id, seq, 'job.completed', $3, jsonb_build_object('result', $4::jsonb) FROM done
     RETURNING *`,
    [lease.id, lease.token, now, json(result)],
  );
  const row = inserted.rows[0];
  return row === undefined ? undefined : toEvent(row);
}

/**
 * Ends a failed run, storing `error`. With `retryAt` and attempts left (`attempts < max_attempts`, decided
 * in SQL on the locked row): back to `pending` at `retryAt`, `job.retrying` `{ error, nextAttempt, runAt }`
 * (the `jobs_available_on_update` trigger notifies `job_available`). Otherwise `failed`, the dead letter:
 * `job.failed` `{ error, attempts }`.
 */
export async function fail(
  db: Db,
  lease: LeaseRef,
  error: JobError,
  retryAt?: number,
): Promise<JobEvent | undefined> {
  const now = ms(db.clock.now());
  // In SET, column references read the row before the update, so every CASE sees the same decision.
  const inserted = await query<EventRow>(
    db.pool,
    `WITH settled AS (
       UPDATE ${db.jobs}
       SET status = CASE WHEN cancel_requested_at IS NOT NULL THEN 'canceled'
                         WHEN $5::bigint IS NOT NULL AND attempts < max_attempts THEN 'pending'
                         ELSE 'failed' END,
           run_at = CASE WHEN cancel_requested_at IS NULL AND $5::bigint IS NOT NULL AND attempts < max_attempts
                         THEN $5::bigint ELSE run_at END,
           finished_at = CASE WHEN cancel_requested_at IS NULL AND $5::bigint IS NOT NULL AND attempts < max_attempts
                              THEN NULL ELSE $3::bigint END,
           error = $4::jsonb, lease_owner = NULL, lease_expires_at = NULL,
           next_seq = next_seq + 1, updated_at = $3
       WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
       RETURNING id, status, attempts, run_at, next_seq - 1 AS seq
     )
     INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
     SELECT id, seq,
            CASE status WHEN 'pending' THEN 'job.retrying' WHEN 'canceled' THEN 'job.canceled' ELSE 'job.failed' END,
            $3,
            CASE status
              WHEN 'pending' THEN jsonb_build_object('error', $4::jsonb, 'nextAttempt', attempts + 1, 'runAt', run_at)
              WHEN 'canceled' THEN jsonb_build_object('attempts', attempts)
              ELSE jsonb_build_object('error', $4::jsonb, 'attempts', attempts)
            END
     FROM settled
     RETURNING *`,
    [lease.id, lease.token, now, json(storedJobError(error)), retryAt === undefined ? null : ms(retryAt)],
  );
  const row = inserted.rows[0];
  return row === undefined ? undefined : toEvent(row);
}

/** Ends a run stopped by a cancel request: `canceled`, `job.canceled` `{ attempts }`. */
export async function finishCanceled(db: Db, lease: LeaseRef): Promise<JobEvent | undefined> {
  const now = ms(db.clock.now());
  const inserted = await query<EventRow>(
    db.pool,
    `WITH done AS (
       UPDATE ${db.jobs}
       SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL,
           next_seq = next_seq + 1, updated_at = $3, finished_at = $3
       WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
       RETURNING id, attempts, next_seq - 1 AS seq
     )
     INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
     SELECT id, seq, 'job.canceled', $3, jsonb_build_object('attempts', attempts) FROM done
     RETURNING *`,
    [lease.id, lease.token, now],
  );
  const row = inserted.rows[0];
  return row === undefined ? undefined : toEvent(row);
}

/**
 * Gives a lease back without counting the run (graceful shutdown): `pending`, `run_at = now`,
 * `attempts - 1`, no event. The `jobs_available_on_update` trigger notifies `job_available`, so another
 * worker picks it up at once.
 */
export async function release(db: Db, lease: LeaseRef): Promise<boolean> {
  const now = ms(db.clock.now());
  // The run is not counted (attempts - 1). A job whose cancel was requested is not handed back to run
  // again: it ends `canceled` with its `job.canceled` event, in the same statement, so the cancel is kept.
  const result = await query<{ released: string }>(
    db.pool,
    `WITH released AS (
       UPDATE ${db.jobs}
       SET status = CASE WHEN cancel_requested_at IS NULL THEN 'pending' ELSE 'canceled' END,
           run_at = CASE WHEN cancel_requested_at IS NULL THEN $3::bigint ELSE run_at END,
           finished_at = CASE WHEN cancel_requested_at IS NULL THEN finished_at ELSE $3::bigint END,
           next_seq = CASE WHEN cancel_requested_at IS NULL THEN next_seq ELSE next_seq + 1 END,
           attempts = GREATEST(attempts - 1, 0),
           lease_owner = NULL, lease_expires_at = NULL, updated_at = $3
       WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
       RETURNING id, status, attempts, next_seq - 1 AS seq
     ), canceled AS (
       INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
       SELECT id, seq, 'job.canceled', $3, jsonb_build_object('attempts', attempts)
       FROM released WHERE status = 'canceled'
     )
     SELECT count(*) AS released FROM released`,
    [lease.id, lease.token, now],
  );
  return Number(result.rows[0]?.released ?? 0) === 1;
}
