import type { JobStats, JobStatus } from '../jobs.js';
import type { SqliteContext } from './context.js';

/**
 * Prepares `JobStore.stats`, read in one (deferred, read-only) transaction so the counts and the oldest age
 * come from the same snapshot.
 *
 * Counts: one GROUP BY over the `status` prefix of an index (no table rows read). Oldest age: the smallest
 * `run_at` among due pending jobs, first entry of the `jobs_run_at` range, measured from `run_at` (when the job
 * became due, which for a retry is its retry time) rather than from `created_at`, so a job scheduled for later
 * or waiting out a backoff does not look stuck.
 */
export function prepareStats(ctx: SqliteContext): () => JobStats {
  const { db } = ctx;
  const counts = db.prepare<[], { status: JobStatus; n: number }>(
    'SELECT status, count(*) AS n FROM jobs GROUP BY status',
  );
  const oldestDue = db.prepare<[number], { runAt: number }>(
    `SELECT run_at AS runAt FROM jobs WHERE status = 'pending' AND run_at <= ? ORDER BY run_at LIMIT 1`,
  );
  return db.transaction((): JobStats => {
    const now = ctx.clock.now();
    const stats: JobStats = {
      counts: { pending: 0, in_progress: 0, completed: 0, failed: 0, canceled: 0 },
      oldestPendingAgeMs: null,
    };
    for (const row of counts.all()) stats.counts[row.status] = row.n;
    const oldest = oldestDue.get(now);
    if (oldest !== undefined) stats.oldestPendingAgeMs = now - oldest.runAt;
    return stats;
  }).deferred;
}

/**
 * Prepares `JobStore.nextRunAt`: the earliest `run_at` among pending jobs of the given types (all when empty),
 * the first entry of the `jobs_run_at` range (with types, the first of that walk whose type matches). Leases
 * in progress are not considered: the contract asks for pending jobs only.
 */
export function prepareNextRunAt(ctx: SqliteContext): (types: readonly string[]) => number | null {
  const sql = (filter: string) =>
    `SELECT run_at AS runAt FROM jobs WHERE status = 'pending' ${filter} ORDER BY run_at LIMIT 1`;
  const all = ctx.db.prepare<[], { runAt: number }>(sql(''));
  const ofTypes = ctx.db.prepare<[string], { runAt: number }>(
    sql('AND type IN (SELECT value FROM json_each(?))'),
  );
  return (types) => {
    const row = types.length === 0 ? all.get() : ofTypes.get(JSON.stringify(types));
    return row === undefined ? null : row.runAt;
  };
}
