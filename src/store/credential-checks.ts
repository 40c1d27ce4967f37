import { BreakwaterError, invalidOption } from '../core/index.js';
import { isStoreKey, pageLimit } from './checks.js';
import {
  API_KEY_BOUNDS,
  API_KEY_LIST_DEFAULT_LIMIT,
  API_KEY_LIST_MAX_LIMIT,
  type ApiKeyFilter,
  type NewApiKey,
} from './keys.js';
import { SESSION_BOUNDS, type NewAdminSession } from './sessions.js';

/**
 * Argument checks of the key and session stores, shared by both backends so they accept and refuse exactly
 * the same input, always before anything is written. Internal to `store/`.
 */

const KEY_ID = new RegExp(`^[A-Za-z0-9_-]{1,${API_KEY_BOUNDS.maxIdLength}}$`);
const SCOPE = new RegExp(`^[A-Za-z0-9_.:-]{1,${API_KEY_BOUNDS.maxScopeLength}}$`);
const METADATA_KEY = new RegExp(`^[A-Za-z0-9_.-]{1,${API_KEY_BOUNDS.maxMetadataKeyLength}}$`);
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** C0 and C1 control characters (NUL, ESC, newline, …): refused in names and values printed in terminals. */
const CONTROL = /\p{Cc}/u;

/** An id a key can have: 1 to 64 of `[A-Za-z0-9_-]` (reads of anything else find nothing). */
export function isKeyId(id: unknown): id is string {
  return typeof id === 'string' && KEY_ID.test(id);
}

/** A safe integer time in ms. @throws RangeError naming `owner` and `field`. */
export function timeMs(owner: string, field: string, value: unknown): number {
  if (Number.isSafeInteger(value)) return value as number;
  throw invalidOption(owner, field, 'a safe integer (ms)', value);
}

/** Text without control characters, 1 (or `min`) to `max` characters. */
function text(owner: string, field: string, value: unknown, max: number, min = 1): string {
  if (typeof value === 'string' && value.length >= min && value.length <= max && !CONTROL.test(value)) {
    return value;
  }
  throw invalidOption(
    owner,
    field,
    `a string of ${min} to ${max} characters without control characters`,
    value,
  );
}

/** A new key checked and serialized: what both backends insert. */
export interface PreparedApiKey {
  id: string;
  name: string;
  hash: string;
  /** JSON text of the scopes (deduplicated, in order). */
  scopes: string;
  /** JSON text of the metadata. */
  metadata: string;
  trustedBackend: boolean;
  /** JSON text of the AI limits, or null. */
  ai: string | null;
  createdAt: number;
  expiresAt: number | null;
}

/** @throws RangeError naming the field, as `ApiKeyStore.create` documents. */
export function prepareApiKey(key: NewApiKey): PreparedApiKey {
  const owner = 'keys.create';
  const b = API_KEY_BOUNDS;
  if (typeof key !== 'object' || key === null) throw invalidOption(owner, 'key', 'an object', key);
  if (!isKeyId(key.id)) throw invalidOption(owner, 'id', `1 to ${b.maxIdLength} of [A-Za-z0-9_-]`, key.id);
  if (typeof key.hash !== 'string' || !SHA256_HEX.test(key.hash)) {
    throw invalidOption(owner, 'hash', '64 lowercase hex digits (SHA-256)', key.hash);
  }
  if (!Array.isArray(key.scopes) || key.scopes.length > b.maxScopes) {
    throw invalidOption(owner, 'scopes', `an array of at most ${b.maxScopes} scopes`, key.scopes);
  }
  for (const scope of key.scopes as unknown[]) {
    if (typeof scope !== 'string' || !SCOPE.test(scope)) {
      throw invalidOption(owner, 'scopes', `scopes of 1 to ${b.maxScopeLength} [A-Za-z0-9_.:-]`, scope);
    }
  }
  if (typeof key.trustedBackend !== 'boolean') {
    throw invalidOption(owner, 'trustedBackend', 'a boolean', key.trustedBackend);
  }
  const createdAt = timeMs(owner, 'createdAt', key.createdAt);
  let expiresAt: number | null = null;
  if (key.expiresAt !== null) {
    expiresAt = timeMs(owner, 'expiresAt', key.expiresAt);
    if (expiresAt <= createdAt) throw invalidOption(owner, 'expiresAt', 'null or after createdAt', expiresAt);
  }
  return {
    id: key.id,
    name: text(owner, 'name', key.name, b.maxNameLength),
    hash: key.hash,
    scopes: JSON.stringify([...new Set(key.scopes)]),
    metadata: metadataText(owner, key.metadata),
    trustedBackend: key.trustedBackend,
    ai: aiText(owner, key.ai),
    createdAt,
    expiresAt,
  };
}

function metadataText(owner: string, metadata: unknown): string {
  const b = API_KEY_BOUNDS;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw invalidOption(owner, 'metadata', 'an object of strings', metadata);
  }
  const entries = Object.entries(metadata);
  if (entries.length > b.maxMetadataKeys) {
    throw invalidOption(owner, 'metadata', `an object of at most ${b.maxMetadataKeys} keys`, entries.length);
  }
  const copy: Record<string, string> = {};
  for (const [key, value] of entries) {
    // `__proto__` would be a prototype, not a key, in every reader's plain object.
    if (!METADATA_KEY.test(key) || key === '__proto__') {
      throw invalidOption(owner, 'metadata key', `1 to ${b.maxMetadataKeyLength} of [A-Za-z0-9_.-]`, key);
    }
    copy[key] = text(owner, `metadata.${key}`, value, b.maxMetadataValueLength, 0);
  }
  return JSON.stringify(copy);
}

