import type { JobEvent, JobEventType, LeaseRef } from '../jobs.js';
import { notifyEvent, type SqliteContext } from './context.js';
import { pageLimit } from '../checks.js';
import { byLimit } from './limit.js';
import { fromJson, toJson } from './rows.js';

/**
 * Writes one event of a job inside the caller's transaction and queues its `job_event` notification.
 * `payloadJson`, when given, is the payload as stored (a step of the group commit serializes before its
 * first write: see batch.ts); else the payload is serialized here.
 */
export type AppendEvent = (
  jobId: string,
  type: JobEventType,
  payload: unknown,
  nowMs: number,
  payloadJson?: string | null,
) => JobEvent;

/**
 * Writes one event whose seq the caller already took: the hot transitions (claim, complete) bump `next_seq`
 * in the same UPDATE that changes the job (`next_seq = next_seq + 1 ... RETURNING next_seq - 1`), saving the
 * second row update {@link AppendEvent} would make.
 */
export type InsertEvent = (
  jobId: string,
  seq: number,
  type: JobEventType,
  payload: unknown,
  nowMs: number,
  payloadJson?: string | null,
) => JobEvent;

/**
 * Prepares the event writer every state change uses.
 *
 * The seq is the job row's `next_seq`, read and bumped by one UPDATE inside the caller's transaction: the
 * write lock that transaction holds makes it unique and gapless per job, and it costs a primary-key update
 * rather than a `MAX(seq)` over the job's events. (The caller's UPDATE already changed the row, so the page
 * is in cache.)
 */
export function prepareAppendEvent(ctx: SqliteContext): AppendEvent {
  const bumpSeq = ctx.db.prepare<[string], { seq: number }>(
    'UPDATE jobs SET next_seq = next_seq + 1 WHERE id = ? RETURNING next_seq - 1 AS seq',
  );
  const insert = prepareInsert(ctx);
  return (jobId, type, payload, nowMs, payloadJson) =>
    insert(jobId, bumpSeq.get(jobId)!.seq, type, payload, nowMs, payloadJson);
}

/**
 * Prepares `JobStore.appendRunEvent`: a `job.progress` or `job.partial` event for a run that still holds
 * its lease.
 *
 * Fenced like every lease operation: the seq bump matches the token and `in_progress`, so a worker that lost
 * its lease bumps nothing, writes nothing and gets `undefined`. Lease expiry alone does not fence: until
 * another claim takes the job (and moves the token) the run is still the job's only run.
 */
export function prepareAppendRunEvent(
  ctx: SqliteContext,
): (lease: LeaseRef, type: 'job.progress' | 'job.partial', payload: unknown) => JobEvent | undefined {
  const bumpLeasedSeq = ctx.db.prepare<[string, number], { seq: number }>(
    `UPDATE jobs SET next_seq = next_seq + 1
      WHERE id = ? AND lease_token = ? AND status = 'in_progress'
      RETURNING next_seq - 1 AS seq`,
  );
  const insert = prepareInsert(ctx);
  return ctx.db.transaction((lease: LeaseRef, type: 'job.progress' | 'job.partial', payload: unknown) => {
    const row = bumpLeasedSeq.get(lease.id, lease.token);
    return row === undefined ? undefined : insert(lease.id, row.seq, type, payload, ctx.clock.now());
  }).immediate;
}

/** Page size of `JobStore.events` when none is given. */
const EVENTS_DEFAULT_LIMIT = 1000;

/**
 * Prepares `JobStore.events`: a job's events after `afterSeq`, in order. The primary key
 * `(job_id, seq)` serves it as one range scan, so an SSE client resuming from `Last-Event-ID` reads only
 * what it missed.
 */
export function prepareReadEvents(
  ctx: SqliteContext,
): (jobId: string, afterSeq?: number, limit?: number) => JobEvent[] {
  // The limit is written into the SQL (see limit.ts): one statement per page size in use.
  const select = byLimit((limit) =>
    ctx.db.prepare<
      [string, number],
      { seq: number; type: JobEventType; timestamp: number; payload: string | null }
    >(
      `SELECT seq, type, timestamp, payload FROM job_events
        WHERE job_id = ? AND seq > ?
        ORDER BY seq
        LIMIT ${limit}`,
    ),
  );
  return (jobId, afterSeq = 0, limit) => {
    // As the PostgreSQL store reads it: NaN or unset is the default, anything else floored into
    // [0, 2^53 - 1] (Infinity: every event).
    const pageSize = pageLimit(limit, EVENTS_DEFAULT_LIMIT, Number.MAX_SAFE_INTEGER);
    if (pageSize === 0) return [];
    const rows = select(pageSize).all(jobId, afterSeq);
    const events: JobEvent[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      events[i] = {
        eventId: `${jobId}:${row.seq}`,
        seq: row.seq,
        type: row.type,
        jobId,
        timestamp: row.timestamp,
        payload: fromJson(row.payload),
      };
    }
    return events;
  };
}

/** Prepares the {@link InsertEvent} writer. */
export function prepareInsert(ctx: SqliteContext): InsertEvent {
  const insert = ctx.db.prepare<[string, number, string, number, string | null]>(
    'INSERT INTO job_events (job_id, seq, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)',
  );
  return (jobId, seq, type, payload, nowMs, payloadJson) => {
    insert.run(jobId, seq, type, nowMs, payloadJson === undefined ? toJson(payload) : payloadJson);
    notifyEvent(ctx, jobId, seq, type);
    // The payload as it reads back: a value with no JSON form (undefined) is stored as null.
    return {
      eventId: `${jobId}:${seq}`,
      seq,
      type,
      jobId,
      timestamp: nowMs,
      payload: payload === undefined ? null : payload,
    };
  };
}
