import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  SIZE_KINDS,
  SIZE_TABLES,
  createRetention,
  type FinishedStatus,
  type JobsBatch,
  type RetentionBackend,
  type RetentionStore,
  type StoreSize,
} from '../retention.js';
import { byLimit } from './limit.js';
import type { SqliteRunner } from './runner.js';

/**
 * The jobs a batch removes: finished ones of one status, oldest `finished_at` first, walked along the partial
 * index `jobs_finished` (migration 11; named with INDEXED BY so the plan cannot drift to a scan, and the
 * statement fails to prepare should the index go), from where the previous batch stopped. A job its delivery
 * points at (the `webhook_inbox_job` probe) qualifies only once the inbox cutoff passed too, and is removed
 * with that delivery: the inbox row's foreign key would refuse the job alone.
 */
const JOBS_WALK = `FROM jobs j INDEXED BY jobs_finished
  LEFT JOIN webhook_inbox w ON w.job_id = j.id
 WHERE j.status = @status AND j.finished_at >= @from AND j.finished_at < @cutoff
   AND (w.id IS NULL OR j.finished_at < @inboxCutoff)`;

type JobsWalkArgs = { status: FinishedStatus; from: number; cutoff: number; inboxCutoff: number };

/**
 * `store.retention` on SQLite. Each batch is one `runner.write`: it commits the group-committed work queued
 * before it, then runs alone as one `BEGIN IMMEDIATE` transaction of at most `limit` rows of its kind; the
 * driver yields a turn of the event loop between batches, so queued hot writes wait for one batch at most.
 * Counts are reads. Every walk follows an index on its age column, oldest first.
 */
