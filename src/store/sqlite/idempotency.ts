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
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

/** Default of `prune`'s limit. */
const PRUNE_DEFAULT_LIMIT = 1000;

/** The `idempotency_records` columns under {@link IdempotencyRecord}'s names; `response` is still text. */
const RECORD_COLUMNS = `scope, key, fingerprint, state, token, response, created_at AS createdAt,
  updated_at AS updatedAt, locked_until AS lockedUntil, expires_at AS expiresAt`;

type RecordRow = Omit<IdempotencyRecord, 'response'> & { response: string | null };

function toRecord(row: RecordRow): IdempotencyRecord {
  return { ...row, response: row.response === null ? null : (JSON.parse(row.response) as StoredResponse) };
}

/** A claim checked, with the token it acquires with (made before it is queued). */
interface PreparedClaim extends IdempotencyClaim {
  token: string;
}

/**
 * Prepares `IdempotencyStore.begin`, a step of the group commit (`batch.ts`): it runs inside the batch's
 * `BEGIN IMMEDIATE` transaction; its one write is its first statement.
 *
 * One UPSERT decides: a new key inserts; an existing record is overwritten only when it has expired
 * (replaced afresh) or is `in_progress` with the same fingerprint and its lock ran out (taken over: new
 * token, lock renewed, `created_at` and `expires_at` kept). Otherwise it writes nothing and the record is
 * read back in the same transaction to say why (mismatch, completed, in progress). `takenOver` is derived
 * from the row: a takeover keeps the old `created_at`, which is before `now` (a lock always ends after its
 * record was created: `locked_until > created_at`, and a takeover needs `locked_until <= now`), while a
 * fresh or replaced record gets `created_at = now`.
 */
export function prepareBegin(ctx: SqliteContext): (claim: PreparedClaim) => IdempotencyBegin {
  const upsert = ctx.db.prepare<
    [
      {
        scope: string;
        key: string;
        fingerprint: string;
        token: string;
        now: number;
        lockedUntil: number;
        expiresAt: number;
      },
    ],
    RecordRow & { takenOver: number }
  >(
    `INSERT INTO idempotency_records
       (scope, key, fingerprint, state, token, response, created_at, updated_at, locked_until, expires_at)
     VALUES (@scope, @key, @fingerprint, 'in_progress', @token, NULL, @now, @now, @lockedUntil, @expiresAt)
     ON CONFLICT (scope, key) DO UPDATE SET
       fingerprint = excluded.fingerprint,
       state = 'in_progress',
       token = excluded.token,
       response = NULL,
       created_at = CASE WHEN expires_at <= @now THEN excluded.created_at ELSE created_at END,
       updated_at = excluded.updated_at,
       locked_until = excluded.locked_until,
       expires_at = CASE WHEN expires_at <= @now THEN excluded.expires_at ELSE expires_at END
     WHERE expires_at <= @now
        OR (state = 'in_progress' AND fingerprint = excluded.fingerprint AND locked_until <= @now)
     RETURNING ${RECORD_COLUMNS}, created_at <> @now AS takenOver`,
  );
  const select = ctx.db.prepare<[string, string], RecordRow>(
    `SELECT ${RECORD_COLUMNS} FROM idempotency_records WHERE scope = ? AND key = ?`,
  );
  return (claim: PreparedClaim): IdempotencyBegin => {
    const now = ctx.clock.now();
    const won = upsert.get({
      scope: claim.scope,
      key: claim.key,
      fingerprint: claim.fingerprint,
      token: claim.token,
      now,
      lockedUntil: now + claim.lockMs,
      expiresAt: now + claim.ttlMs,
    });
    if (won !== undefined) {
      const { takenOver, ...row } = won;
      return { outcome: 'acquired', record: toRecord(row), takenOver: takenOver === 1 };
    }
    // Refused: the record exists, live, and is not ours to take; the write lock keeps it as the upsert saw it.
    const record = toRecord(select.get(claim.scope, claim.key)!);
    if (record.fingerprint !== claim.fingerprint) return { outcome: 'mismatch', record };
    return record.state === 'completed'
      ? { outcome: 'completed', record }
      : { outcome: 'in_progress', record };
  };
}

/**
 * Prepares `complete`: one conditional UPDATE, true when it changed the row (`ref.token` owned the live
 * in-progress record). An expired record counts as gone.
 */
