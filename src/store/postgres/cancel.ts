import type { JobRecord } from '../jobs.js';
import { ms, withTransaction, type Db } from './db.js';
import { toJob, type JobRow } from './rows.js';

/**
 * Cancels a job and returns it after the step (undefined when it does not exist), in one transaction:
 * - `pending` or `input_required` (no worker holds it) → `canceled` at once, with `job.canceled` `{ attempts }`;
 * - `in_progress` → `cancel_requested_at` set (the first request's time is kept); the `jobs_cancel_requested`
 *   trigger notifies `cancel_requested`, and the worker holding the lease finishes it on its next heartbeat
 *   (or, if its lease expires first, the next claim makes it `canceled`);
 * - terminal → unchanged.
 *
 * The row is read FOR UPDATE first, because what to do depends on its status and the outcome must hold
 * against a concurrent claim or settle: with the lock, a claim's SKIP LOCKED passes the job over and a
 * settle waits, then finds the new state. (A single UPDATE could not tell its caller which branch it took,
 * since RETURNING shows only the new row.)
 */
export async function cancel(db: Db, id: string): Promise<JobRecord | undefined> {
  const now = ms(db.clock.now());
  return withTransaction(db.pool, async (client) => {
    const locked = await client.query<JobRow>(`SELECT * FROM ${db.jobs} WHERE id = $1 FOR UPDATE`, [id]);
    const job = locked.rows[0];
    if (job === undefined) return undefined;

    if (job.status === 'pending' || job.status === 'input_required') {
      // The UPDATE takes the seq; the INSERT writes the event from its RETURNING; the outer SELECT returns
      // the row as updated (a CTE's RETURNING is the only place the new row is visible in this statement).
      const canceled = await client.query<JobRow>(
        `WITH done AS (
           UPDATE ${db.jobs}
           SET status = 'canceled', next_seq = next_seq + 1, updated_at = $2, finished_at = $2
           WHERE id = $1
           RETURNING *
         ),
         written AS (
           INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
           SELECT id, next_seq - 1, 'job.canceled', $2, jsonb_build_object('attempts', attempts) FROM done
         )
         SELECT * FROM done`,
        [id, now],
      );
      return toJob(canceled.rows[0]!);
    }

    if (job.status === 'in_progress') {
      // The first request's time stays when cancel is called again; the trigger notifies every time.
      const requested = await client.query<JobRow>(
        `UPDATE ${db.jobs} SET cancel_requested_at = COALESCE(cancel_requested_at, $2), updated_at = $2
         WHERE id = $1
         RETURNING *`,
        [id, now],
      );
      return toJob(requested.rows[0]!);
    }

    // Terminal: nothing changes.
    return toJob(job);
  });
}

/**
 * A `failed` job (the dead letter) back to `pending` with `attempts = 0` and `run_at = now`; the
 * `jobs_available_on_update` trigger notifies `job_available`. The last error stays (it is why the job was
 * retried by hand); a stale cancel request is dropped, or it would abort the new run at once. Returns the job
 * after the step with `retried: true`; the job unchanged with `retried: false` when it is not `failed`;
 * undefined when it does not exist.
 *
 * Like {@link cancel}, the row is read FOR UPDATE first, in one transaction: the answer must be the row the
 * decision was made on. A single `UPDATE … WHERE status = 'failed'` with a fallback SELECT could not give
 * that: an UPDATE that waited on a concurrent change (another retry) and then matched nothing leaves the
 * fallback reading the statement's older snapshot, a job still `failed` next to `retried: false`. FOR UPDATE
 * waits the same way but then returns the row as committed.
 */
export async function retryFailed(
  db: Db,
  id: string,
): Promise<{ job: JobRecord; retried: boolean } | undefined> {
  const now = ms(db.clock.now());
  return withTransaction(db.pool, async (client) => {
    const locked = await client.query<JobRow>(`SELECT * FROM ${db.jobs} WHERE id = $1 FOR UPDATE`, [id]);
    const job = locked.rows[0];
    if (job === undefined) return undefined;
    if (job.status !== 'failed') return { job: toJob(job), retried: false };
    const retried = await client.query<JobRow>(
      `UPDATE ${db.jobs}
       SET status = 'pending', attempts = 0, run_at = $2, cancel_requested_at = NULL,
           finished_at = NULL, updated_at = $2
       WHERE id = $1
       RETURNING *`,
      [id, now],
    );
    return { job: toJob(retried.rows[0]!), retried: true };
  });
}
