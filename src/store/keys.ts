/**
 * The API key contract (docs/architecture.md#identity-and-ownership; docs/security.md#api-keys): one record
 * per key, holding the SHA-256 of its secret (never the secret), what the key may do (scopes, AI limits) and
 * on whose behalf (metadata), and when it stops working (expiry, revocation). Making, parsing and checking
 * the secret is the HTTP edge's (`http/keys/`); the store keeps records and bounds what can grow.
 * Implemented by the SQLite and PostgreSQL stores as `store.keys`; one contract suite (`keys-contract.ts`)
 * runs on both.
 *
 * Times are ms since the epoch, given by the caller (the edge's clock).
 */
import type { PrincipalAiLimits } from '../core/index.js';

/** Bounds of a key record, checked by both backends before anything is written. */
export const API_KEY_BOUNDS = {
  /** Ids: 1 to 64 of `[A-Za-z0-9_-]` (the edge makes 16 hex digits). */
  maxIdLength: 64,
  /** Names: 1 to 100 characters, no control characters (they are printed in terminals). */
  maxNameLength: 100,
  /** Scopes: at most 16, each 1 to 64 of `[A-Za-z0-9_.:-]`. */
  maxScopes: 16,
  maxScopeLength: 64,
  /** Metadata: at most 20 keys of 1 to 64 `[A-Za-z0-9_.-]`, each value 0 to 200 characters, no control characters. */
  maxMetadataKeys: 20,
  maxMetadataKeyLength: 64,
  maxMetadataValueLength: 200,
  /** The AI limits as JSON text: at most 16 KiB. */
  maxAiBytes: 16_384,
  /** Keys neither revoked nor expired: at most 10 000 by default; `create` refuses the next one (409 `too_many_keys`). */
  maxActive: 10_000,
} as const;

/** Default and largest page of `list`. */
export const API_KEY_LIST_DEFAULT_LIMIT = 100;
export const API_KEY_LIST_MAX_LIMIT = 1000;

/** One API key as stored. */
export interface ApiKeyRecord {
  /** Short, random, not secret: printed by `keys list`, part of the key (`bw_<id>_…`) and of its principal id (`key:<id>`). */
  id: string;
  /** For people ("ci-bot", "alice's laptop"); not unique. */
  name: string;
  /** SHA-256 of the key's secret part, 64 lowercase hex digits. */
  hash: string;
  /** Scopes held (core's `SCOPES`; the store keeps any of the allowed shape), without duplicates. */
  scopes: string[];
  /** Metadata bound to the key (`user`, `team`, `plan`, …): what AI rate and spend rules scope by. */
  metadata: Record<string, string>;
  /** True when the key's caller may add metadata through `x-breakwater-metadata` (a trusted backend). */
  trustedBackend: boolean;
  /** The key's own AI gateway limits, or null (the store keeps the JSON; the edge checks its shape). */
  ai: PrincipalAiLimits | null;
  createdAt: number;
  /** When it stops working, or null (never). */
  expiresAt: number | null;
  /** When it was revoked, or null. Kept as first set: revoking again changes nothing. */
  revokedAt: number | null;
}

/** What `create` stores: a record not revoked. */
export type NewApiKey = Omit<ApiKeyRecord, 'revokedAt'>;

/** What `list` returns. */
export interface ApiKeyFilter {
  /** Revoked keys too (default false). Expired keys are always listed. */
  includeRevoked?: boolean;
  /** Page size, floored into [0, 1000] (default 100). */
  limit?: number;
  /** Only keys listed after this one (the previous page's last id); an unknown id matches nothing. */
  beforeId?: string;
}

/** Storage of API keys. After `close()` every method rejects with an Error. */
export interface ApiKeyStore {
  /**
   * Stores a new key. Atomic with its bound: however many creates run at once, in any process, at most
   * `maxActive` keys (default {@link API_KEY_BOUNDS}.maxActive) are active (not revoked, not expired at
   * `createdAt`) after it.
   * @throws RangeError naming the field for a record out of {@link API_KEY_BOUNDS} or a `maxActive` that is
   *   not an integer >= 1 (nothing is written); BreakwaterError `invalid_payload` (status 409,
   *   `details.reason: 'too_many_keys'`, `details.limit`) when the bound is reached; Error when a key with
   *   this id exists.
   */
  create(key: NewApiKey, options?: { maxActive?: number }): Promise<ApiKeyRecord>;

  /** One key (revoked and expired ones too), or undefined. */
  get(id: string): Promise<ApiKeyRecord | undefined>;

  /** Keys, newest first (`createdAt`, then id, descending); see {@link ApiKeyFilter}. */
  list(filter?: ApiKeyFilter): Promise<ApiKeyRecord[]>;

  /**
   * Revokes a key at `at`. Idempotent: a revoked key keeps its first `revokedAt`. Resolves the record as it
   * is now, or undefined for an unknown id.
   * @throws RangeError for an `at` that is not a safe integer.
   */
  revoke(id: string, at: number): Promise<ApiKeyRecord | undefined>;

  /** How many keys are active at `now`: not revoked, and without an expiry or expiring after `now`. */
  countActive(now: number): Promise<number>;

  /**
   * Deletes up to `limit` (default 1000) keys revoked or expired at or before `before` (ms); resolves how many.
   * A deleted key is then refused as unknown rather than as revoked.
   */
  prune(before: number, limit?: number): Promise<number>;
}
