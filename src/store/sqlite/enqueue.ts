import { newId } from '../../core/index.js';
import type { JobRecord, NewJob } from '../jobs.js';
import { notifyAvailable, type SqliteContext } from './context.js';
import { JOB_COLUMNS, toJobRecord, toJson, type JobRow } from './rows.js';

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
  const insert = ctx.db.prepare<
    [string, string, string | null, number, number, number, string | null, number | null, number, number],
    JobRow
  >(
    `INSERT INTO jobs (id, type, status, payload, max_attempts, run_at, priority, idempotency_key, timeout_ms,
                       created_at, updated_at)
     VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING ${JOB_COLUMNS}`,
  );
  const selectByKey = ctx.db.prepare<[string, string], JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE type = ? AND idempotency_key = ?`,
  );
  return ctx.db.transaction((job: NewJob) => {
    const now = ctx.clock.now();
    const key = job.idempotencyKey ?? null;
    const row = insert.get(
      newId('job'),
      job.type,
      toJson(job.payload),
      job.maxAttempts,
      job.runAt,
      job.priority,
      key,
      job.timeoutMs ?? null,
      now,
      now,
    );
    if (row !== undefined) {
      notifyAvailable(ctx, job.type, job.runAt);
      return { job: toJobRecord(row), created: true };
    }
    // Nothing inserted: only the idempotency index can have refused the row, so the key is set.
    return { job: toJobRecord(selectByKey.get(job.type, key!)!), created: false };
  }).immediate;
}
