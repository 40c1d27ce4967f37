import type { JobRecord } from '../jobs.js';

/**
 * The `jobs` columns under {@link JobRecord}'s property names: a row read with them is already shaped like a
 * record, so turning it into one only parses its three JSON columns, in place (no second object per row).
 */
export const JOB_COLUMNS = `id, type, status, payload, result, error, attempts,
  max_attempts AS maxAttempts, run_at AS runAt, priority, idempotency_key AS idempotencyKey,
  ordering_key AS orderingKey, timeout_ms AS timeoutMs, lease_owner AS leaseOwner, lease_token AS leaseToken,
  lease_expires_at AS leaseExpiresAt, cancel_requested_at AS cancelRequestedAt,
  created_at AS createdAt, updated_at AS updatedAt, finished_at AS finishedAt`;

/** A `jobs` row selected with {@link JOB_COLUMNS}: a {@link JobRecord} whose JSON columns are still text. */
export interface JobRow extends Omit<JobRecord, 'payload' | 'result' | 'error'> {
  payload: string | null;
  result: string | null;
  error: string | null;
}

/** Parses a row's JSON columns in place and returns it as the record it now is. */
export function toJobRecord(row: JobRow): JobRecord {
  const record = row as unknown as { payload: unknown; result: unknown; error: unknown };
  record.payload = fromJson(row.payload);
  record.result = fromJson(row.result);
  record.error = fromJson(row.error);
  return record as unknown as JobRecord;
}

/** A value as a JSON `TEXT` column; `undefined` (no JSON value) is stored as SQL NULL and reads back as `null`. */
export function toJson(value: unknown): string | null {
  // JSON.stringify answers undefined (not a string) for undefined, functions and symbols.
  return (JSON.stringify(value) as string | undefined) ?? null;
}

/** A JSON `TEXT` column as a value; SQL NULL is `null`. */
export function fromJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}
