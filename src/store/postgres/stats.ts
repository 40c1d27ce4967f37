import type { JobStats, JobStatus } from '../jobs.js';
import { ms, type Db } from './db.js';

/**
 * Counts by status and the age of the oldest due pending job, in one pass over `jobs` with aggregate
 * FILTERs. The age counts from `run_at` (when the job became due, not when it was enqueued): a job scheduled
 * for later is not late, and one waiting past its time is a stuck-queue signal. Null when nothing is due.
 */
export async function stats(db: Db): Promise<JobStats> {
  const now = ms(db.clock.now());
  const result = await db.pool.query<Record<JobStatus, number> & { oldest_due: number | null }>(
    `SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
            count(*) FILTER (WHERE status = 'in_progress') AS in_progress,
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
      completed: row.completed,
      failed: row.failed,
      canceled: row.canceled,
    },
    oldestPendingAgeMs: row.oldest_due === null ? null : now - row.oldest_due,
  };
}

/**
 * The earliest `run_at` among pending jobs of `types` (every type when empty), or null: when a worker with
 * nothing to claim should look again. Served by the `jobs_pending` partial index.
 */
export async function nextRunAt(db: Db, types: readonly string[]): Promise<number | null> {
  const result = await db.pool.query<{ next: number | null }>(
    `SELECT min(run_at) AS next FROM ${db.jobs}
     WHERE status = 'pending' AND (cardinality($1::text[]) = 0 OR type = ANY ($1::text[]))`,
    [[...types]],
  );
  return result.rows[0]?.next ?? null;
}
