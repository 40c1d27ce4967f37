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
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

/** The `admin_sessions` columns under {@link AdminSessionRecord}'s names. */
const SESSION_COLUMNS = `id_hash AS idHash, principal_id AS principalId, client_address AS clientAddress,
  created_at AS createdAt, expires_at AS expiresAt, revoked_at AS revokedAt`;

/**
 * Prepares `AdminSessionStore.create`, in one `BEGIN IMMEDIATE` transaction: the insert (the primary key
 * decides a duplicate), then the revocation of the principal's live sessions beyond the newest
 * `maxLivePerPrincipal` (the new one always kept), so the bound holds whatever runs at once.
 */
function prepareCreate(
  ctx: SqliteContext,
): (session: Required<NewAdminSession>, maxLive: number) => AdminSessionRecord {
  const insert = ctx.db.prepare<[Required<NewAdminSession>]>(
    `INSERT INTO admin_sessions (id_hash, principal_id, client_address, created_at, expires_at, revoked_at)
     VALUES (@idHash, @principalId, @clientAddress, @createdAt, @expiresAt, NULL)
     ON CONFLICT (id_hash) DO NOTHING`,
  );
  const evict = ctx.db.prepare<[{ principalId: string; idHash: string; at: number; keep: number }]>(
    `UPDATE admin_sessions SET revoked_at = @at
      WHERE id_hash IN (
        SELECT id_hash FROM admin_sessions
         WHERE principal_id = @principalId AND revoked_at IS NULL AND expires_at > @at
         ORDER BY id_hash = @idHash DESC, created_at DESC, id_hash DESC
         LIMIT -1 OFFSET @keep)`,
  );
  return ctx.db.transaction((session: Required<NewAdminSession>, maxLive: number): AdminSessionRecord => {
    if (insert.run(session).changes === 0) throw duplicateSession();
    evict.run({
      principalId: session.principalId,
      idHash: session.idHash,
      at: session.createdAt,
      keep: maxLive,
    });
    return { ...session, revokedAt: null };
  }).immediate;
}

/**
 * `store.sessions` on SQLite. Not group-committed: a login or a logout is one small write, run alone after
 * the queued group-commit work; `get` is one primary-key read.
 */
export class SqliteAdminSessionStore implements AdminSessionStore {
  private readonly createTx: (session: Required<NewAdminSession>, maxLive: number) => AdminSessionRecord;
  private readonly getStmt: (idHash: string) => AdminSessionRecord | undefined;
  private readonly revokeTx: (idHash: string, at: number) => AdminSessionRecord | undefined;
  private readonly revokeAllStmt: (principalId: string, at: number) => number;
  private readonly pruneStmt: (now: number, limit: number) => number;

  constructor(private readonly runner: SqliteRunner) {
    const db = runner.ctx.db;
    this.createTx = prepareCreate(runner.ctx);
    const get = db.prepare<[string], AdminSessionRecord>(
      `SELECT ${SESSION_COLUMNS} FROM admin_sessions WHERE id_hash = ?`,
    );
    const revoke = db.prepare<[number, string]>(
      'UPDATE admin_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL',
    );
    const revokeAll = db.prepare<[{ principalId: string; at: number }]>(
      `UPDATE admin_sessions SET revoked_at = @at
        WHERE principal_id = @principalId AND revoked_at IS NULL AND expires_at > @at`,
    );
    // Ended sessions, earliest ended first. The revoked ones are found by a scan (only unrevoked rows are
    // indexed by principal): the table holds at most each principal's live bound plus what ended since the
    // previous prune, which the admin check runs at every login.
    const prune = db.prepare<[{ now: number; limit: number }]>(
      `DELETE FROM admin_sessions WHERE id_hash IN (
         SELECT id_hash FROM admin_sessions
          WHERE expires_at <= @now OR revoked_at <= @now
          ORDER BY MIN(expires_at, COALESCE(revoked_at, expires_at)), id_hash
          LIMIT @limit)`,
    );
    this.getStmt = (idHash) => get.get(idHash);
    this.revokeTx = db.transaction((idHash: string, at: number) => {
      revoke.run(at, idHash);
      return get.get(idHash);
    });
    this.revokeAllStmt = (principalId, at) => revokeAll.run({ principalId, at }).changes;
    this.pruneStmt = (now, limit) => prune.run({ now, limit }).changes;
  }

  create(session: NewAdminSession, options?: { maxLive?: number }): Promise<AdminSessionRecord> {
    return this.runner.write(() => {
      const maxLive = bound(
        'sessions.create',
        'maxLive',
        options?.maxLive,
        SESSION_BOUNDS.maxLivePerPrincipal,
      );
      return this.createTx(prepareSession(session), maxLive);
    });
  }

  get(idHash: string): Promise<AdminSessionRecord | undefined> {
    return this.runner.read(() => (isSessionHash(idHash) ? this.getStmt(idHash) : undefined));
  }

  revoke(idHash: string, at: number): Promise<AdminSessionRecord | undefined> {
    return this.runner.write(() => {
      const time = timeMs('sessions.revoke', 'at', at);
      return isSessionHash(idHash) ? this.revokeTx(idHash, time) : undefined;
    });
  }

  revokeAll(principalId: string, at: number): Promise<number> {
    return this.runner.write(() => {
      const time = timeMs('sessions.revokeAll', 'at', at);
      return isPrincipalId(principalId) ? this.revokeAllStmt(principalId, time) : 0;
    });
  }

  prune(now: number, limit?: number): Promise<number> {
    return this.runner.write(() => this.pruneStmt(...pruneArgs('sessions.prune', 'now', now, limit)));
  }
}