export function prepareComplete(ctx: SqliteContext): (ref: IdempotencyRef, response: string) => boolean {
  const update = ctx.db.prepare<[string, number, string, string, string, number]>(
    `UPDATE idempotency_records SET state = 'completed', response = ?, updated_at = ?
      WHERE scope = ? AND key = ? AND token = ? AND state = 'in_progress' AND expires_at > ?`,
  );
  return (ref, response) => {
    const now = ctx.clock.now();
    return update.run(response, now, ref.scope, ref.key, ref.token, now).changes === 1;
  };
}

/** Prepares `release`: one conditional DELETE of the live in-progress record `ref.token` owns. */
export function prepareRelease(ctx: SqliteContext): (ref: IdempotencyRef) => boolean {
  const remove = ctx.db.prepare<[string, string, string, number]>(
    `DELETE FROM idempotency_records
      WHERE scope = ? AND key = ? AND token = ? AND state = 'in_progress' AND expires_at > ?`,
  );
  return (ref) => remove.run(ref.scope, ref.key, ref.token, ctx.clock.now()).changes === 1;
}

/** Prepares `get`: one primary-key lookup; an expired record reads as absent. */
export function prepareGet(
  ctx: SqliteContext,
): (scope: string, key: string) => IdempotencyRecord | undefined {
  const select = ctx.db.prepare<[string, string, number], RecordRow>(
    `SELECT ${RECORD_COLUMNS} FROM idempotency_records WHERE scope = ? AND key = ? AND expires_at > ?`,
  );
  return (scope, key) => {
    const row = select.get(scope, key, ctx.clock.now());
    return row === undefined ? undefined : toRecord(row);
  };
}

/** Prepares `prune`: deletes up to `limit` expired records found through the `expires_at` index. */
export function preparePrune(ctx: SqliteContext): (limit: number) => number {
  const remove = ctx.db.prepare<[number, number]>(
    `DELETE FROM idempotency_records WHERE rowid IN (
       SELECT rowid FROM idempotency_records WHERE expires_at <= ? LIMIT ?)`,
  );
  return (limit) => remove.run(ctx.clock.now(), limit).changes;
}

/**
 * `store.idempotency` on SQLite. `begin` and `complete` are group-committed like `acceptWebhook`: every
 * request carrying an `Idempotency-Key` pays both, so a burst shares one fsync instead of two per request;
 * they are checked (and the token made) before they are queued, so a bad call rejects at once. The others
 * run alone, after what is queued.
 */
export class SqliteIdempotencyStore implements IdempotencyStore {
  private readonly beginTx: (claim: PreparedClaim) => IdempotencyBegin;
  private readonly completeStmt: (ref: IdempotencyRef, response: string) => boolean;
  private readonly releaseStmt: (ref: IdempotencyRef) => boolean;
  private readonly getStmt: (scope: string, key: string) => IdempotencyRecord | undefined;
  private readonly pruneTx: (limit: number) => number;

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    this.beginTx = prepareBegin(ctx);
    this.completeStmt = prepareComplete(ctx);
    this.releaseStmt = prepareRelease(ctx);
    this.getStmt = prepareGet(ctx);
    this.pruneTx = preparePrune(ctx);
  }

  begin(claim: IdempotencyClaim): Promise<IdempotencyBegin> {
    return this.runner.prepareThenBatch(() => ({ ...checkClaim(claim), token: randomUUID() }), this.beginTx);
  }

  complete(ref: IdempotencyRef, response: StoredResponse): Promise<boolean> {
    return this.runner.prepareThenBatch(
      () => {
        const text = responseText(response);
        // A ref that cannot own a record completes nothing (checked after the response, which must be valid).
        return isIdempotencyRef(ref)
          ? { owner: { scope: ref.scope, key: ref.key, token: ref.token }, text }
          : undefined;
      },
      (prepared) => prepared !== undefined && this.completeStmt(prepared.owner, prepared.text),
    );
  }

  release(ref: IdempotencyRef): Promise<boolean> {
    if (!isIdempotencyRef(ref)) return this.runner.write(() => false);
    return this.runner.write(this.releaseStmt, { scope: ref.scope, key: ref.key, token: ref.token });
  }

  get(scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    if (!isStoreKey(scope, MAX_IDEMPOTENCY_KEY_LENGTH) || !isStoreKey(key, MAX_IDEMPOTENCY_KEY_LENGTH)) {
      return this.runner.read(() => undefined);
    }
    return this.runner.read(this.getStmt, scope, key);
  }

  prune(limit?: number): Promise<number> {
    const count = pageLimit(limit, PRUNE_DEFAULT_LIMIT, Number.MAX_SAFE_INTEGER);
    if (count === 0) return this.runner.read(() => 0);
    return this.runner.write(this.pruneTx, count);
  }
}
