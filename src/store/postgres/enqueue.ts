import { newId } from '../../core/index.js';
import { checkNewJob } from '../checks.js';
import type { JobRecord, NewJob } from '../jobs.js';
import { json, ms, type Db, query } from './db.js';
import { toJob, type JobRow } from './rows.js';

/**
 * Inserts a job, or returns the one already enqueued with the same `(type, idempotencyKey)`.
 *
 * The partial unique index `jobs_idempotency_key` makes this atomic under any concurrency: INSERT … ON
 * CONFLICT DO NOTHING either inserts or, when another transaction holds or committed the key, waits for it
 * and inserts nothing. The existing row is then read by a second statement: it must be a new statement,
 * because within the INSERT's own snapshot a row committed by a concurrent enqueue is invisible, so a CTE
 * could come back empty. The `jobs_available_on_insert` trigger notifies `job_available` on commit.
 */
export async function enqueue(db: Db, newJob: NewJob): Promise<{ job: JobRecord; created: boolean }> {
  // The same refusals as the SQLite store's, before anything is sent.
  const job = checkNewJob(newJob);
  const now = ms(db.clock.now());
  const key = job.idempotencyKey ?? null;
  const inserted = await query<JobRow>(
    db.pool,
    `INSERT INTO ${db.jobs} (id, type, status, payload, max_attempts, run_at, priority, idempotency_key,
                             timeout_ms, created_at, updated_at, ordering_key, owner)
     VALUES ($1, $2, 'pending', $3::jsonb, $4, $5, $6, $7, $8, $9, $9, $10, $11)
     ON CONFLICT (type, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING *`,
    [
      newId('job'),
      job.type,
      json(job.payload),
      job.maxAttempts,
      ms(job.runAt),
      job.priority,
      key,
      job.timeoutMs === undefined ? null : ms(job.timeoutMs),
      now,
      job.orderingKey ?? null,
      job.owner ?? null,
    ],
  );
  const row = inserted.rows[0];
  if (row !== undefined) return { job: toJob(row), created: true };

  // Only a conflict inserts nothing, so the key is set and its row is committed (jobs are never deleted
  // by the store).
  const existing = await query<JobRow>(
    db.pool,
    `SELECT * FROM ${db.jobs} WHERE type = $1 AND idempotency_key = $2`,
    [job.type, key],
  );
  const found = existing.rows[0];
  if (found === undefined) {
    throw new Error(`PostgresJobStore: job ${job.type}/${key} conflicted on enqueue but cannot be found`);
  }
  return { job: toJob(found), created: false };
}
