import { randomUUID } from 'node:crypto';
import { checkClaim, isIdempotencyRef, isStoreKey, pageLimit, responseText } from '../checks.js';
import {
  MAX_IDEMPOTENCY_KEY_LENGTH,
  type IdempotencyBegin,
  type IdempotencyClaim,
  type IdempotencyRecord,
  type IdempotencyRef,
  type IdempotencyStore,
  type StoredResponse,
} from '../idempotency.js';
import { ms, withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** Default of `prune`'s limit. */
const PRUNE_DEFAULT_LIMIT = 1000;

/** An `idempotency_records` row (`SELECT *`): BIGINT already a number, json parsed. */
interface RecordRow {
  scope: string;
  key: string;
  fingerprint: string;
  state: 'in_progress' | 'completed';
  token: string;
  response: StoredResponse | null;
  created_at: number;
  updated_at: number;
  locked_until: number;
  expires_at: number;
}

function toRecord(row: RecordRow): IdempotencyRecord {
  return {
    scope: row.scope,
    key: row.key,
    fingerprint: row.fingerprint,
    state: row.state,
    token: row.token,
    response: row.response,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lockedUntil: row.locked_until,
    expiresAt: row.expires_at,
  };
}

/**
 * `begin`: one INSERT … ON CONFLICT DO UPDATE … WHERE decides, then (when it wrote nothing) one read, in one
 * transaction. The upsert inserts a new key, replaces an expired record afresh, or takes over an in-progress
 * record of the same fingerprint whose lock ran out (new token, lock renewed, `created_at` and `expires_at`
 * kept); any other record is left alone. Concurrent begins of one key queue on the row (the unique index,
 * then the row lock), and each evaluates the WHERE against the latest committed row, so exactly one wins.
 * ON CONFLICT DO UPDATE locks the conflicting row even when its WHERE is false, so the read that follows in
 * the same transaction sees the record exactly as the upsert judged it (nobody can complete or release it in
 * between). `taken_over`: a takeover keeps the old `created_at`, which is before `now` (`locked_until >
 * created_at` always, and a takeover needs `locked_until <= now`); a fresh or replaced record gets `now`.
 */
async function begin(runner: PgRunner, table: string, claim: IdempotencyClaim): Promise<IdempotencyBegin> {
  const token = randomUUID();
  return withTransaction(runner.pool, async (client) => {
    const now = ms(runner.clock.now());
    const won = await client.query<RecordRow & { taken_over: boolean }>(
      `INSERT INTO ${table} AS r
         (scope, key, fingerprint, state, token, response, created_at, updated_at, locked_until, expires_at)
       VALUES ($1, $2, $3, 'in_progress', $4, NULL, $5, $5, $6, $7)
       ON CONFLICT (scope, key) DO UPDATE SET
         fingerprint = EXCLUDED.fingerprint,
         state = 'in_progress',
         token = EXCLUDED.token,
         response = NULL,
         created_at = CASE WHEN r.expires_at <= $5 THEN EXCLUDED.created_at ELSE r.created_at END,
         updated_at = EXCLUDED.updated_at,
         locked_until = EXCLUDED.locked_until,
         expires_at = CASE WHEN r.expires_at <= $5 THEN EXCLUDED.expires_at ELSE r.expires_at END
       WHERE r.expires_at <= $5
          OR (r.state = 'in_progress' AND r.fingerprint = EXCLUDED.fingerprint AND r.locked_until <= $5)
       RETURNING *, created_at <> $5 AS taken_over`,
      [claim.scope, claim.key, claim.fingerprint, token, now, ms(now + claim.lockMs), ms(now + claim.ttlMs)],
    );
    const row = won.rows[0];
    if (row !== undefined) return { outcome: 'acquired', record: toRecord(row), takenOver: row.taken_over };
    const found = await client.query<RecordRow>(`SELECT * FROM ${table} WHERE scope = $1 AND key = $2`, [
      claim.scope,
      claim.key,
    ]);
    const record = toRecord(found.rows[0]!);
    if (record.fingerprint !== claim.fingerprint) return { outcome: 'mismatch', record };
    return record.state === 'completed'
      ? { outcome: 'completed', record }
      : { outcome: 'in_progress', record };
  });
}

/**
 * `store.idempotency` on PostgreSQL: `begin` as above; `complete` and `release` are one conditional statement
 * each (true when it changed the live in-progress record `ref.token` owns; an expired record counts as
 * gone); `prune` deletes through the `expires_at` index.
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  private readonly records: string;

  constructor(private readonly runner: PgRunner) {
    this.records = runner.table('idempotency_records');
  }

  begin(claim: IdempotencyClaim): Promise<IdempotencyBegin> {
    return this.runner.run(() => begin(this.runner, this.records, checkClaim(claim)));
  }

  complete(ref: IdempotencyRef, response: StoredResponse): Promise<boolean> {
    return this.runner.run(async () => {
      const text = responseText(response);
      if (!isIdempotencyRef(ref)) return false;
      const now = ms(this.runner.clock.now());
      const result = await this.runner.pool.query(
        `UPDATE ${this.records} SET state = 'completed', response = $1::json, updated_at = $2
          WHERE scope = $3 AND key = $4 AND token = $5 AND state = 'in_progress' AND expires_at > $2`,
        [text, now, ref.scope, ref.key, ref.token],
      );
      return result.rowCount === 1;
    });
  }

  release(ref: IdempotencyRef): Promise<boolean> {
    return this.runner.run(async () => {
      if (!isIdempotencyRef(ref)) return false;
      const result = await this.runner.pool.query(
        `DELETE FROM ${this.records}
          WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'in_progress' AND expires_at > $4`,
        [ref.scope, ref.key, ref.token, ms(this.runner.clock.now())],
      );
      return result.rowCount === 1;
    });
  }

  get(scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    return this.runner.run(async () => {
      if (!isStoreKey(scope, MAX_IDEMPOTENCY_KEY_LENGTH) || !isStoreKey(key, MAX_IDEMPOTENCY_KEY_LENGTH)) {
        return undefined;
      }
      const result = await this.runner.pool.query<RecordRow>(
        `SELECT * FROM ${this.records} WHERE scope = $1 AND key = $2 AND expires_at > $3`,
        [scope, key, ms(this.runner.clock.now())],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  /**
   * Picks up to `limit` expired rows (skipping rows another transaction holds, e.g. a begin replacing one),
   * then deletes them; the outer `expires_at` test is re-checked against a row updated meanwhile, so a record
   * a concurrent begin has just replaced (live again) is never deleted.
   */
  prune(limit?: number): Promise<number> {
    return this.runner.run(async () => {
      const count = pageLimit(limit, PRUNE_DEFAULT_LIMIT, Number.MAX_SAFE_INTEGER);
      if (count === 0) return 0;
      const now = ms(this.runner.clock.now());
      const result = await this.runner.pool.query(
        `DELETE FROM ${this.records}
          WHERE (scope, key) IN (
                  SELECT scope, key FROM ${this.records} WHERE expires_at <= $1
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
            AND expires_at <= $1`,
        [now, count],
      );
      return result.rowCount ?? 0;
    });
  }
}
