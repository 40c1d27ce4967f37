import {
  bound,
  duplicateKey,
  isKeyId,
  prepareApiKey,
  prepareKeyFilter,
  pruneArgs,
  timeMs,
  tooManyKeys,
} from '../credential-checks.js';
import {
  API_KEY_BOUNDS,
  type ApiKeyFilter,
  type ApiKeyRecord,
  type ApiKeyStore,
  type NewApiKey,
} from '../keys.js';
import { withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** An `api_keys` row (`SELECT *`): BIGINT already a number, json parsed. */
interface KeyRow {
  id: string;
  name: string;
  hash: string;
  scopes: string[];
  metadata: Record<string, string>;
  trusted_backend: boolean;
  ai: ApiKeyRecord['ai'];
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

function toRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    hash: row.hash,
    scopes: row.scopes,
    metadata: row.metadata,
    trustedBackend: row.trusted_backend,
    ai: row.ai,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

const ACTIVE = 'revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)';

/**
 * `store.keys` on PostgreSQL. `create` is one transaction under an advisory lock of its schema (creates take
 * turns, so the count and the insert cannot interleave with another create's); every other method is one
 * statement.
 */
export class PostgresApiKeyStore implements ApiKeyStore {
  private readonly keys: string;

  constructor(private readonly runner: PgRunner) {
    this.keys = runner.table('api_keys');
  }

  /**
   * The transaction-scoped advisory lock (keyed by the schema, released at COMMIT or ROLLBACK) serializes
   * creates from every pool and process; revokes and reads do not take it. `ON CONFLICT DO NOTHING` lets
   * the primary key decide a duplicate id.
   */
  create(key: NewApiKey, options?: { maxActive?: number }): Promise<ApiKeyRecord> {
    return this.runner.run(() => {
      const maxActive = bound('keys.create', 'maxActive', options?.maxActive, API_KEY_BOUNDS.maxActive);
      const k = prepareApiKey(key);
      return withTransaction(this.runner.pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
          `breakwater:api_keys:${this.runner.schema}`,
        ]);
        const count = await client.query<{ n: number }>(
          `SELECT count(*) AS n FROM ${this.keys} WHERE ${ACTIVE}`,
          [k.createdAt],
        );
        if (count.rows[0]!.n >= maxActive) throw tooManyKeys(maxActive);
        const inserted = await client.query<KeyRow>(
          `INSERT INTO ${this.keys}
             (id, name, hash, scopes, metadata, trusted_backend, ai, created_at, expires_at, revoked_at)
           VALUES ($1, $2, $3, $4::json, $5::json, $6, $7::json, $8, $9, NULL)
           ON CONFLICT (id) DO NOTHING
           RETURNING *`,
          [k.id, k.name, k.hash, k.scopes, k.metadata, k.trustedBackend, k.ai, k.createdAt, k.expiresAt],
        );
        const row = inserted.rows[0];
        if (row === undefined) throw duplicateKey(k.id);
        return toRecord(row);
      });
    });
  }

  get(id: string): Promise<ApiKeyRecord | undefined> {
    return this.runner.run(async () => {
      if (!isKeyId(id)) return undefined;
      const result = await this.runner.pool.query<KeyRow>(`SELECT * FROM ${this.keys} WHERE id = $1`, [id]);
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  /** Newest first; the page after `beforeId` compares (created_at, id) as a row value (NULL: nothing). */
  list(filter?: ApiKeyFilter): Promise<ApiKeyRecord[]> {
    return this.runner.run(async () => {
      const { includeRevoked, beforeId, limit, none } = prepareKeyFilter(filter);
      if (none) return [];
      const values: unknown[] = [limit];
      const where = [includeRevoked ? 'TRUE' : 'revoked_at IS NULL'];
      if (beforeId !== undefined) {
        values.push(beforeId);
        where.push(`(created_at, id) < (SELECT created_at, id FROM ${this.keys} WHERE id = $2)`);
      }
      const result = await this.runner.pool.query<KeyRow>(
        `SELECT * FROM ${this.keys} WHERE ${where.join(' AND ')}
          ORDER BY created_at DESC, id DESC LIMIT $1`,
        values,
      );
      return result.rows.map(toRecord);
    });
  }

  /** One statement: only a key not revoked yet changes, and the row is returned either way. */
  revoke(id: string, at: number): Promise<ApiKeyRecord | undefined> {
    return this.runner.run(async () => {
      const time = timeMs('keys.revoke', 'at', at);
      if (!isKeyId(id)) return undefined;
      const result = await this.runner.pool.query<KeyRow>(
        `WITH changed AS (
           UPDATE ${this.keys} SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING *
         )
         SELECT * FROM changed
         UNION ALL
         SELECT * FROM ${this.keys} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM changed)`,
        [id, time],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  countActive(now: number): Promise<number> {
    return this.runner.run(async () => {
      const at = timeMs('keys.countActive', 'now', now);
      const result = await this.runner.pool.query<{ n: number }>(
        `SELECT count(*) AS n FROM ${this.keys} WHERE ${ACTIVE}`,
        [at],
      );
      return result.rows[0]!.n;
    });
  }

  prune(before: number, limit?: number): Promise<number> {
    return this.runner.run(async () => {
      const [at, most] = pruneArgs('keys.prune', 'before', before, limit);
      const result = await this.runner.pool.query(
        `DELETE FROM ${this.keys} WHERE id IN (
           SELECT id FROM ${this.keys} WHERE revoked_at <= $1 OR expires_at <= $1 LIMIT $2)`,
        [at, most],
      );
      return result.rowCount ?? 0;
    });
  }
}