export function createSqliteRetention(runner: SqliteRunner): RetentionStore {
  const { db, clock } = runner.ctx;
  // Absolute now: the process may change directory later.
  const path = db.name === ':memory:' ? db.name : resolve(db.name);
  const jobsWalk = byLimit((limit) =>
    db.prepare<[JobsWalkArgs], { id: string; finishedAt: number; inboxId: string | null }>(
      `SELECT j.id AS id, j.finished_at AS finishedAt, w.id AS inboxId ${JOBS_WALK}
        ORDER BY j.finished_at LIMIT ${limit}`,
    ),
  );
  const countJobs = db.prepare<[JobsWalkArgs], { jobs: number; jobEvents: number; webhookInbox: number }>(
    // next_seq - 1 is the number of events a job wrote: seqs are gapless from 1, and events leave only with
    // their job.
    `SELECT count(*) AS jobs, ifnull(sum(j.next_seq - 1), 0) AS jobEvents, count(w.id) AS webhookInbox
     ${JOBS_WALK}`,
  );
  const deleteEvents = db.prepare<[string]>('DELETE FROM job_events WHERE job_id = ?');
  const deleteDelivery = db.prepare<[string]>('DELETE FROM webhook_inbox WHERE id = ?');
  const deleteJob = db.prepare<[string]>('DELETE FROM jobs WHERE id = ?');
  const jobsBatch = db.transaction((args: JobsWalkArgs, limit: number): JobsBatch => {
    const batch: JobsBatch = { jobs: 0, jobEvents: 0, webhookInbox: 0, lastFinishedAt: null };
    for (const row of jobsWalk(limit).all(args)) {
      batch.jobEvents += deleteEvents.run(row.id).changes;
      if (row.inboxId !== null) batch.webhookInbox += deleteDelivery.run(row.inboxId).changes;
      batch.jobs += deleteJob.run(row.id).changes;
      batch.lastFinishedAt = row.finishedAt;
    }
    return batch;
  }).immediate;

  // stream_events is WITHOUT ROWID: rows are picked by their primary key, along stream_events_created_at.
  const streamEvents = byLimit((limit) =>
    db.prepare<[number]>(
      `DELETE FROM stream_events WHERE (stream_key, seq) IN (
         SELECT stream_key, seq FROM stream_events INDEXED BY stream_events_created_at
          WHERE created_at < ? ORDER BY created_at LIMIT ${limit})`,
    ),
  );
  // A stream is kept while it has events, whatever its updated_at says (as pruneStreamEvents does).
  const emptyStreams = byLimit((limit) =>
    db.prepare<[number]>(
      `DELETE FROM streams WHERE stream_key IN (
         SELECT stream_key FROM streams INDEXED BY streams_updated_at
          WHERE updated_at < ?
            AND NOT EXISTS (SELECT 1 FROM stream_events e WHERE e.stream_key = streams.stream_key)
          ORDER BY updated_at LIMIT ${limit})`,
    ),
  );
  const countStreamEvents = db
    .prepare<[number], number>('SELECT count(*) FROM stream_events WHERE created_at < ?')
    .pluck();
  const idempotency = byLimit((limit) =>
    db.prepare<[number]>(
      `DELETE FROM idempotency_records WHERE rowid IN (
         SELECT rowid FROM idempotency_records INDEXED BY idempotency_records_expires_at
          WHERE expires_at <= ? ORDER BY expires_at LIMIT ${limit})`,
    ),
  );
  const countIdempotency = db
    .prepare<[number], number>('SELECT count(*) FROM idempotency_records WHERE expires_at <= ?')
    .pluck();
  // settled_at is set once, when an operation becomes succeeded or failed, and never changes after: the
  // partial index operations_settled (migration 11) holds exactly the settled ones. The state test is the
  // rule itself, restated.
  const SETTLED = `settled_at < ? AND (state = 'succeeded' OR state = 'failed')`;
  const operations = byLimit((limit) =>
    db.prepare<[number]>(
      `DELETE FROM operations WHERE rowid IN (
         SELECT rowid FROM operations INDEXED BY operations_settled
          WHERE ${SETTLED} ORDER BY settled_at LIMIT ${limit})`,
    ),
  );
  const countOperations = db
    .prepare<[number], number>(
      `SELECT count(*) FROM operations INDEXED BY operations_settled WHERE ${SETTLED}`,
    )
    .pluck();
  const counts = db
    .prepare<[], number[]>(
      `SELECT ${SIZE_KINDS.map((kind) => `(SELECT count(*) FROM ${SIZE_TABLES[kind]})`).join(', ')}`,
    )
    .raw(true);
  const pageBytes = db
    .prepare<[], number>('SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()')
    .pluck();

  const delete1 =
    <A extends unknown[]>(statement: { run(...args: A): { changes: number } }) =>
    (...args: A) =>
      statement.run(...args).changes;
  const backend: RetentionBackend = {
    jobsBatch: (status, cutoff, inboxCutoff, from, limit) =>
      runner.write(jobsBatch, { status, cutoff, inboxCutoff, from }, limit),
    countJobs: (status, cutoff, inboxCutoff) =>
      runner.read(() => countJobs.get({ status, cutoff, inboxCutoff, from: Number.MIN_SAFE_INTEGER })!),
    streamEventsBatch: (cutoff, limit) => runner.write(delete1(streamEvents(limit)), cutoff),
    emptyStreamsBatch: (cutoff, limit) => runner.write(delete1(emptyStreams(limit)), cutoff),
    countStreamEvents: (cutoff) => runner.read(() => countStreamEvents.get(cutoff)!),
    idempotencyBatch: (now, limit) => runner.write(delete1(idempotency(limit)), now),
    countIdempotency: (now) => runner.read(() => countIdempotency.get(now)!),
    operationsBatch: (cutoff, limit) => runner.write(delete1(operations(limit)), cutoff),
    countOperations: (cutoff) => runner.read(() => countOperations.get(cutoff)!),
    size: () =>
      runner.read((): StoreSize => {
        const values = counts.get()!;
        const rows = Object.fromEntries(SIZE_KINDS.map((kind, i) => [kind, values[i]!])) as StoreSize['rows'];
        return { measuredAt: clock.now(), rows, bytes: fileBytes(path, pageBytes.get()!) };
      }),
  };
  // The runner refuses every call once the store is closed; nothing more to guard.
  return createRetention(backend, clock, (fn) => fn());
}

/**
 * The database file and its log as they are on disk; for `:memory:` (or a file not there yet), the pages
 * the database holds.
 */
function fileBytes(path: string, pages: number): number {
  if (path === ':memory:') return pages;
  const size = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  return (size(path) || pages) + size(`${path}-wal`);
}
