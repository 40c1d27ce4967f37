/**
 * Server-side admin sessions (a session that logout revokes: docs/security.md#admin): the dashboard's login
 * cookie carries a random session id, the store keeps only its hash, and a session lives until it expires or
 * is revoked (logout, "log out everywhere"), so a copied cookie stops working at logout. Deciding what the
 * cookie holds and checking it is the admin check's; the store keeps records and bounds what can grow.
 * Implemented by the SQLite and PostgreSQL stores as `store.sessions`; one contract suite
 * (`sessions-contract.ts`) runs on both.
 *
 * Times are ms since the epoch, given by the caller.
 */

/** Bounds of a session record. */
export const SESSION_BOUNDS = {
  /** The session id's hash: 1 to 128 characters without NUL (SHA-256 hex is 64). */
  maxIdHashLength: 128,
  /** The principal's id (`admin`, `key:<id>`, `oauth:<issuer> <subject>`): 1 to 512 characters without NUL. */
  maxPrincipalIdLength: 512,
  /** The client's address as the edge saw it: at most 100 characters, no control characters. */
  maxClientAddressLength: 100,
  /**
   * Live (unexpired, unrevoked) sessions per principal by default: creating one more revokes the oldest, so
   * logins in a loop cannot grow the table and the newest session always works.
   */
  maxLivePerPrincipal: 1000,
} as const;

/** One session as stored. */
export interface AdminSessionRecord {
  /** A hash of the session id (the cookie's secret part); the id itself is never stored. */
  idHash: string;
  /** The principal that logged in. */
  principalId: string;
  /** The client's address at login, or null. */
  clientAddress: string | null;
  createdAt: number;
  expiresAt: number;
  /** When it was revoked, or null. Kept as first set. */
  revokedAt: number | null;
}

/** What `create` stores. */
export interface NewAdminSession {
  idHash: string;
  principalId: string;
  createdAt: number;
  /** After `createdAt`. */
  expiresAt: number;
  clientAddress?: string | null;
}

/** Storage of admin sessions. After `close()` every method rejects with an Error. */
export interface AdminSessionStore {
  /**
   * Stores a new session. When its principal then has more than `maxLive` (default
   * {@link SESSION_BOUNDS}.maxLivePerPrincipal) live sessions, the oldest are revoked at `createdAt`, in the
   * same transaction; the new one is always kept.
   * @throws RangeError naming the field for a record out of {@link SESSION_BOUNDS}, an `expiresAt` not after
   *   `createdAt`, or a `maxLive` that is not an integer >= 1 (nothing is written); Error when a session
   *   with this hash exists.
   */
  create(session: NewAdminSession, options?: { maxLive?: number }): Promise<AdminSessionRecord>;

  /**
   * One session as stored (revoked and expired ones too, until pruned), or undefined. The caller decides:
   * a session is valid while `revokedAt` is null and `expiresAt` is after now.
   */
  get(idHash: string): Promise<AdminSessionRecord | undefined>;

  /** Revokes one session at `at` (idempotent); resolves the record, or undefined for an unknown hash. */
  revoke(idHash: string, at: number): Promise<AdminSessionRecord | undefined>;

  /** Revokes every live session of `principalId` at `at`; resolves how many were revoked now. */
  revokeAll(principalId: string, at: number): Promise<number>;

  /**
   * Deletes up to `limit` (default 1000) sessions that ended at or before `now`: expired (`expiresAt <= now`)
   * or revoked (`revokedAt <= now`), the earliest ended first; resolves how many. A pruned session reads as
   * unknown (`get` resolves undefined), which refuses its cookie just as its revocation did.
   * @throws RangeError naming `now` (not a safe integer) or `limit` (not an integer >= 0).
   */
  prune(now: number, limit?: number): Promise<number>;
}
