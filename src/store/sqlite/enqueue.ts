import { newId } from '../../core/index.js';
import type { JobRecord, NewJob } from '../jobs.js';
import { checkNewJob } from '../checks.js';
import { notifyAvailable, type SqliteContext } from './context.js';
import { JOB_COLUMNS, fromJson, prepareJobRows, toJobRecord, toJson } from './rows.js';

/**
 * Inserts a job with the given id inside the caller's transaction, or does nothing when its
 * `(type, idempotencyKey)` is taken; answers whether it inserted. A new job queues `job_available`.
 * `payloadJson` is `toJson(job.payload)` (the caller keeps it to build the record). `inboxSource` is set only
 * for the job of a webhook delivery (see `webhooks.ts`).
 */
export type InsertJob = (
  id: string,
  job: NewJob,
  payloadJson: string | null,
  inboxSource: string | null,
  nowMs: number,
) => boolean;

/**
 * Prepares the {@link InsertJob} writer shared by `enqueue` and the webhook inbox. No `RETURNING`: every
 * column of a new row is known before the insert (see {@link newJobRecord}), and reading the row back cost
 * as much again as the insert itself (docs/performance.md#sqlite-store).
 */
export function prepareInsertJob(ctx: SqliteContext): InsertJob {
  const insert = ctx.db.prepare<
    [
      string,
      string,
      string | null,
      number,
      number,
      number,
      string | null,
      string | null,
      number | null,
      string | null,
      number,
      number,
      string | null,
    ]
  >(
    `INSERT INTO jobs (id, type, status, payload, max_attempts, run_at, priority, idempotency_key, ordering_key,
                       timeout_ms, inbox_source, created_at, updated_at, owner)
     VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
  );
  return (id, job, payloadJson, inboxSource, now) => {
    const { changes } = insert.run(
      id,
      job.type,
      payloadJson,
      job.maxAttempts,
      job.runAt,
      job.priority,
      job.idempotencyKey ?? null,
      job.orderingKey ?? null,
      job.timeoutMs ?? null,
      inboxSource,
      now,
      now,
      job.owner ?? null,
    );
    if (changes === 0) return false;
    ctx.created.push(id);
    notifyAvailable(ctx, job.type, job.runAt);
    return true;
  };
}

/** A job ready for {@link prepareEnqueue}'s step: checked, copied, its payload serialized. */
export interface PreparedJob {
  job: NewJob;
  payloadJson: string | null;
}

/**
 * Decides an enqueue before it is queued: a bad job rejects at once (`checkNewJob`), and the step reads only
 * this copy, never the caller's object, which may have changed by the time the batch runs.
 * @throws TypeError from `checkNewJob`; the payload's own error when it cannot be serialized.
 */
export function prepareJob(job: NewJob): PreparedJob {
  const checked = checkNewJob(job);
  return { job: checked, payloadJson: toJson(checked.payload) };
}

/**
 * Prepares `JobStore.enqueue`, a step of the group commit (`batch.ts`): it runs inside the batch's
 * `BEGIN IMMEDIATE` transaction, on a job {@link prepareJob} checked, copied and serialized before it was
 * queued, so nothing of the input can fail its one write.
 *
 * Insert first, then read back only on a conflict: `ON CONFLICT DO NOTHING` on the
 * partial unique index `(type, idempotency_key)` lets the constraint decide which of any number of concurrent
 * enqueues of a key wins (a check-then-insert would let two through). A new job's record is built from what
 * was inserted; only a duplicate pays the lookup of the job that won. Only a new job notifies
 * `job_available`: the existing one was announced when it was made.
 */
export function prepareEnqueue(
  ctx: SqliteContext,
): (prepared: PreparedJob) => { job: JobRecord; created: boolean } {
  const insert = prepareInsertJob(ctx);
  const selectByKey = prepareJobRows<[string, string]>(
    ctx.db,
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE type = ? AND idempotency_key = ?`,
  );
  return ({ job, payloadJson }: PreparedJob) => {
    const id = newId('job');
    const now = ctx.clock.now();
    if (insert(id, job, payloadJson, null, now)) {
      return { job: newJobRecord(id, job, payloadJson, now), created: true };
    }
    // Nothing inserted: only the idempotency index can have refused the row, so the key is set.
    return { job: toJobRecord(selectByKey.get(job.type, job.idempotencyKey!)!), created: false };
  };
}

/**
 * The record of a row {@link InsertJob} just inserted, as reading it back would give it: the columns' defaults
 * (status `pending`, no attempts, no lease, fencing token 0), the payload as its JSON reads back.
 */
function newJobRecord(id: string, job: NewJob, payloadJson: string | null, now: number): JobRecord {
  return {
    id,
    type: job.type,
    status: 'pending',
    payload: fromJson(payloadJson),
    result: null,
    error: null,
    attempts: 0,
    maxAttempts: job.maxAttempts,
    runAt: job.runAt,
    priority: job.priority,
    idempotencyKey: job.idempotencyKey ?? null,
    orderingKey: job.orderingKey ?? null,
    timeoutMs: job.timeoutMs ?? null,
    leaseOwner: null,
    leaseToken: 0,
    leaseExpiresAt: null,
    cancelRequestedAt: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    owner: job.owner ?? null,
  };
}
