import type Database from 'better-sqlite3';
import { newId } from '../../core/index.js';
import type { NewJob } from '../jobs.js';
import {
  checkDelivery,
  inboxListLimit,
  resolveInboxJob,
  type InboxDelivery,
  type InboxFilter,
  type InboxJob,
  type InboxRecord,
} from '../webhooks.js';
import type { SqliteContext } from './context.js';
import type { InsertJob } from './enqueue.js';
import { toJson } from './rows.js';

/** The `webhook_inbox` columns under {@link InboxRecord}'s property names: a row read with them is a record. */
const INBOX_COLUMNS = `id, source, event_id AS eventId, event_type AS eventType, received_at AS receivedAt,
  occurred_at AS occurredAt, body, job_id AS jobId, replays`;

/** An accept with everything decided before the write: the ids and the job (see `InboxJob`). */
export interface PreparedAccept {
  delivery: InboxDelivery;
  inboxId: string;
  jobId: string;
  job: NewJob;
  /** The job's payload as stored (serialized here, so the batch's step cannot fail on it after writing). */
  payloadJson: string | null;
}

/**
 * Decides an accept before it is queued: checks the delivery (copying it, since the caller may reuse its object
 * before the batch runs), makes the ids and builds the job, so a bad one rejects at once and user code never
 * runs inside the batch's transaction.
 * @throws as `WebhookInboxStore.acceptWebhook` documents.
 */
export function prepareAccept(delivery: InboxDelivery, job: InboxJob): PreparedAccept {
  const d = checkDelivery(delivery);
  const inboxId = newId('whk');
  const newJob = resolveInboxJob(job, inboxId);
  return {
    delivery: {
      source: d.source,
      eventId: d.eventId,
      eventType: d.eventType,
      receivedAt: d.receivedAt,
      occurredAt: d.occurredAt,
      body: d.body,
    },
    inboxId,
    jobId: newId('job'),
    job: newJob,
    payloadJson: toJson(newJob.payload),
  };
}

/**
 * Prepares `WebhookInboxStore.acceptWebhook`'s write, a step of the group commit (`batch.ts`) run inside the
 * batch's transaction: one fsync acknowledges a burst of deliveries, and each promise settles only after the
 * commit that holds it. The job was checked and its payload serialized by {@link prepareAccept}, so once the
 * delivery row is written nothing of the input can fail the job's insert (a failure after the first write
 * would roll the whole batch back).
 *
 * Insert first: `ON CONFLICT (source, event_id) DO NOTHING` lets the unique constraint decide, and only a new
 * delivery inserts its job (tagged with its source for the backlog count), so a duplicate writes nothing. The
 * job row follows the delivery row that points at it; the foreign key is deferred to the commit for that. Two
 * accepts of one event in one batch run one after the other, so the second finds the first's row.
 */
export function prepareAcceptWebhook(
  ctx: SqliteContext,
  insertJob: InsertJob,
): (accept: PreparedAccept) => { duplicate: boolean; record: InboxRecord } {
  // No RETURNING: a new row is exactly the delivery as prepared (replays 0), and reading it back, the body
  // included, cost as much as the insert (the same measurement as enqueue's, see enqueue.ts).
  const insert = ctx.db.prepare<[string, string, string, string, number, number | null, string, string]>(
    `INSERT INTO webhook_inbox (id, source, event_id, event_type, received_at, occurred_at, body, job_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (source, event_id) DO NOTHING`,
  );
  const select = prepareGetWebhook(ctx);
  return ({ delivery: d, inboxId, jobId, job, payloadJson }: PreparedAccept) => {
    const { changes } = insert.run(
      inboxId,
      d.source,
      d.eventId,
      d.eventType,
      d.receivedAt,
      d.occurredAt,
      d.body,
      jobId,
    );
    if (changes === 0) return { duplicate: true, record: select(d.source, d.eventId)! };
    if (!insertJob(jobId, job, payloadJson, d.source, ctx.clock.now())) {
      // Only an idempotency key can refuse a job row, and resolveInboxJob refuses jobs that have one.
      throw new Error('SQLite webhook inbox: the job of the delivery was not inserted');
    }
    // `d` is prepareAccept's own copy of the delivery, with exactly the inbox's fields.
    return { duplicate: false, record: { id: inboxId, ...d, jobId, replays: 0 } };
  };
}

/** Prepares `getWebhook`: one lookup of the `(source, event_id)` unique index. */
export function prepareGetWebhook(
  ctx: SqliteContext,
): (source: string, eventId: string) => InboxRecord | undefined {
  const select = ctx.db.prepare<[string, string], InboxRecord>(
    `SELECT ${INBOX_COLUMNS} FROM webhook_inbox WHERE source = ? AND event_id = ?`,
  );
  return (source, eventId) => select.get(source, eventId);
}

/**
 * Prepares `listWebhooks`: newest first, keyset-paginated by `beforeId`. One statement per filter shape, each
 * prepared once, so the `(source, id)` index (or the primary key) serves both the filter and the order.
 */
export function prepareListWebhooks(ctx: SqliteContext): (filter?: InboxFilter) => InboxRecord[] {
  const statements = new Map<string, Database.Statement<(string | number)[], InboxRecord>>();
  return (filter = {}) => {
    const limit = inboxListLimit(filter.limit);
    if (limit === 0) return [];
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.source !== undefined) {
      where.push('source = ?');
      params.push(filter.source);
    }
    if (filter.beforeId !== undefined) {
      where.push('id < ?');
      params.push(filter.beforeId);
    }
    params.push(limit);
    const sql = `SELECT ${INBOX_COLUMNS} FROM webhook_inbox
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id DESC
      LIMIT ?`;
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = ctx.db.prepare<(string | number)[], InboxRecord>(sql);
      statements.set(sql, statement);
    }
    return statement.all(...params);
  };
}

/**
 * Prepares `webhookBacklog`: a count over `jobs_inbox_backlog`, the partial index of unfinished inbox jobs,
 * read for `source` only (the index entries, no table rows). INDEXED BY pins that plan.
 */
export function prepareWebhookBacklog(ctx: SqliteContext): (source: string) => number {
  const count = ctx.db.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM jobs INDEXED BY jobs_inbox_backlog
      WHERE inbox_source = ? AND status IN ('pending', 'in_progress')`,
  );
  return (source) => count.get(source)!.n;
}

/**
 * Prepares `replayWebhook`'s write, one `BEGIN IMMEDIATE` transaction: the record pointed at the new job with
 * `replays + 1`, then the job (tagged with the source; the foreign key waits for the commit). The record's id
 * was looked up, and the job built from it, before; should the record be gone by now, nothing is written.
 */
export function prepareReplayWebhook(
  ctx: SqliteContext,
  insertJob: InsertJob,
): (inboxId: string, jobId: string, job: NewJob) => InboxRecord | undefined {
  const point = ctx.db.prepare<[string, string], InboxRecord>(
    `UPDATE webhook_inbox SET job_id = ?, replays = replays + 1 WHERE id = ? RETURNING ${INBOX_COLUMNS}`,
  );
  return ctx.db.transaction((inboxId: string, jobId: string, job: NewJob) => {
    const record = point.get(jobId, inboxId);
    if (record === undefined) return undefined;
    if (!insertJob(jobId, job, toJson(job.payload), record.source, ctx.clock.now())) {
      throw new Error('SQLite webhook inbox: the job of the replay was not inserted');
    }
    return record;
  }).immediate;
}
