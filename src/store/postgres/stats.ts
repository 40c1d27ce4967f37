import type { JobStats, JobStatus } from '../jobs.js';
import { ms, type Db, query } from './db.js';
import { notBlocked } from './ordering.js';

/**
 * Counts by status and the age of the oldest due pending job, in one pass over `jobs` with aggregate
 * FILTERs. The age counts from `run_at` (when the job became due, not when it was enqueued): a job scheduled
 * for later is not late, and one waiting past its time is a stuck-queue signal. Null when nothing is due.
 */
export async function stats(db: Db): Promise<JobStats> {
  const now = ms(db.clock.now());
  const result = await query<Record<JobStatus, number> & { oldest_due: number | null }>(
    db.pool,
    `SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
            count(*) FILTER (WHERE status = 'in_progress') AS in_progress,
            count(*) FILTER (WHERE status = 'input_required') AS input_required,
            count(*) FILTER (WHERE status = 'completed') AS completed,
            count(*) FILTER (WHERE status = 'failed') AS failed,
            count(*) FILTER (WHERE status = 'canceled') AS canceled,
            min(run_at) FILTER (WHERE status = 'pending' AND run_at <= $1) AS oldest_due
     FROM ${db.jobs}`,
    [now],
  );
  const row = result.rows[0]!;
  return {
    counts: {
      pending: row.pending,
      in_progress: row.in_progress,
      input_required: row.input_required,
      completed: row.completed,
      failed: row.failed,
      canceled: row.canceled,
    },
    oldestPendingAgeMs: row.oldest_due === null ? null : now - row.oldest_due,
  };
}

/**
 * When a claim of `types` (every type when empty) could next find work, or null: the earlier of the first
 * pending `run_at` and the first in-progress `lease_expires_at` (a lost worker's job is reclaimable then), in
 * one statement, so both come from one snapshot. LEAST skips a null side. Each min() is the first entry of a
 * partial index (with types, the first of the walk whose type matches): `jobs_pending_run_at` and
 * `jobs_leases`.
 *
 * A pending job blocked by its ordering key is left out (the claim would pass it over): were it counted, a
 * worker would see work due now, claim nothing and look again at once, forever. Its blocker counts instead,
 * and its end announces the blocked job (`jobs_ordering_successor`). For the same reason the leases of
 * `exclude` (the caller's own runs, which its claim leaves alone) are left out.
 */
export async function nextRunAt(
  db: Db,
  types: readonly string[],
  exclude: readonly string[] = [],
): Promise<number | null> {
  const ofTypes = '(cardinality($1::text[]) = 0 OR type = ANY ($1::text[]))';
  const result = await query<{ next: number | null }>(
    db.pool,
    `SELECT LEAST(
       (SELECT min(run_at) FROM ${db.jobs} j
         WHERE status = 'pending' AND ${ofTypes} AND ${notBlocked(db.jobs, 'j')}),
       (SELECT min(lease_expires_at) FROM ${db.jobs}
         WHERE status = 'in_progress' AND ${ofTypes} AND NOT (id = ANY ($2::text[])))
     ) AS next`,
    [[...types], [...exclude]],
  );
  return result.rows[0]?.next ?? null;
}
