/**
 * Dashboard sessions kept server-side (a session that logout revokes: docs/security.md#admin), over the
 * store's `sessions` facet (`store/sessions.ts`), so every gateway on one store shares them.
 *
 * - **The id.** A login gets 32 random bytes (256 bits) as 43 base64url characters: the cookie's whole value.
 *   The store keeps only `HMAC-SHA-256(key: the admin token, "breakwater-admin-session:" + id)` in hex, so
 *   neither a copy of the table nor a log of it lets anyone present a session, or learn anything of the token.
 * - **A new admin token ends every session.** The stored hash is keyed by the token: once the gateway runs
 *   with another token, no cookie hashes to a stored row any more and each is refused as `session_unknown`.
 *   The old rows are never read again and are pruned when they expire. (Were the old token itself put back
 *   before they expire, its sessions would work again: a token is changed because it leaked, and the leaked
 *   one then opens everything anyway.)
 * - **Logout** revokes the row (`revokedAt`): the same cookie, copied anywhere, is refused from then on, by
 *   every gateway on the store.
 * - **Bounds.** At most `maxSessions` (default 100) live sessions at once: a login beyond them revokes the
 *   oldest, so the newest login always works and a script logging in a loop cannot grow the table; the
 *   displaced browser gets 401 `session_revoked` on its next request. Each login first deletes up to 1 000
 *   ended (expired or revoked) rows, so the table holds about `maxSessions` rows plus the logouts since the
 *   last login. Only the admin token logs in, so the bound is per principal (`admin`) and in all alike.
 *
 * Every check reads the store once (one primary-key read; no cache, so a logout on one gateway ends the
 * session on all at once).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { BreakwaterError, classify, PRINCIPALS, type Clock } from '../../core/index.js';
import { SESSION_BOUNDS, type AdminSessionRecord, type AdminSessionStore } from '../../store/index.js';

/** Defaults of the admin sessions. */
export const ADMIN_SESSION_DEFAULTS = {
  /** Live sessions at once; a login beyond them revokes the oldest. */
  maxSessions: 100,
  /** Random bytes in a session id (256 bits; OWASP asks for at least 64 bits of entropy). */
  idBytes: 32,
  /** Ended sessions deleted at each login, at most. */
  pruneLimit: 1_000,
} as const;

/** A session id as the cookie carries it: base64url of {@link ADMIN_SESSION_DEFAULTS}.idBytes bytes. */
const SESSION_ID = /^[\w-]{43}$/;

/** Why a session cookie was refused (`details.reason` of the 401). */
export type SessionRefusal = 'session_unknown' | 'session_revoked' | 'session_expired';

/** A session just opened. */
export interface OpenedSession {
  /** The cookie's value; never stored. */
  id: string;
  /** ms since the epoch. */
  expiresAt: number;
}

/** The dashboard's sessions (token mode). */
export interface AdminSessions {
  /**
   * Opens a session of the `admin` principal: deletes ended sessions (up to 1 000), then stores the new one,
   * revoking the oldest live ones beyond `maxSessions`.
   * @throws BreakwaterError `upstream_unavailable` (503) when the store failed (no session was opened).
   */
  open(clientAddress: string | undefined): Promise<OpenedSession>;
  /**
   * The live session of a cookie's value.
   * @throws BreakwaterError `unauthorized` (401, `details.reason` a {@link SessionRefusal}): no such session
   *   (never made, pruned, made with another admin token, or not a session id at all), revoked, or expired
   *   (`expiresAt <= now`); `upstream_unavailable` (503) when the store failed.
   */
  verify(id: string): Promise<AdminSessionRecord>;
  /**
   * Revokes the session of a cookie's value; resolves true when a live session ended now (false for an
   * unknown, revoked or expired one).
   * @throws BreakwaterError `upstream_unavailable` (503) when the store failed.
   */
  revoke(id: string): Promise<boolean>;
}

/** Options of {@link createAdminSessions}; checked by the admin check that makes them. */
export interface AdminSessionsOptions {
  store: AdminSessionStore;
  /** The admin token: the key of the stored hashes. */
  token: string;
  /** A session's lifetime, ms. */
  ttlMs: number;
  /** Live sessions at once (an integer >= 1). */
  maxSessions: number;
  clock: Clock;
}

/** Creates the sessions of an admin check. */
export function createAdminSessions(options: AdminSessionsOptions): AdminSessions {
  const { store, token, ttlMs, maxSessions, clock } = options;
  const principalId = PRINCIPALS.admin.id;
  const hash = (id: string) =>
    createHmac('sha256', token).update(`breakwater-admin-session:${id}`).digest('hex');

  return {
    async open(clientAddress) {
      const now = clock.now();
      const id = randomBytes(ADMIN_SESSION_DEFAULTS.idBytes).toString('base64url');
      const expiresAt = now + Math.ceil(ttlMs);
      await stored(async () => {
        await store.prune(now, ADMIN_SESSION_DEFAULTS.pruneLimit);
        await store.create(
          { idHash: hash(id), principalId, createdAt: now, expiresAt, clientAddress: address(clientAddress) },
          { maxLive: maxSessions },
        );
      });
      return { id, expiresAt };
    },

    async verify(id) {
      if (!SESSION_ID.test(id)) throw refused('session_unknown', maxSessions);
      const record = await stored(() => store.get(hash(id)));
      if (record === undefined) throw refused('session_unknown', maxSessions);
      if (record.revokedAt !== null) throw refused('session_revoked', maxSessions);
      if (record.expiresAt <= clock.now()) throw refused('session_expired', maxSessions);
      return record;
    },

    async revoke(id) {
      if (!SESSION_ID.test(id)) return false;
      const now = clock.now();
      const idHash = hash(id);
      const record = await stored(() => store.get(idHash));
      if (record === undefined || record.revokedAt !== null || record.expiresAt <= now) return false;
      await stored(() => store.revoke(idHash, now));
      return true;
    },
  };
}

/** The client's address as the store takes it: at most its bound, without control characters. */
function address(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  // eslint-disable-next-line no-control-regex -- the store refuses them; an address never has any
  const clean = value.replace(/[\u0000-\u001f\u007f]/g, '');
  return clean.slice(0, SESSION_BOUNDS.maxClientAddressLength) || null;
}

const REFUSALS: Record<SessionRefusal, (maxSessions: number) => string> = {
  session_unknown: () =>
    'This admin session is not known (it ended, or was made with another admin token); log in again at /admin/login.',
  session_revoked: (maxSessions) =>
    `This admin session was ended (logged out, or replaced by newer logins beyond the ${maxSessions} allowed at once); log in again at /admin/login.`,
  session_expired: () => 'This admin session expired; log in again at /admin/login.',
};

function refused(reason: SessionRefusal, maxSessions: number): BreakwaterError {
  return new BreakwaterError('unauthorized', {
    status: 401,
    message: REFUSALS[reason](maxSessions),
    details: { reason },
  });
}

/**
 * Runs a store call; a failure of the store is 503 `upstream_unavailable` (the request is refused, nothing
 * is let in), a programming error stays what it is (500).
 */
async function stored<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof BreakwaterError || classify(error).kind === 'fatal') throw error;
    throw new BreakwaterError('upstream_unavailable', {
      message: 'The admin session store is unavailable; try again shortly.',
      source: 'admin-sessions',
      cause: error,
    });
  }
}
