/**
 * The inbound idempotency record contract (docs/operations.md#inbound-idempotency-idempotency-key; IETF
 * httpapi `Idempotency-Key` draft): one record per `(scope, key)`, where `scope` is the client identity, so
 * one client never reads another's stored response. Implemented by the SQLite and PostgreSQL stores as
 * `store.idempotency`; one contract suite (`idempotency-contract.ts`) runs on both.
 *
 * Times are ms since the epoch, read from the store's injected clock.
 */

/** Longest `scope` and `key`, in UTF-16 code units (the draft's recommended key limit). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** A response as stored for replay. */
export interface StoredResponse {
  /** HTTP status, 100..599. */
  status: number;
  /** Headers to replay, lowercase names (the caller chooses which: never `set-cookie` or hop-by-hop ones). */
  headers: Record<string, string>;
  /** The body: UTF-8 text, or base64 of the bytes when `bodyEncoding` is `base64`. */
  body: string;
  bodyEncoding: 'utf8' | 'base64';
}

/** A record as stored. */
export interface IdempotencyRecord {
  /** The client identity the key belongs to (e.g. `token:<hash>`, `ip:127.0.0.1`, `anonymous`): 1..255, no NUL. */
  scope: string;
  /** The client's `Idempotency-Key`: 1..255 characters, no NUL. */
  key: string;
  /** Hash of the request's significant fields (64 hex characters from `core`'s `fingerprint`, or any 1..255). */
  fingerprint: string;
  /** `in_progress` while its owner runs the request; `completed` once the response is stored. */
  state: 'in_progress' | 'completed';
  /** Fencing token of the owner of the current run: `complete` and `release` need it. */
  token: string;
  /** The stored response of a completed record, else null. */
  response: StoredResponse | null;
  createdAt: number;
  updatedAt: number;
  /** While `in_progress`: when its owner is presumed dead, and another request may take the record over. */
  lockedUntil: number;
  /** When the record is forgotten (a request with the key after that starts afresh). */
  expiresAt: number;
}

/** What {@link IdempotencyStore.begin} found. */
export type IdempotencyBegin =
  /**
   * The caller owns the run now: the key was new (or its record had expired), or `takenOver` from an
   * in-progress owner whose lock ran out. Run the request, then `complete` or `release` with `record.token`.
   */
  | { outcome: 'acquired'; record: IdempotencyRecord; takenOver: boolean }
  /** Same fingerprint, another owner still running (lock not expired): answer 409 `idempotency_in_progress`. */
  | { outcome: 'in_progress'; record: IdempotencyRecord }
  /** Same fingerprint, response stored: replay `record.response`. */
  | { outcome: 'completed'; record: IdempotencyRecord }
  /** A different fingerprint under this key (whatever the state): answer 422 `idempotency_key_mismatch`. */
  | { outcome: 'mismatch'; record: IdempotencyRecord };

/** Arguments of {@link IdempotencyStore.begin}. */
export interface IdempotencyClaim {
  scope: string;
  key: string;
  fingerprint: string;
  /** How long the caller's run may hold the record before another request may take it over, ms (> 0). */
  lockMs: number;
  /**
   * How long the record lives from its creation, ms (> `lockMs`; default 24 h,
   * docs/architecture.md#defaults). A record must outlive the lock of its run: one that expired counts as
   * absent, so the next request with the key would run again while the first still runs, and neither response
   * would be replayed.
   */
  ttlMs: number;
}

/** Who holds a run: the scope, key and fencing token of an acquired record. */
export interface IdempotencyRef {
  scope: string;
  key: string;
  token: string;
}

/**
 * Storage of inbound idempotency records. Every method is one atomic step (a unique constraint or a
 * conditional write decides, never a check-then-insert), so of 50 concurrent `begin`s of one new key exactly
 * one is `acquired`. After the store's `close()` every method rejects with an Error.
 */
export interface IdempotencyStore {
  /**
   * Claims `(scope, key)` for a run, or reports why not. An expired record (`expiresAt` passed) counts as
   * absent and is replaced. An `in_progress` record with the same fingerprint whose `lockedUntil` passed is
   * taken over: a new token, `lockedUntil` renewed, `takenOver: true` (its old owner's `complete` then fails).
   * @throws RangeError for a scope, key or fingerprint that is empty, too long or holds NUL, a `lockMs` /
   *   `ttlMs` that is not a positive finite number, or a `ttlMs` not greater than `lockMs`; nothing written.
   */
  begin(claim: IdempotencyClaim): Promise<IdempotencyBegin>;

  /**
   * Stores the response and marks the record `completed`, if `ref.token` still owns it in progress.
   * @returns true when stored; false when the record is gone, completed, or owned by another token.
   * @throws RangeError for a response whose status is not an integer 100..599.
   */
  complete(ref: IdempotencyRef, response: StoredResponse): Promise<boolean>;

  /**
   * Deletes the in-progress record `ref.token` owns (the run failed in a way the client may retry, e.g. the
   * request never started its work), so the next request with the key starts afresh.
   * @returns true when deleted; false when not owned by that token.
   */
  release(ref: IdempotencyRef): Promise<boolean>;

  /** The live record of `(scope, key)`, or undefined (absent or expired). */
  get(scope: string, key: string): Promise<IdempotencyRecord | undefined>;

  /** Deletes up to `limit` (default 1000) expired records; resolves how many. */
  prune(limit?: number): Promise<number>;
}
