import type pg from 'pg';
import { newId, type Clock } from '../../core/index.js';
import type { NewJob } from '../jobs.js';
import {
  checkDelivery,
  inboxListLimit,
  isInboxKey,
  resolveInboxJob,
  type InboxDelivery,
  type InboxFilter,
  type InboxJob,
  type InboxRecord,
} from '../webhooks.js';
import { json, ms, query } from './db.js';

/** What the inbox operations need: the pool, the quoted `jobs` and `webhook_inbox` tables, the clock. */
export interface InboxDb {
  readonly pool: pg.Pool;
  readonly jobs: string;
  readonly inbox: string;
  readonly clock: Clock;
}

/** A `webhook_inbox` row (`SELECT *`); BIGINT already a number, bytea a Buffer. */
interface InboxRow {
  id: string;
  source: string;
  event_id: string;
  event_type: string;
  received_at: number;
  occurred_at: number | null;
  body: Buffer;
  job_id: string;
  replays: number;
}

function toRecord(row: InboxRow): InboxRecord {
  return {
    id: row.id,
    source: row.source,
    eventId: row.event_id,
    eventType: row.event_type,
    receivedAt: row.received_at,
    occurredAt: row.occurred_at,
    body: row.body.toString('utf8'),
    jobId: row.job_id,
    replays: row.replays,
  };
}

/**
 * The job row of a delivery, as a CTE body selecting from `source_rel` (one row: insert the job; none:
 * nothing). Parameters from `$first`: id, type, payload, max_attempts, run_at, priority, ordering_key,
 * timeout_ms, inbox_source, now, owner. The `jobs_available_on_insert` trigger notifies `job_available` on commit.
 */
function insertJobSql(db: InboxDb, sourceRel: string, first: number): string {
  const p = (i: number) => `$${first + i}`;
  return `INSERT INTO ${db.jobs} (id, type, status, payload, max_attempts, run_at, priority, ordering_key,
                                  timeout_ms, inbox_source, created_at, updated_at, owner)
     SELECT ${p(0)}, ${p(1)}, 'pending', ${p(2)}::jsonb, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)},
            ${p(9)}::bigint, ${p(9)}::bigint, ${p(10)}
       FROM ${sourceRel}
     RETURNING id`;
}

function jobParams(jobId: string, job: NewJob, source: string, now: number): unknown[] {
  return [
    jobId,
    job.type,
    json(job.payload),
    job.maxAttempts,
    ms(job.runAt),
    job.priority,
    job.orderingKey ?? null,
    job.timeoutMs === undefined ? null : ms(job.timeoutMs),
    source,
    now,
    job.owner ?? null,
  ];
}

/**
 * `acceptWebhook`: one statement. The delivery's INSERT … ON CONFLICT (source, event_id) DO NOTHING lets the
 * unique constraint decide among any number of concurrent accepts of one event (the losers wait for the
 * winner's commit, then insert nothing); the job's INSERT selects from its RETURNING, so only a new delivery
 * enqueues a job, in the same transaction. The foreign key from the delivery to its job is checked at the end
 * of the statement, when both rows are there. A duplicate then reads the stored row in a second statement
 * (the first one's snapshot cannot see a row committed by a concurrent accept).
 */
