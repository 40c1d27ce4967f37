import { notifyAvailable, type SqliteContext } from './context.js';

/**
 * Ordering keys (`NewJob.orderingKey`): one entity's jobs run one at a time, in id (creation) order.
 *
 * {@link notBlocked} is the SQL condition that a pending job `j` may be claimed: it has no key, or no job of
 * its key that was created before it is unfinished, and none of its key is running. Claim and nextRunAt use
 * the same condition, so a worker never wakes for a job it cannot claim (a spin). Each half is one probe of a
 * partial index that holds only unfinished keyed jobs (`jobs_ordering`, `jobs_ordering_running`), named with
 * INDEXED BY so the plan cannot drift to a scan of the whole table.
 *
 * A blocked job costs the claim that walks past it one probe; a key with a long backlog is walked past on
 * every claim, which is the price of keeping the claim order otherwise unchanged.
 */
export function notBlocked(alias: string): string {
  return `(${alias}.ordering_key IS NULL OR (
       NOT EXISTS (SELECT 1 FROM jobs AS ahead INDEXED BY jobs_ordering
                    WHERE ahead.ordering_key = ${alias}.ordering_key AND ahead.id < ${alias}.id
                      AND ahead.status IN ('pending', 'in_progress'))
   AND NOT EXISTS (SELECT 1 FROM jobs AS running INDEXED BY jobs_ordering_running
                    WHERE running.ordering_key = ${alias}.ordering_key AND running.status = 'in_progress')))`;
}

/**
 * Queues `job_available` for the job whose turn it may now be, after a job of `orderingKey` finished inside
 * the caller's transaction (completed, failed, canceled). Without it, a successor of another type, or one a
 * worker's `nextRunAt` left out as blocked, would wait for the worker's safety-net poll.
 */
export type NotifySuccessor = (orderingKey: string | null) => void;

/** Prepares {@link NotifySuccessor}: the oldest unfinished job of the key, if it is pending, is announced. */
export function prepareNotifySuccessor(ctx: SqliteContext): NotifySuccessor {
  const next = ctx.db.prepare<[string], { type: string; status: string; runAt: number }>(
    `SELECT type, status, run_at AS runAt FROM jobs INDEXED BY jobs_ordering
      WHERE ordering_key = ? AND status IN ('pending', 'in_progress')
      ORDER BY id
      LIMIT 1`,
  );
  return (orderingKey) => {
    // Only a listener can use the hint; without one, skip the lookup.
    if (orderingKey === null || !ctx.notifications.hasListeners) return;
    const job = next.get(orderingKey);
    if (job !== undefined && job.status === 'pending') notifyAvailable(ctx, job.type, job.runAt);
  };
}
