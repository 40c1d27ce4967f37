import {
  EXPIRE_INPUTS_BATCH,
  answeredInput,
  askedInput,
  firstToExpire,
  inputOf,
  inputRequiredPayload,
  inputTimeoutError,
  requestsOf,
  type InputAnswerOutcome,
  type InputExpiry,
  type InputRequest,
  type JobInput,
} from '../job-input.js';
import type { JobEvent, LeaseRef } from '../jobs.js';
import { json, ms, query, withTransaction, type Db } from './db.js';
import { toEvent, toJob, type EventRow, type JobRow } from './rows.js';

/**
 * Input during a job (docs/jobs.md, "Asking for input"): `askInput`, `jobInput`, `answerInput` and
 * `expireInputs` of the {@link JobStore} contract. Each write is one transaction that locks the job's row
 * first (`FOR UPDATE`), decides from what it reads, then writes the change and its event: a claim passes a
 * locked row over (SKIP LOCKED), and a cancel, an answer or a settle waits for the lock and then sees the new
 * state. The input state is the `input` column (jsonb, NULL until the job first asks).
 */

/** A `jobs` row with the input columns. */
type InputRow = JobRow & { input: JobInput | null };

/** `JobStore.askInput`, fenced like the settles: `in_progress` under the caller's token. */
export async function askInput(
  db: Db,
  lease: LeaseRef,
  request: InputRequest | readonly InputRequest[],
): Promise<JobEvent | undefined> {
  const now = ms(db.clock.now());
  return withTransaction(db.pool, async (client) => {
    const locked = await client.query<InputRow>(
      `SELECT * FROM ${db.jobs} WHERE id = $1 AND lease_token = $2 AND status = 'in_progress' FOR UPDATE`,
      [lease.id, lease.token],
    );
    const job = locked.rows[0];
    if (job === undefined) return undefined;
    if (job.cancel_requested_at !== null) {
      return insertEvent(
        client,
        db,
        `UPDATE ${db.jobs} SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL,
                finished_at = $2, updated_at = $2, next_seq = next_seq + 1
          WHERE id = $1 RETURNING id, next_seq - 1 AS seq`,
        [lease.id, now],
        'job.canceled',
        { attempts: job.attempts },
      );
    }
    const input = askedInput(inputOf(job.input), requestsOf(request));
    const deadline = firstToExpire(input.requests)?.expiresAt ?? null;
    return insertEvent(
      client,
      db,
      `UPDATE ${db.jobs} SET status = 'input_required', input = $3::jsonb, input_deadline_at = $4,
              attempts = GREATEST(attempts - 1, 0), lease_owner = NULL, lease_expires_at = NULL,
              updated_at = $2, next_seq = next_seq + 1
        WHERE id = $1 RETURNING id, next_seq - 1 AS seq`,
      [lease.id, now, json(input), deadline === null ? null : ms(deadline)],
      'job.input_required',
      inputRequiredPayload(input),
    );
  });
}

/** `JobStore.jobInput`: one primary-key read. */
export async function jobInput(db: Db, id: string): Promise<JobInput | undefined> {
  const result = await query<{ input: JobInput | null }>(
    db.pool,
    `SELECT input FROM ${db.jobs} WHERE id = $1`,
    [id],
  );
  const row = result.rows[0];
  return row === undefined ? undefined : inputOf(row.input);
}

