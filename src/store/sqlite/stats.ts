import type { JobStats } from '../jobs.js';
import type { SqliteContext } from './context.js';
import { FAILED_CANCELED } from './get.js';
import { notBlocked } from './ordering.js';

/**
 * Prepares `JobStore.stats`, read in one (deferred, read-only) transaction so the counts and the oldest age
 * come from the same snapshot.
 *
 * Counts: each status but `completed` is counted over the partial index that holds only its jobs (no table
 * rows read): `jobs_claim` (pending), `jobs_lease` (running), `jobs_failed_canceled`, `jobs_input_required`; `completed` is the rest
 * of `count(*)`, which SQLite answers by walking its smallest index. There is no index on every job's status:
 * it would be written three times in every job's life for this read (see migration 8). Oldest age: the
 * smallest `run_at` among due pending jobs, first entry of the `jobs_run_at` range, measured from `run_at`
 * (when the job became due, which for a retry is its retry time) rather than from `created_at`, so a job
 * scheduled for later or waiting out a backoff does not look stuck.
 */
export function prepareStats(ctx: SqliteContext): () => JobStats {
  const { db } = ctx;
  const counts = db
    .prepare<[], [number, number, number, number, number, number]>(
      `SELECT (SELECT count(*) FROM jobs),
            (SELECT count(*) FROM jobs INDEXED BY jobs_claim WHERE status = 'pending'),
            (SELECT count(*) FROM jobs INDEXED BY jobs_lease WHERE status = 'in_progress'),
            (SELECT count(*) FROM jobs INDEXED BY jobs_failed_canceled
              WHERE ${FAILED_CANCELED} AND status = 'failed'),
            (SELECT count(*) FROM jobs INDEXED BY jobs_failed_canceled
              WHERE ${FAILED_CANCELED} AND status = 'canceled'),
            (SELECT count(*) FROM jobs INDEXED BY jobs_input_required WHERE status = 'input_required')`,
    )
    .raw(true);
  const oldestDue = db.prepare<[number], { runAt: number }>(
    `SELECT run_at AS runAt FROM jobs INDEXED BY jobs_run_at
      WHERE status = 'pending' AND run_at <= ? ORDER BY run_at LIMIT 1`,
  );
  return db.transaction((): JobStats => {
    const now = ctx.clock.now();
    const [total, pending, inProgress, failed, canceled, inputRequired] = counts.get()!;
    const completed = total - pending - inProgress - failed - canceled - inputRequired;
    const stats: JobStats = {
      counts: {
        pending,
        in_progress: inProgress,
        input_required: inputRequired,
        completed,
        failed,
        canceled,
      },
      oldestPendingAgeMs: null,
    };
    const oldest = oldestDue.get(now);
    if (oldest !== undefined) stats.oldestPendingAgeMs = now - oldest.runAt;
    return stats;
  }).deferred;
}

/**
 * Prepares `JobStore.nextRunAt`: the earlier of the first pending `run_at` and the first in-progress
 * `lease_expires_at` (a lost worker's job is reclaimable then) among jobs of the given types (all when empty),
 * in one statement, so both come from one snapshot. Each half reads the first entry of an index range (with
 * types, the first entry of that walk whose type matches):
 * - pending: `jobs_run_at` (`run_at` of pending jobs), named with INDEXED BY since the ordering-key condition
 *   (below) would otherwise tempt the planner into `jobs_status_id` and a sort;
 * - leases: the small partial index `jobs_lease`, named with INDEXED BY. Without `ANALYZE` statistics (the
 *   store never gathers them) the planner would take `jobs_run_at` for the `status` equality and sort every
 *   running job; INDEXED BY pins the plan, and makes the statement fail to prepare rather than silently slow
 *   down should a later migration drop the index. The leases of `exclude` (the caller's own runs) are passed
 *   over on that walk: at most as many entries as the caller runs jobs.
 *
 * A pending job blocked by its ordering key is left out (the claim would pass it over): were it counted, a
 * worker would see work due now, claim nothing and look again at once, forever. Its blocker counts instead
 * (a pending one by its `run_at`, a running one by its lease), and its end announces the blocked job.
 */
export function prepareNextRunAt(
  ctx: SqliteContext,
): (types: readonly string[], exclude?: readonly string[]) => number | null {
  const sql = (filter: string, leaseFilter: string) =>
    `SELECT min(at) AS next FROM (
       SELECT at FROM (
         SELECT run_at AS at FROM jobs AS j INDEXED BY jobs_run_at
          WHERE status = 'pending' ${filter} AND ${notBlocked('j')}
          ORDER BY run_at LIMIT 1)
       UNION ALL
       SELECT at FROM (
         SELECT lease_expires_at AS at FROM jobs INDEXED BY jobs_lease
          WHERE status = 'in_progress' AND lease_expires_at IS NOT NULL ${filter} ${leaseFilter}
          ORDER BY lease_expires_at LIMIT 1))`;
  const TYPES = 'AND type IN (SELECT value FROM json_each(?))';
  const NOT_HELD = 'AND id NOT IN (SELECT value FROM json_each(?))';
  const all = ctx.db.prepare<[], { next: number | null }>(sql('', ''));
  // The JSON array of types is bound once per half.
  const ofTypes = ctx.db.prepare<[string, string], { next: number | null }>(sql(TYPES, ''));
  const allNotHeld = ctx.db.prepare<[string], { next: number | null }>(sql('', NOT_HELD));
  const ofTypesNotHeld = ctx.db.prepare<[string, string, string], { next: number | null }>(
    sql(TYPES, NOT_HELD),
  );
  return (types, exclude) => {
    const json = JSON.stringify(types);
    let row: { next: number | null } | undefined;
    if (exclude === undefined || exclude.length === 0) {
      row = types.length === 0 ? all.get() : ofTypes.get(json, json);
    } else {
      const held = JSON.stringify(exclude);
      row = types.length === 0 ? allNotHeld.get(held) : ofTypesNotHeld.get(json, json, held);
    }
    return row?.next ?? null;
  };
}
