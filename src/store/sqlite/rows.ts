import type Database from 'better-sqlite3';
import type { JobError, JobRecord, JobStatus } from '../jobs.js';

/**
 * The `jobs` columns a {@link JobRecord} is made of, in the order {@link toJobRecord} reads them. Statements
 * selecting them run in raw mode ({@link prepareJobRows}): better-sqlite3 then hands back an array per row
 * instead of building an object with one property per column, which costs more per 20-column row than the
 * array plus the record literal below (docs/performance.md#sqlite-store); a claim builds one per leased job.
 */
export const JOB_COLUMNS = `id, type, status, payload, result, error, attempts, max_attempts, run_at, priority,
  idempotency_key, ordering_key, timeout_ms, lease_owner, lease_token, lease_expires_at, cancel_requested_at,
  created_at, updated_at, finished_at, owner`;

/** A `jobs` row selected with {@link JOB_COLUMNS} in raw mode: its values in that order, JSON columns as text. */
export type JobRow = [
  id: string,
  type: string,
  status: JobStatus,
  payload: string | null,
  result: string | null,
  error: string | null,
  attempts: number,
  maxAttempts: number,
  runAt: number,
  priority: number,
  idempotencyKey: string | null,
  orderingKey: string | null,
  timeoutMs: number | null,
  leaseOwner: string | null,
  leaseToken: number,
  leaseExpiresAt: number | null,
  cancelRequestedAt: number | null,
  createdAt: number,
  updatedAt: number,
  finishedAt: number | null,
  owner: string | null,
];

/** Prepares a statement whose rows are {@link JOB_COLUMNS}, in raw mode (see there). */
export function prepareJobRows<P extends unknown[]>(
  db: Database.Database,
  sql: string,
): Database.Statement<P, JobRow> {
  return db.prepare<P, JobRow>(sql).raw(true);
}

/** The record of a raw {@link JobRow} (or a row that starts with one), its JSON columns parsed. */
export function toJobRecord(row: readonly [...JobRow, ...unknown[]]): JobRecord {
  return {
    id: row[0],
    type: row[1],
    status: row[2],
    payload: fromJson(row[3]),
    result: fromJson(row[4]),
    error: fromJson(row[5]) as JobError | null,
    attempts: row[6],
    maxAttempts: row[7],
    runAt: row[8],
    priority: row[9],
    idempotencyKey: row[10],
    orderingKey: row[11],
    timeoutMs: row[12],
    leaseOwner: row[13],
    leaseToken: row[14],
    leaseExpiresAt: row[15],
    cancelRequestedAt: row[16],
    createdAt: row[17],
    updatedAt: row[18],
    finishedAt: row[19],
    owner: row[20],
  };
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