function aiText(owner: string, ai: unknown): string | null {
  if (ai === null) return null;
  if (typeof ai !== 'object' || Array.isArray(ai)) throw invalidOption(owner, 'ai', 'null or an object', ai);
  let json: string | undefined;
  try {
    json = JSON.stringify(ai);
  } catch (cause) {
    throw new RangeError(`${owner}: ai must be JSON (${(cause as Error).message})`, { cause });
  }
  if (json === undefined || Buffer.byteLength(json) > API_KEY_BOUNDS.maxAiBytes) {
    throw invalidOption(
      owner,
      'ai',
      `JSON of at most ${API_KEY_BOUNDS.maxAiBytes} bytes`,
      `${json?.length} characters`,
    );
  }
  return json;
}

/**
 * A create's bound: `value`, or `fallback` when undefined.
 * @throws RangeError naming `owner` and `field` unless it is an integer >= 1.
 */
export function bound(owner: string, field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (Number.isSafeInteger(value) && value >= 1) return value;
  throw invalidOption(owner, field, 'an integer >= 1', value);
}

/** The error of a create over the bound of active keys. */
export function tooManyKeys(limit: number): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    status: 409,
    message: `There are ${limit} active API keys, the most allowed: revoke unused keys before creating more.`,
    details: { reason: 'too_many_keys', limit },
  });
}

/** The error of a create whose id is taken. */
export function duplicateKey(id: string): Error {
  return new Error(`keys.create: a key with id ${id} exists`);
}

/** `list`'s filter checked. */
export interface PreparedKeyFilter {
  includeRevoked: boolean;
  limit: number;
  /** Undefined: from the newest. */
  beforeId: string | undefined;
  /** True when nothing can match (a limit of 0, or a `beforeId` no key can have). */
  none: boolean;
}

/** @throws RangeError for an `includeRevoked` that is not a boolean or a `beforeId` that is not a string. */
export function prepareKeyFilter(filter: ApiKeyFilter = {}): PreparedKeyFilter {
  const owner = 'keys.list';
  const { includeRevoked = false, beforeId } = filter;
  if (typeof includeRevoked !== 'boolean') {
    throw invalidOption(owner, 'includeRevoked', 'a boolean', includeRevoked);
  }
  if (beforeId !== undefined && typeof beforeId !== 'string') {
    throw invalidOption(owner, 'beforeId', 'a string', beforeId);
  }
  const limit = pageLimit(filter.limit, API_KEY_LIST_DEFAULT_LIMIT, API_KEY_LIST_MAX_LIMIT);
  return {
    includeRevoked,
    limit,
    beforeId,
    none: limit === 0 || (beforeId !== undefined && !isKeyId(beforeId)),
  };
}

/** Default `limit` of both stores' `prune`. */
export const PRUNE_DEFAULT_LIMIT = 1000;

/** `prune`'s arguments. @throws RangeError for a time that is not a safe integer or a negative limit. */
export function pruneArgs(
  owner: string,
  field: string,
  time: number,
  limit: number | undefined,
): [number, number] {
  const at = timeMs(owner, field, time);
  const most = limit ?? PRUNE_DEFAULT_LIMIT;
  if (!(Number.isSafeInteger(most) && most >= 0))
    throw invalidOption(owner, 'limit', 'an integer >= 0', limit);
  return [at, most];
}

// ---- sessions -------------------------------------------------------------------------------------------

/** A session hash the store can hold (reads of anything else find nothing). */
export function isSessionHash(value: unknown): value is string {
  return isStoreKey(value, SESSION_BOUNDS.maxIdHashLength);
}

/** A principal id the store can hold. */
export function isPrincipalId(value: unknown): value is string {
  return isStoreKey(value, SESSION_BOUNDS.maxPrincipalIdLength);
}

/** A new session checked: exactly its fields. @throws RangeError as `AdminSessionStore.create` documents. */
export function prepareSession(session: NewAdminSession): Required<NewAdminSession> {
  const owner = 'sessions.create';
  const b = SESSION_BOUNDS;
  if (typeof session !== 'object' || session === null) {
    throw invalidOption(owner, 'session', 'an object', session);
  }
  if (!isSessionHash(session.idHash)) {
    throw invalidOption(owner, 'idHash', `1 to ${b.maxIdHashLength} characters without NUL`, session.idHash);
  }
  if (!isPrincipalId(session.principalId)) {
    throw invalidOption(
      owner,
      'principalId',
      `1 to ${b.maxPrincipalIdLength} characters without NUL`,
      session.principalId,
    );
  }
  const createdAt = timeMs(owner, 'createdAt', session.createdAt);
  const expiresAt = timeMs(owner, 'expiresAt', session.expiresAt);
  if (expiresAt <= createdAt) throw invalidOption(owner, 'expiresAt', 'after createdAt', expiresAt);
  const address = session.clientAddress ?? null;
  return {
    idHash: session.idHash,
    principalId: session.principalId,
    createdAt,
    expiresAt,
    clientAddress: address === null ? null : text(owner, 'clientAddress', address, b.maxClientAddressLength),
  };
}

/** The error of a create whose hash is taken. */
export function duplicateSession(): Error {
  return new Error('sessions.create: a session with this id hash exists');
}