/** `JobStore.answerInput`. */
export async function answerInput(
  db: Db,
  id: string,
  key: string,
  answer: unknown,
): Promise<InputAnswerOutcome | undefined> {
  const now = ms(db.clock.now());
  return withTransaction(db.pool, async (client): Promise<InputAnswerOutcome | undefined> => {
    const locked = await client.query<InputRow>(`SELECT * FROM ${db.jobs} WHERE id = $1 FOR UPDATE`, [id]);
    const row = locked.rows[0];
    if (row === undefined) return undefined;
    const job = toJob(row);
    const input = inputOf(row.input);
    const first = input.request;
    if (job.status !== 'input_required' || first === null) return { outcome: 'not_waiting', job };
    if (!input.requests.some((open) => open.key === key))
      return { outcome: 'wrong_key', job, request: first };
    const due = firstToExpire(input.requests);
    if (due !== undefined && due.expiresAt! <= now) return { outcome: 'expired', job, request: due };
    const next = answeredInput(input, key, answer);
    const deadline = firstToExpire(next.requests)?.expiresAt ?? null;
    // Pending again once no question is left open: the jobs_available_on_update trigger notifies job_available.
    const updated = await client.query<JobRow>(
      next.requests.length > 0
        ? `UPDATE ${db.jobs} SET input = $3::jsonb, input_deadline_at = $4, updated_at = $2,
                  next_seq = next_seq + 1
            WHERE id = $1 RETURNING *`
        : `UPDATE ${db.jobs} SET status = 'pending', input = $3::jsonb, input_deadline_at = NULL, run_at = $2,
                  updated_at = $2, next_seq = next_seq + 1
            WHERE id = $1 RETURNING *`,
      next.requests.length > 0
        ? [id, now, json(next), deadline === null ? null : ms(deadline)]
        : [id, now, json(next)],
    );
    const answered = updated.rows[0]!;
    const inserted = await client.query<EventRow>(
      `INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
       VALUES ($1, $2, 'job.input_received', $3, $4::jsonb) RETURNING *`,
      [id, answered.next_seq - 1, now, json({ key })],
    );
    return { outcome: 'answered', job: toJob(answered), event: toEvent(inserted.rows[0]!) };
  });
}

/**
 * `JobStore.expireInputs`: locks the first due waiting jobs (SKIP LOCKED: one an answer or a cancel holds is
 * left to it, and to the next sweep if still due), ends them, then reads the next expiry left.
 */
export async function expireInputs(db: Db, types: readonly string[]): Promise<InputExpiry> {
  const now = ms(db.clock.now());
  const ofTypes = (param: string) => `(cardinality(${param}::text[]) = 0 OR type = ANY (${param}::text[]))`;
  return withTransaction(db.pool, async (client) => {
    const due = await client.query<InputRow>(
      `SELECT * FROM ${db.jobs}
        WHERE status = 'input_required' AND input_deadline_at <= $1 AND ${ofTypes('$2')}
        ORDER BY input_deadline_at LIMIT ${EXPIRE_INPUTS_BATCH}
        FOR UPDATE SKIP LOCKED`,
      [now, [...types]],
    );
    const ended: JobEvent[] = [];
    for (const row of due.rows) {
      const error = inputTimeoutError(firstToExpire(inputOf(row.input).requests)!);
      const event = await insertEvent(
        client,
        db,
        `UPDATE ${db.jobs} SET status = 'failed', error = $3::jsonb, input_deadline_at = NULL,
                finished_at = $2, updated_at = $2, next_seq = next_seq + 1
          WHERE id = $1 RETURNING id, next_seq - 1 AS seq`,
        [row.id, now, json(error)],
        'job.failed',
        { error, attempts: row.attempts },
      );
      ended.push(event!);
    }
    const next = await client.query<{ next: number | null }>(
      `SELECT min(input_deadline_at) AS next FROM ${db.jobs}
        WHERE status = 'input_required' AND input_deadline_at IS NOT NULL AND ${ofTypes('$1')}`,
      [[...types]],
    );
    return { ended, nextExpiresAt: next.rows[0]?.next ?? null };
  });
}

/** Runs `update` (which must return `id` and the event's `seq`), then writes the event it took the seq for. */
async function insertEvent(
  client: { query: Db['pool']['query'] },
  db: Db,
  update: string,
  values: unknown[],
  type: JobEvent['type'],
  payload: unknown,
): Promise<JobEvent | undefined> {
  const updated = await client.query<{ id: string; seq: number }>(update, values);
  const row = updated.rows[0];
  if (row === undefined) return undefined;
  const inserted = await client.query<EventRow>(
    `INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
     VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
    [row.id, row.seq, type, values[1], json(payload)],
  );
  return toEvent(inserted.rows[0]!);
}
