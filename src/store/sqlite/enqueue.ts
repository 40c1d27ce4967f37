import { newId } from '../../core/index.js';
import type { JobRecord, NewJob } from '../jobs.js';
import { notifyAvailable, type SqliteContext } from './context.js';
import { JOB_COLUMNS, toJobRecord, toJson, type JobRow } from './rows.js';

/**
 * Inserts a job with the given id inside the caller's transaction, or does nothing when its
 * `(type, idempotencyKey)` is taken; a new job queues `job_available`. `inboxSource` is set only for the job
 * of a webhook delivery (see `webhooks.ts`).
 */
export type InsertJob = (
  id: string,
  job: NewJob,
  inboxSource: string | null,
  nowMs: number,
) => JobRecord | undefined;

/** Prepares the {@link InsertJob} writer shared by `enqueue` and the webhook inbox. */
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
    ],
    JobRow
  >(
    `INSERT INTO jobs (id, type, status, payload, max_attempts, run_at, priority, idempotency_key, ordering_key,
                       timeout_ms, inbox_source, created_at, updated_at)
     VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING ${JOB_COLUMNS}`,
  );
  return (id, job, inboxSource, now) => {
    const row = insert.get(
      id,
      job.type,
      toJson(job.payload),
      job.maxAttempts,
      job.runAt,
      job.priority,
      job.idempotencyKey ?? null,
      job.orderingKey ?? null,
      job.timeoutMs ?? null,
      inboxSource,
      now,
      now,
    );
    if (row === undefined) return undefined;
    notifyAvailable(ctx, job.type, job.runAt);
    return toJobRecord(row);
  };
}

/**
 * Prepares `JobStore.enqueue`.
 *
 * Insert first, then read back, in one transaction: `ON CONFLICT DO NOTHING` on the partial unique index
 * `(type, idempotency_key)` lets the constraint decide which of any number of concurrent enqueues of a key
 * wins (a check-then-insert would let two through). `RETURNING` hands back the new row without a second
 * read; only a duplicate pays the lookup of the job that won. Only a new job notifies `job_available`: the
 * existing one was announced when it was made.
 */
export function prepareEnqueue(ctx: SqliteContext): (job: NewJob) => { job: JobRecord; created: boolean } {
  const insert = prepareInsertJob(ctx);
  const selectByKey = ctx.db.prepare<[string, string], JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE type = ? AND idempotency_key = ?`,
  );
  return ctx.db.transaction((job: NewJob) => {
    const created = insert(newId('job'), job, null, ctx.clock.now());
    if (created !== undefined) return { job: created, created: true };
    // Nothing inserted: only the idempotency index can have refused the row, so the key is set.
    return { job: toJobRecord(selectByKey.get(job.type, job.idempotencyKey!)!), created: false };
  }).immediate;
}
