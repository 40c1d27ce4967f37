import { randomUUID } from 'node:crypto';
import { NON_NEGATIVE, finite } from '../../core/index.js';
import { WATCH_PRUNE_AFTER_MS } from '../jobs.js';
import { ms, type Db } from './db.js';

/**
 * Registers a watcher of `jobId`'s events, so that the `job_events_notify` trigger announces them
 * (migration 8: only watched jobs' events are notified). Returns the watcher id (for {@link unwatchEvents}),
 * or undefined when there is no such job.
 *
 * The job row is read `FOR SHARE`: a transaction writing an event of the job updates that row (its
 * `next_seq`), so the watch waits for one in flight to commit, and one that starts later waits for the
 * watch's commit and its trigger sees the watcher. A reader that reads the events after this resolves
 * therefore sees every event either stored or announced: none falls between.
 */
export async function watchEvents(db: Db, jobId: string): Promise<string | undefined> {
  const watcher = randomUUID();
  const result = await db.pool.query(
    `INSERT INTO ${db.watchers} (job_id, watcher, created_at)
     SELECT id, $2, $3 FROM ${db.jobs} WHERE id = $1 FOR SHARE`,
    [jobId, watcher, ms(db.clock.now())],
  );
  return result.rowCount === 1 ? watcher : undefined;
}

/** Removes the watchers `[jobId, watcher][]` (one statement); unknown ones are ignored. */
export async function unwatchEvents(db: Db, watches: readonly (readonly [string, string])[]): Promise<void> {
  if (watches.length === 0) return;
  await db.pool.query(
    `DELETE FROM ${db.watchers} WHERE (job_id, watcher) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [watches.map((w) => w[0]), watches.map((w) => w[1])],
  );
}

/**
 * `JobStore.pruneWatches`: deletes the watchers registered before `now - olderThanMs` whose job has ended or
 * is gone (one statement; the primary key leads with `job_id`, so each row's job is one index probe). A
 * watcher of a running or pending job is kept, even a dead process's: the job's end makes it prunable.
 */
export async function pruneWatches(db: Db, olderThanMs = WATCH_PRUNE_AFTER_MS): Promise<number> {
  const age = finite('pruneWatches', 'olderThanMs', olderThanMs, NON_NEGATIVE);
  const result = await db.pool.query(
    `DELETE FROM ${db.watchers} AS w
      WHERE w.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM ${db.jobs} AS j
                         WHERE j.id = w.job_id AND j.status IN ('pending', 'in_progress'))`,
    [ms(db.clock.now() - age)],
  );
  return result.rowCount ?? 0;
}