export async function acceptWebhook(
  db: InboxDb,
  delivery: InboxDelivery,
  job: InboxJob,
): Promise<{ duplicate: boolean; record: InboxRecord }> {
  const d = checkDelivery(delivery);
  const inboxId = newId('whk');
  const jobId = newId('job');
  const newJob = resolveInboxJob(job, inboxId);
  const now = ms(db.clock.now());
  const inserted = await query<InboxRow>(
    db.pool,
    `WITH delivery AS (
       INSERT INTO ${db.inbox} (id, source, event_id, event_type, received_at, occurred_at, body, job_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (source, event_id) DO NOTHING
       RETURNING *
     ),
     job AS (${insertJobSql(db, 'delivery', 9)})
     SELECT * FROM delivery`,
    [
      inboxId,
      d.source,
      d.eventId,
      d.eventType,
      ms(d.receivedAt),
      d.occurredAt === null ? null : ms(d.occurredAt),
      Buffer.from(d.body, 'utf8'),
      jobId,
      ...jobParams(jobId, newJob, d.source, now),
    ],
  );
  const row = inserted.rows[0];
  if (row !== undefined) return { duplicate: false, record: toRecord(row) };
  const existing = await getWebhook(db, d.source, d.eventId);
  if (existing === undefined) {
    throw new Error(`PostgresJobStore: delivery ${d.source}/${d.eventId} conflicted but cannot be found`);
  }
  return { duplicate: true, record: existing };
}

/** `getWebhook`: one lookup of the `(source, event_id)` unique index. */
export async function getWebhook(
  db: InboxDb,
  source: string,
  eventId: string,
): Promise<InboxRecord | undefined> {
  if (!isInboxKey(source) || !isInboxKey(eventId)) return undefined;
  const result = await query<InboxRow>(
    db.pool,
    `SELECT * FROM ${db.inbox} WHERE source = $1 AND event_id = $2`,
    [source, eventId],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : toRecord(row);
}

/** `listWebhooks`: newest first, keyset by `beforeId`, through `webhook_inbox_source_id` or the primary key. */
export async function listWebhooks(db: InboxDb, filter: InboxFilter = {}): Promise<InboxRecord[]> {
  const limit = inboxListLimit(filter.limit);
  if (limit === 0) return [];
  const values: unknown[] = [];
  const where: string[] = [];
  if (filter.source !== undefined) {
    values.push(filter.source);
    where.push(`source = $${values.length}`);
  }
  if (filter.beforeId !== undefined) {
    values.push(filter.beforeId);
    where.push(`id < $${values.length}`);
  }
  values.push(limit);
  const result = await query<InboxRow>(
    db.pool,
    `SELECT * FROM ${db.inbox}
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY id DESC
     LIMIT $${values.length}`,
    values,
  );
  return result.rows.map(toRecord);
}

/**
 * `webhookBacklog`: a count over `jobs_inbox_backlog`, the partial index of unfinished inbox jobs, for
 * `source` only.
 */
export async function webhookBacklog(db: InboxDb, source: string): Promise<number> {
  if (!isInboxKey(source)) return 0;
  const result = await query<{ n: number }>(
    db.pool,
    `SELECT count(*) AS n FROM ${db.jobs}
      WHERE inbox_source = $1 AND status IN ('pending', 'in_progress')`,
    [source],
  );
  return result.rows[0]!.n;
}

/**
 * `replayWebhook`: the delivery's id is read first (the job is built from it, outside any transaction), then
 * one statement enqueues the new job and points the record at it with `replays + 1`: the UPDATE takes the
 * row lock, so concurrent replays each count. Deliveries are never deleted; should one be gone by then, the
 * job's INSERT selects nothing (it reads from the UPDATE's RETURNING) and nothing is written.
 */
export async function replayWebhook(
  db: InboxDb,
  source: string,
  eventId: string,
  job: InboxJob,
): Promise<InboxRecord | undefined> {
  const found = await getWebhook(db, source, eventId);
  if (found === undefined) return undefined;
  const jobId = newId('job');
  const newJob = resolveInboxJob(job, found.id);
  const now = ms(db.clock.now());
  const result = await query<InboxRow>(
    db.pool,
    `WITH pointed AS (
       UPDATE ${db.inbox} SET job_id = $1, replays = replays + 1
        WHERE id = $2
       RETURNING *
     ),
     job AS (${insertJobSql(db, 'pointed', 3)})
     SELECT * FROM pointed`,
    [jobId, found.id, ...jobParams(jobId, newJob, found.source, now)],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : toRecord(row);
}
