import { timingSafeEqual } from 'node:crypto';
import {
  BreakwaterError,
  NON_NEGATIVE,
  clockOption,
  finite,
  invalidOption,
  POSITIVE_INTEGER,
  type Clock,
  type Principal,
} from '../../core/index.js';
import { API_KEY_BOUNDS, type ApiKeyFilter, type ApiKeyRecord, type ApiKeyStore } from '../../store/index.js';
import { generateKey, hashSecret, parseKey } from './format.js';
import { checkApiKeyInput, type ApiKeyInput } from './input.js';

/** Options of {@link createApiKeys}; validated at once (a RangeError names the option). */
export interface ApiKeysOptions {
  /** The store whose `keys` facet holds the records. */
  store: { readonly keys: ApiKeyStore };
  /** Where times come from (default the system clock; tests pass a `FakeClock`). */
  clock?: Clock;
  /**
   * How long a key looked up by {@link ApiKeys.verify} is answered from memory, ms (default 5 000; 0: every
   * verification reads the store). This is how long a revocation made by another process (another gateway,
   * `breakwater keys revoke`) takes to reach this one; a revocation through this instance's
   * {@link ApiKeys.revoke} takes effect here at once. Expiry is checked on every verification.
   */
  cacheMs?: number;
  /** Most keys held in that cache (default 10 000); past it the oldest entry goes. */
  maxCachedKeys?: number;
  /** Most active keys the store may hold (default `API_KEY_BOUNDS.maxActive`, 10 000). */
  maxActive?: number;
}

/** Defaults of {@link ApiKeysOptions}. */
export const API_KEYS_DEFAULTS = { cacheMs: 5_000, maxCachedKeys: 10_000 } as const;

/** A key just made: its full text, shown once and never again, and what was stored. */
export interface CreatedApiKey {
  /** `bw_<id>_<secret>`: give it to the client now; only its hash is kept. */
  key: string;
  record: ApiKeyRecord;
}

/** API keys over a store: create, list, revoke, and verify a presented key into a {@link Principal}. */
export interface ApiKeys {
  /**
   * Makes a key (fresh random id and secret) and stores its hash.
   * @throws BreakwaterError `invalid_payload`: 400 (`details.reason: 'invalid_key_input'`, `field`, `issues`)
   *   for a bad input; 409 (`too_many_keys`) past the bound of active keys.
   */
  create(input: ApiKeyInput): Promise<CreatedApiKey>;
  /** One key (revoked and expired ones too), or undefined. */
  get(id: string): Promise<ApiKeyRecord | undefined>;
  /** Keys, newest first (see the store's `ApiKeyFilter`: revoked only with `includeRevoked`). */
  list(filter?: ApiKeyFilter): Promise<ApiKeyRecord[]>;
  /**
   * Revokes a key now (idempotent: a revoked key keeps its first time); refused by this instance's
   * {@link verify} from now on, by other processes within their `cacheMs`. Resolves the record, or undefined
   * for an unknown id.
   */
  revoke(id: string): Promise<ApiKeyRecord | undefined>;
  /** How many keys are active now (the gateway decides its auth mode from it at startup). */
  countActive(): Promise<number>;
  /**
   * The principal of a presented key (`kind: 'api_key'`, `id: 'key:<id>'`, the key's name, scopes,
   * metadata, trusted-backend flag and AI limits). The secret is compared by hash, in constant time.
   * @throws BreakwaterError `unauthorized` (401) with `details.reason`: `invalid_key` (not a key's shape, no
   *   such id, or the wrong secret: one message for all, which never repeats what was presented); `revoked`
   *   or `expired` (only once the secret matched). The store's error when it cannot be read.
   */
  verify(presented: string): Promise<Principal>;
}

/** Compared against when the id is unknown, so a miss costs what a wrong secret does. */
const NO_HASH = Buffer.alloc(32);

/** What the cache holds for one id: the record as read, until when it may be used. */
interface CacheEntry {
  record: ApiKeyRecord;
  until: number;
}

/**
 * API keys over `store.keys` (docs/security.md#api-keys; the key format is in `format.ts`).
 * @throws RangeError naming a bad option.
 */
