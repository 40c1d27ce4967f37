import type { JobError, JobEvent, JobEventType, JobRecord, JobStatus } from '../jobs.js';

/**
 * Rows as node-postgres returns them (BIGINT parsed to number by `storeTypes`, JSONB parsed to values) and
 * their mapping to the contract's records.
 */

/** A `jobs` row (`SELECT *`). */
export interface JobRow {
  id: string;
  type: string;
  status: JobStatus;
  payload: unknown;
  result: unknown;
  error: JobError | null;
  attempts: number;
  max_attempts: number;
  run_at: number;
  priority: number;
  idempotency_key: string | null;
  ordering_key: string | null;
  /** The webhook inbox source of a delivery's job (internal: the backlog count), else null. */
  inbox_source: string | null;
  timeout_ms: number | null;
  lease_owner: string | null;
  lease_token: number;
  lease_expires_at: number | null;
  cancel_requested_at: number | null;
  next_seq: number;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  owner: string | null;
}

/** A `job_events` row (`SELECT *`). */
export interface EventRow {
  job_id: string;
  seq: number;
  type: JobEventType;
  occurred_at: number;
  payload: unknown;
}

/** A `jobs` row as a {@link JobRecord}. */
export function toJob(row: JobRow): JobRecord {
  return {
    id: row.id,
    type: row.type,
    status: row.status,
    payload: row.payload,
    result: row.result,
    error: row.error,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    priority: row.priority,
    idempotencyKey: row.idempotency_key,
    orderingKey: row.ordering_key,
    timeoutMs: row.timeout_ms,
    leaseOwner: row.lease_owner,
    leaseToken: row.lease_token,
    leaseExpiresAt: row.lease_expires_at,
    cancelRequestedAt: row.cancel_requested_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
    owner: row.owner,
  };
}

/** A `job_events` row as a {@link JobEvent}; `eventId` is `${jobId}:${seq}`. */
export function toEvent(row: EventRow): JobEvent {
  return {
    eventId: `${row.job_id}:${row.seq}`,
    seq: row.seq,
    type: row.type,
    jobId: row.job_id,
    timestamp: row.occurred_at,
    payload: row.payload,
  };
}
