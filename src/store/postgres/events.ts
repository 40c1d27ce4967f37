import type { JobEvent, LeaseRef } from '../jobs.js';
import { json, ms, type Db, query } from './db.js';
import { toEvent, type EventRow } from './rows.js';

/** Default page of {@link events}. */
const EVENTS_DEFAULT_LIMIT = 1000;

/**
 * Events of a job with `seq > afterSeq`, in seq order, at most `limit` (default 1000): an SSE client resumes
 * from its `Last-Event-ID`. A range scan of the `(job_id, seq)` primary key.
 */
export async function events(
  db: Db,
  jobId: string,
  afterSeq = 0,
  limit = EVENTS_DEFAULT_LIMIT,
): Promise<JobEvent[]> {
  // Not capped: a caller paging until a short page comes back must get what it asked for.
  const pageSize =
    limit === Infinity ? null : Number.isNaN(limit) ? EVENTS_DEFAULT_LIMIT : Math.max(Math.floor(limit), 0);
  const result = await query<EventRow>(
    db.pool,
    `SELECT * FROM ${db.events} WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [jobId, Number.isFinite(afterSeq) ? Math.floor(afterSeq) : 0, pageSize],
  );
  return result.rows.map(toEvent);
}

/**
 * Appends a `job.progress` or `job.partial` event for a run that still holds its lease, in one statement:
 * the UPDATE checks the lease (as heartbeat does), locks the row and takes the next seq (an event is not a
 * change of the job's state, so `updated_at` stays); the INSERT
 * writes the event only when the UPDATE matched, so a stale run writes nothing. The `job_events_notify`
 * trigger notifies `job_event` on commit.
 * @throws TypeError for any other event type (the run's terminal events come from settle).
 */
export async function appendRunEvent(
  db: Db,
  lease: LeaseRef,
  type: 'job.progress' | 'job.partial',
  payload: unknown,
): Promise<JobEvent | undefined> {
  if (type !== 'job.progress' && type !== 'job.partial') {
    throw new TypeError(`appendRunEvent: type must be 'job.progress' or 'job.partial', got ${String(type)}`);
  }
  const now = ms(db.clock.now());
  const result = await query<EventRow>(
    db.pool,
    `WITH run AS (
       UPDATE ${db.jobs}
       SET next_seq = next_seq + 1
       WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
       RETURNING id, next_seq - 1 AS seq
     )
     INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
     SELECT id, seq, $4, $3, $5::jsonb FROM run
     RETURNING *`,
    [lease.id, lease.token, now, type, json(payload)],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : toEvent(row);
}
