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
import type { JobEvent, JobRecord, LeaseRef } from '../jobs.js';
import { notifyAvailable, type SqliteContext } from './context.js';
import type { AppendEvent } from './events.js';
import type { NotifySuccessor } from './ordering.js';
import { JOB_COLUMNS, fromJson, prepareJobRows, toJobRecord, toJson, type JobRow } from './rows.js';

/**
 * Input during a job (docs/jobs.md, "Asking for input"): `askInput`, `jobInput`, `answerInput` and
 * `expireInputs` of the {@link JobStore} contract. Each write is one `BEGIN IMMEDIATE` transaction that reads
 * the row and changes it under the write lock, so an answer, a cancel, an expiry and a claim never interleave.
 * The input state is the `input` column (JSON, NULL until the job first asks); `input_deadline_at` repeats the
 * earliest expiry of the open questions for the `jobs_input_required` index.
 */

/** Prepares `JobStore.askInput`, fenced like `complete`: `in_progress` under the caller's token. */
export function prepareAskInput(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (lease: LeaseRef, request: InputRequest | readonly InputRequest[]) => JobEvent | undefined {
  const { db } = ctx;
  const leased = db.prepare<
    [string, number],
    { attempts: number; cancelRequestedAt: number | null; orderingKey: string | null; input: string | null }
  >(
    `SELECT attempts, cancel_requested_at AS cancelRequestedAt, ordering_key AS orderingKey, input
       FROM jobs WHERE id = ? AND lease_token = ? AND status = 'in_progress'`,
  );
  const park = db.prepare<[string, number | null, number, string]>(
    `UPDATE jobs SET status = 'input_required', input = ?, input_deadline_at = ?, attempts = attempts - 1,
                     lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
      WHERE id = ?`,
  );
  const cancel = db.prepare<[number, number, string]>(
    `UPDATE jobs SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL, finished_at = ?,
                     updated_at = ?
      WHERE id = ?`,
  );
  return db.transaction((lease: LeaseRef, request: InputRequest | readonly InputRequest[]) => {
    const row = leased.get(lease.id, lease.token);
    if (row === undefined) return undefined;
    const now = ctx.clock.now();
    if (row.cancelRequestedAt !== null) {
      cancel.run(now, now, lease.id);
      notifySuccessor(row.orderingKey);
      return appendEvent(lease.id, 'job.canceled', { attempts: row.attempts }, now);
    }
    const input = askedInput(parseInput(row.input), requestsOf(request));
    park.run(toJson(input)!, firstToExpire(input.requests)?.expiresAt ?? null, now, lease.id);
    return appendEvent(lease.id, 'job.input_required', inputRequiredPayload(input), now);
  }).immediate;
}

/** Prepares `JobStore.jobInput`: one primary-key read. */
export function prepareJobInput(ctx: SqliteContext): (id: string) => JobInput | undefined {
  const select = ctx.db.prepare<[string], { input: string | null }>('SELECT input FROM jobs WHERE id = ?');
  return (id) => {
    const row = select.get(id);
    return row === undefined ? undefined : parseInput(row.input);
  };
}

/** Prepares `JobStore.answerInput`. */
export function prepareAnswerInput(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
): (id: string, key: string, answer: unknown) => InputAnswerOutcome | undefined {
  const { db } = ctx;
  const select = db
    .prepare<[string], [...JobRow, input: string | null]>(
      `SELECT ${JOB_COLUMNS}, input FROM jobs WHERE id = ?`,
    )
    .raw(true);
  const answer = prepareJobRows<[string, number, number, string]>(
    db,
    `UPDATE jobs SET status = 'pending', input = ?, input_deadline_at = NULL, run_at = ?, updated_at = ?
      WHERE id = ?
      RETURNING ${JOB_COLUMNS}`,
  );
  const partly = prepareJobRows<[string, number | null, number, string]>(
    db,
    `UPDATE jobs SET input = ?, input_deadline_at = ?, updated_at = ?
      WHERE id = ?
      RETURNING ${JOB_COLUMNS}`,
  );
  return db.transaction((id: string, key: string, value: unknown): InputAnswerOutcome | undefined => {
    const row = select.get(id);
    if (row === undefined) return undefined;
    const job = toJobRecord(row);
    const input = parseInput(row[21]);
    const first = input.request;
    if (job.status !== 'input_required' || first === null) return { outcome: 'not_waiting', job };
    if (!input.requests.some((open) => open.key === key))
      return { outcome: 'wrong_key', job, request: first };
    const now = ctx.clock.now();
    const due = firstToExpire(input.requests);
    if (due !== undefined && due.expiresAt! <= now) return { outcome: 'expired', job, request: due };
    const next = answeredInput(input, key, value);
    let answered: JobRecord;
    if (next.requests.length > 0) {
      const deadline = firstToExpire(next.requests)?.expiresAt ?? null;
      answered = toJobRecord(partly.get(toJson(next)!, deadline, now, id)!);
    } else {
      answered = toJobRecord(answer.get(toJson(next)!, now, now, id)!);
      notifyAvailable(ctx, job.type, now);
    }
    const event = appendEvent(id, 'job.input_received', { key }, now);
    return { outcome: 'answered', job: answered, event };
  }).immediate;
}

/** Prepares `JobStore.expireInputs`: the first due entries of `jobs_input_required`, then the next expiry. */
export function prepareExpireInputs(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  notifySuccessor: NotifySuccessor,
): (types: readonly string[]) => InputExpiry {
  const { db } = ctx;
  const TYPES = '(? = 0 OR type IN (SELECT value FROM json_each(?)))';
  const due = db.prepare<
    [number, number, string],
    { id: string; attempts: number; orderingKey: string | null; input: string | null }
  >(
    `SELECT id, attempts, ordering_key AS orderingKey, input FROM jobs INDEXED BY jobs_input_required
      WHERE status = 'input_required' AND input_deadline_at <= ? AND ${TYPES}
      ORDER BY input_deadline_at LIMIT ${EXPIRE_INPUTS_BATCH}`,
  );
  const next = db.prepare<[number, string], { next: number | null }>(
    `SELECT min(input_deadline_at) AS next FROM jobs INDEXED BY jobs_input_required
      WHERE status = 'input_required' AND input_deadline_at IS NOT NULL AND ${TYPES}`,
  );
  const end = db.prepare<[string, number, number, string]>(
    `UPDATE jobs SET status = 'failed', error = ?, input_deadline_at = NULL, finished_at = ?, updated_at = ?
      WHERE id = ?`,
  );
  return db.transaction((types: readonly string[]): InputExpiry => {
    const now = ctx.clock.now();
    const json = JSON.stringify(types);
    const ended: JobEvent[] = [];
    for (const row of due.all(now, types.length, json)) {
      const error = inputTimeoutError(firstToExpire(parseInput(row.input).requests)!);
      end.run(toJson(error)!, now, now, row.id);
      notifySuccessor(row.orderingKey);
      ended.push(appendEvent(row.id, 'job.failed', { error, attempts: row.attempts }, now));
    }
    return { ended, nextExpiresAt: next.get(types.length, json)?.next ?? null };
  }).immediate;
}

function parseInput(text: string | null): JobInput {
  return inputOf(text === null ? null : (fromJson(text) as Partial<JobInput>));
}
