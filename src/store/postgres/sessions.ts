import {
  bound,
  duplicateSession,
  isPrincipalId,
  isSessionHash,
  prepareSession,
  pruneArgs,
  timeMs,
} from '../credential-checks.js';
import {
  SESSION_BOUNDS,
  type AdminSessionRecord,
  type AdminSessionStore,
  type NewAdminSession,
} from '../sessions.js';
import { withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** An `admin_sessions` row (`SELECT *`): BIGINT already a number. */
interface SessionRow {
  id_hash: string;
  principal_id: string;
  client_address: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

function toRecord(row: SessionRow): AdminSessionRecord {
  return {
    idHash: row.id_hash,
    principalId: row.principal_id,
    clientAddress: row.client_address,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/**
 * `store.sessions` on PostgreSQL. `create` is one transaction under an advisory lock of the principal
 * (creates of one principal take turns, so the bound on its live sessions holds); every other method is one
 * statement.
 */
export class PostgresAdminSessionStore implements AdminSessionStore {
  private readonly sessions: string;

  constructor(private readonly runner: PgRunner) {
    this.sessions = runner.table('admin_sessions');
  }

  /**
   * The insert (the primary key decides a duplicate), then the revocation of the principal's live sessions
   * beyond the newest `maxLivePerPrincipal`, the new one always kept.
   */
  create(session: NewAdminSession, options?: { maxLive?: number }): Promise<AdminSessionRecord> {
    return this.runner.run(() => {
      const maxLive = bound(
        'sessions.create',
        'maxLive',
        options?.maxLive,
        SESSION_BOUNDS.maxLivePerPrincipal,
      );
      const s = prepareSession(session);
      return withTransaction(this.runner.pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
          `breakwater:admin_sessions:${this.runner.schema}:${s.principalId}`,
        ]);
        const inserted = await client.query<SessionRow>(
          `INSERT INTO ${this.sessions}
             (id_hash, principal_id, client_address, created_at, expires_at, revoked_at)
           VALUES ($1, $2, $3, $4, $5, NULL)
           ON CONFLICT (id_hash) DO NOTHING
           RETURNING *`,
          [s.idHash, s.principalId, s.clientAddress, s.createdAt, s.expiresAt],
        );
        const row = inserted.rows[0];
        if (row === undefined) throw duplicateSession();
        await client.query(
          `UPDATE ${this.sessions} SET revoked_at = $3
            WHERE id_hash IN (
              SELECT id_hash FROM ${this.sessions}
               WHERE principal_id = $1 AND revoked_at IS NULL AND expires_at > $3
               ORDER BY id_hash = $2 DESC, created_at DESC, id_hash DESC
               OFFSET $4)`,
          [s.principalId, s.idHash, s.createdAt, maxLive],
        );
        return toRecord(row);
      });
    });
  }

  get(idHash: string): Promise<AdminSessionRecord | undefined> {
    return this.runner.run(async () => {
      if (!isSessionHash(idHash)) return undefined;
      const result = await this.runner.pool.query<SessionRow>(
        `SELECT * FROM ${this.sessions} WHERE id_hash = $1`,
        [idHash],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  revoke(idHash: string, at: number): Promise<AdminSessionRecord | undefined> {
    return this.runner.run(async () => {
      const time = timeMs('sessions.revoke', 'at', at);
      if (!isSessionHash(idHash)) return undefined;
      const result = await this.runner.pool.query<SessionRow>(
        `WITH changed AS (
           UPDATE ${this.sessions} SET revoked_at = $2 WHERE id_hash = $1 AND revoked_at IS NULL RETURNING *
         )
         SELECT * FROM changed
         UNION ALL
         SELECT * FROM ${this.sessions} WHERE id_hash = $1 AND NOT EXISTS (SELECT 1 FROM changed)`,
        [idHash, time],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }

  revokeAll(principalId: string, at: number): Promise<number> {
    return this.runner.run(async () => {
      const time = timeMs('sessions.revokeAll', 'at', at);
      if (!isPrincipalId(principalId)) return 0;
      const result = await this.runner.pool.query(
        `UPDATE ${this.sessions} SET revoked_at = $2
          WHERE principal_id = $1 AND revoked_at IS NULL AND expires_at > $2`,
        [principalId, time],
      );
      return result.rowCount ?? 0;
    });
  }

  prune(now: number, limit?: number): Promise<number> {
    return this.runner.run(async () => {
      const [at, most] = pruneArgs('sessions.prune', 'now', now, limit);
      // Ended sessions, earliest ended first (LEAST skips a NULL revoked_at). The revoked ones are found by
      // a scan (only unrevoked rows are indexed by principal): the table holds at most each principal's live
      // bound plus what ended since the previous prune, which the admin check runs at every login.
      const result = await this.runner.pool.query(
        `DELETE FROM ${this.sessions} WHERE id_hash IN (
           SELECT id_hash FROM ${this.sessions}
            WHERE expires_at <= $1 OR revoked_at <= $1
            ORDER BY LEAST(expires_at, revoked_at), id_hash
            LIMIT $2)`,
        [at, most],
      );
      return result.rowCount ?? 0;
    });
  }
}