export function createApiKeys(options: ApiKeysOptions): ApiKeys {
  const owner = 'createApiKeys';
  const store = options?.store?.keys;
  if (typeof store?.get !== 'function') {
    throw invalidOption(owner, 'store', 'an object with a keys facet (a Breakwater store)', options?.store);
  }
  const clock = clockOption(owner, options.clock);
  const cacheMs = finite(owner, 'cacheMs', options.cacheMs ?? API_KEYS_DEFAULTS.cacheMs, NON_NEGATIVE);
  const maxCached = finite(
    owner,
    'maxCachedKeys',
    options.maxCachedKeys ?? API_KEYS_DEFAULTS.maxCachedKeys,
    POSITIVE_INTEGER,
  );
  const maxActive = finite(
    owner,
    'maxActive',
    options.maxActive ?? API_KEY_BOUNDS.maxActive,
    POSITIVE_INTEGER,
  );

  const cache = new Map<string, CacheEntry>();
  const inflight = new Map<string, Promise<ApiKeyRecord | undefined>>();
  // Bumped when a revoke here starts and when it ends: a lookup in flight across either does not fill the
  // cache, so a record read before a revocation committed is never served after it.
  let revocations = 0;

  const remember = (record: ApiKeyRecord, now: number) => {
    if (cacheMs === 0) return;
    cache.delete(record.id);
    if (cache.size >= maxCached) cache.delete(cache.keys().next().value!);
    cache.set(record.id, { record, until: now + cacheMs });
  };

  const lookup = (id: string): Promise<ApiKeyRecord | undefined> => {
    const now = clock.now();
    const cached = cache.get(id);
    if (cached !== undefined && now < cached.until) return Promise.resolve(cached.record);
    // Concurrent verifications of one key share one read.
    let pending = inflight.get(id);
    if (pending === undefined) {
      const seen = revocations;
      pending = store.get(id).then(
        (record) => {
          if (inflight.get(id) === pending) inflight.delete(id);
          if (record !== undefined && seen === revocations) remember(record, clock.now());
          return record;
        },
        (error: unknown) => {
          if (inflight.get(id) === pending) inflight.delete(id);
          throw error;
        },
      );
      inflight.set(id, pending);
    }
    return pending;
  };

  return {
    async create(input) {
      const now = clock.now();
      const checked = checkApiKeyInput(input, now);
      const { key, id, hash } = generateKey();
      const record = await store.create({ id, hash, createdAt: now, ...checked }, { maxActive });
      return { key, record };
    },

    get: (id) => store.get(id),

    list: (filter) => store.list(filter),

    async revoke(id) {
      revocations++;
      cache.delete(id);
      inflight.delete(id);
      try {
        return await store.revoke(id, clock.now());
      } finally {
        // What a lookup read while the write was under way may predate it: dropped if it landed in the
        // cache already, and kept out of it if it lands later.
        revocations++;
        cache.delete(id);
        inflight.delete(id);
      }
    },

    countActive: () => store.countActive(clock.now()),

    async verify(presented) {
      const parsed = parseKey(presented);
      if (parsed === undefined) throw refused('invalid_key');
      const record = await lookup(parsed.id);
      const presentedHash = hashSecret(parsed.secret);
      const storedHash = record === undefined ? NO_HASH : Buffer.from(record.hash, 'hex');
      const matches = timingSafeEqual(presentedHash, storedHash);
      if (!matches || record === undefined) throw refused('invalid_key');
      if (record.revokedAt !== null) throw refused('revoked', record);
      const now = clock.now();
      if (record.expiresAt !== null && now >= record.expiresAt) throw refused('expired', record);
      return principalOf(record);
    },
  };
}

function refused(reason: 'invalid_key' | 'revoked' | 'expired', record?: ApiKeyRecord): BreakwaterError {
  const message =
    reason === 'invalid_key'
      ? 'The API key is not valid.'
      : reason === 'revoked'
        ? `The API key ${record!.id} was revoked.`
        : `The API key ${record!.id} expired at ${new Date(record!.expiresAt!).toISOString()}.`;
  return new BreakwaterError('unauthorized', { status: 401, message, details: { reason } });
}

/** The principal of a verified key: frozen, its collections copied. */
export function principalOf(record: ApiKeyRecord): Principal {
  return Object.freeze({
    id: `key:${record.id}`,
    kind: 'api_key' as const,
    name: record.name,
    scopes: new Set(record.scopes),
    metadata: Object.freeze({ ...record.metadata }),
    trustedBackend: record.trustedBackend,
    ...(record.ai === null ? {} : { ai: record.ai }),
  });
}
