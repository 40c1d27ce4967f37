import {
  bound,
  duplicateKey,
  isKeyId,
  prepareApiKey,
  prepareKeyFilter,
  pruneArgs,
  timeMs,
  tooManyKeys,
  type PreparedApiKey,
  type PreparedKeyFilter,
} from '../credential-checks.js';
import {
  API_KEY_BOUNDS,
  type ApiKeyFilter,
  type ApiKeyRecord,
  type ApiKeyStore,
  type NewApiKey,
} from '../keys.js';
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

/** The `api_keys` columns under {@link ApiKeyRecord}'s names; JSON still text, `trustedBackend` 0/1. */
const KEY_COLUMNS = `id, name, hash, scopes, metadata, trusted_backend AS trustedBackend, ai,
  created_at AS createdAt, expires_at AS expiresAt, revoked_at AS revokedAt`;

type KeyRow = Omit<ApiKeyRecord, 'scopes' | 'metadata' | 'trustedBackend' | 'ai'> & {
  scopes: string;
  metadata: string;
  trustedBackend: number;
  ai: string | null;
};

function toRecord(row: KeyRow): ApiKeyRecord {
  return {
    ...row,
    scopes: JSON.parse(row.scopes) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    trustedBackend: row.trustedBackend === 1,
    ai: row.ai === null ? null : (JSON.parse(row.ai) as ApiKeyRecord['ai']),
  };
}

/**
 * Prepares `ApiKeyStore.create`, in one `BEGIN IMMEDIATE` transaction: the count of active keys and the
 * insert run under the write lock, so creates from every connection and process on the file never pass the
 * bound together. `ON CONFLICT DO NOTHING` lets the primary key decide a duplicate id (nothing changed).
 */
function prepareCreate(ctx: SqliteContext): (key: PreparedApiKey, maxActive: number) => ApiKeyRecord {
  const count = ctx.db
    .prepare<[number], number>(
      'SELECT count(*) FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
    )
    .pluck();
  const insert = ctx.db.prepare<[Omit<PreparedApiKey, 'trustedBackend'> & { trusted: number }]>(
    `INSERT INTO api_keys (id, name, hash, scopes, metadata, trusted_backend, ai, created_at, expires_at, revoked_at)
     VALUES (@id, @name, @hash, @scopes, @metadata, @trusted, @ai, @createdAt, @expiresAt, NULL)
     ON CONFLICT (id) DO NOTHING`,
  );
  return ctx.db.transaction((key: PreparedApiKey, maxActive: number): ApiKeyRecord => {
    if (count.get(key.createdAt)! >= maxActive) throw tooManyKeys(maxActive);
    const { trustedBackend, ...rest } = key;
    const trusted = trustedBackend ? 1 : 0;
    if (insert.run({ ...rest, trusted }).changes === 0) throw duplicateKey(key.id);
    return toRecord({ ...rest, trustedBackend: trusted, revokedAt: null });
  }).immediate;
}

/**
 * Prepares `list`: newest first through `api_keys_created` walked backwards. The page after `beforeId`
 * compares (created_at, id) as a row value; an unknown `beforeId` makes the subquery NULL, which matches
 * nothing.
 */
function prepareList(ctx: SqliteContext): (filter: PreparedKeyFilter) => KeyRow[] {
  const statement = (revoked: boolean, after: boolean) =>
    ctx.db.prepare<[{ limit: number; beforeId?: string }], KeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys
        WHERE ${revoked ? '1' : 'revoked_at IS NULL'}
          ${after ? 'AND (created_at, id) < (SELECT created_at, id FROM api_keys WHERE id = @beforeId)' : ''}
        ORDER BY created_at DESC, id DESC LIMIT @limit`,
    );
  const variants = [
    [statement(false, false), statement(false, true)],
    [statement(true, false), statement(true, true)],
  ] as const;
  return ({ includeRevoked, beforeId, limit }) => {
    const chosen = variants[includeRevoked ? 1 : 0][beforeId === undefined ? 0 : 1];
    return chosen.all(beforeId === undefined ? { limit } : { limit, beforeId });
  };
}

/**
 * `store.keys` on SQLite. Not group-committed: keys change by hand (an operator's create or revoke), so
 * each write runs alone after the queued group-commit work; reads are single statements.
 */
export class SqliteApiKeyStore implements ApiKeyStore {
  private readonly createTx: (key: PreparedApiKey, maxActive: number) => ApiKeyRecord;
  private readonly getStmt: (id: string) => KeyRow | undefined;
  private readonly listStmt: (filter: PreparedKeyFilter) => KeyRow[];
  private readonly revokeTx: (id: string, at: number) => KeyRow | undefined;
  private readonly countStmt: (now: number) => number;
  private readonly pruneStmt: (before: number, limit: number) => number;

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    const db = ctx.db;
    this.createTx = prepareCreate(ctx);
    this.listStmt = prepareList(ctx);
    const get = db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`);
    // Only a key not revoked yet changes: a second revoke keeps the first time.
    const revoke = db.prepare<[number, string]>(
      'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
    );
    const count = db
      .prepare<[number], number>(
        'SELECT count(*) FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
      )
      .pluck();
    const prune = db.prepare<[{ before: number; limit: number }]>(
      `DELETE FROM api_keys WHERE id IN (
         SELECT id FROM api_keys
          WHERE revoked_at <= @before OR expires_at <= @before
          LIMIT @limit)`,
    );
    this.getStmt = (id) => get.get(id);
    this.revokeTx = db.transaction((id: string, at: number) => {
      revoke.run(at, id);
      return get.get(id);
    });
    this.countStmt = (now) => count.get(now)!;
    this.pruneStmt = (before, limit) => prune.run({ before, limit }).changes;
  }

  create(key: NewApiKey, options?: { maxActive?: number }): Promise<ApiKeyRecord> {
    return this.runner.write(() => {
      const maxActive = bound('keys.create', 'maxActive', options?.maxActive, API_KEY_BOUNDS.maxActive);
      return this.createTx(prepareApiKey(key), maxActive);
    });
  }

  get(id: string): Promise<ApiKeyRecord | undefined> {
    return this.runner.read(() => {
      const row = isKeyId(id) ? this.getStmt(id) : undefined;
      return row === undefined ? undefined : toRecord(row);
    });
  }

  list(filter?: ApiKeyFilter): Promise<ApiKeyRecord[]> {
    return this.runner.read(() => {
      const prepared = prepareKeyFilter(filter);
      return prepared.none ? [] : this.listStmt(prepared).map(toRecord);
    });
  }

  revoke(id: string, at: number): Promise<ApiKeyRecord | undefined> {
    return this.runner.write(() => {
      const time = timeMs('keys.revoke', 'at', at);
      const row = isKeyId(id) ? this.revokeTx(id, time) : undefined;
      return row === undefined ? undefined : toRecord(row);
    });
  }

  countActive(now: number): Promise<number> {
    return this.runner.read(() => this.countStmt(timeMs('keys.countActive', 'now', now)));
  }

  prune(before: number, limit?: number): Promise<number> {
    return this.runner.write(() => this.pruneStmt(...pruneArgs('keys.prune', 'before', before, limit)));
  }
}
