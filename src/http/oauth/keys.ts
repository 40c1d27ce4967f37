/**
 * The authorization server's signing keys, as jose's remote JWKS holds them, with the freshness rule a
 * gateway needs: a request never waits on a routine refresh, and keys already held stay in use while the key
 * server is down (stale-if-error). Only the first load and a token signed with an unknown key wait for a
 * fetch, bounded by `fetchTimeoutMs`.
 */
import {
  createRemoteJWKSet,
  customFetch,
  type FetchImplementation,
  type JWTVerifyGetKey,
  type RemoteJWKSet,
} from 'jose';
import { BreakwaterError } from '../../core/index.js';
import { discoverJwksUri } from './discovery.js';
import { OAUTH_DEFAULTS, type ResolvedOAuthOptions } from './options.js';

/** Where the verifier gets its keys. */
export interface KeySource {
  /**
   * The key resolver for `jwtVerify`, after discovering the key set's URL (once). A failure to resolve a key
   * that is the token's fault (no key matches its `kid`/`alg`) is jose's own error; a key set that cannot be
   * read throws {@link KeySetUnavailable}.
   * @throws BreakwaterError `upstream_unavailable` when the issuer's metadata cannot be read.
   */
  resolver(): Promise<JWTVerifyGetKey>;
  /** Discovers the key set and fetches it now. @throws BreakwaterError `upstream_unavailable`. */
  warmUp(): Promise<void>;
}

/** A key set that cannot be read: the key server is down or answers nonsense (not the token's fault). */
export class KeySetUnavailable extends Error {}

/** jose's codes for a key set that was read but holds no key for this token. */
const TOKEN_KEY_CODES: ReadonlySet<unknown> = new Set([
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  'ERR_JOSE_NOT_SUPPORTED',
]);

/**
 * Creates the key source. Refreshes run in the background every `jwksCacheMaxAgeMs` (on `config.clock`),
 * started by the first request after that time; a failed refresh keeps the keys held and is tried again
 * 5 s after it started. jose itself fetches at once (awaited) for a token whose `kid` it does not hold, at most once
 * per `jwksCooldownMs`.
 */
export function createKeySource(config: ResolvedOAuthOptions): KeySource {
  const { clock } = config;
  let jwks: RemoteJWKSet | undefined;
  let discovering: Promise<RemoteJWKSet> | undefined;
  let discoveryFailure: { error: unknown; untilMs: number } | undefined;
  /** When the next background refresh is due; meaningless until the first load. */
  let refreshDueMs = 0;

  const remoteSet = (url: string): RemoteJWKSet =>
    createRemoteJWKSet(new URL(url), {
      timeoutDuration: config.fetchTimeoutMs,
      // Age is handled below, in the background: jose would make a request wait for the refetch.
      cacheMaxAge: Infinity,
      cooldownDuration: config.jwksCooldownMs,
      [customFetch]: config.fetch as FetchImplementation,
    });
  if (config.jwksUrl !== undefined) jwks = remoteSet(config.jwksUrl);

  /** The key set, its URL discovered once; a failed discovery is tried again after 5 s, not per request. */
  const keySet = async (): Promise<RemoteJWKSet> => {
    if (jwks !== undefined) return jwks;
    if (discoveryFailure !== undefined && clock.now() < discoveryFailure.untilMs)
      throw discoveryFailure.error;
    discovering ??= discoverJwksUri(config.issuer, config.fetch, config.fetchTimeoutMs)
      .then((url) => (jwks = remoteSet(url)))
      .catch((error: unknown) => {
        discoveryFailure = { error, untilMs: clock.now() + OAUTH_DEFAULTS.retryAfterFailureMs };
        throw error;
      })
      .finally(() => (discovering = undefined));
    return discovering;
  };

  const refreshInBackground = (keys: RemoteJWKSet): void => {
    if (keys.jwks() === undefined || keys.reloading || clock.now() < refreshDueMs) return;
    const startedMs = clock.now();
    refreshDueMs = startedMs + config.jwksCacheMaxAgeMs;
    keys.reload().catch(() => {
      refreshDueMs = startedMs + OAUTH_DEFAULTS.retryAfterFailureMs;
    });
  };

  const resolve = async (keys: RemoteJWKSet, ...args: Parameters<JWTVerifyGetKey>) => {
    const firstLoad = keys.jwks() === undefined;
    try {
      const key = await keys(...args);
      if (firstLoad) refreshDueMs = clock.now() + config.jwksCacheMaxAgeMs;
      return key;
    } catch (error) {
      if (TOKEN_KEY_CODES.has((error as { code?: unknown }).code)) throw error;
      throw new KeySetUnavailable('the key set could not be read', { cause: error });
    }
  };

  return {
    async resolver() {
      const keys = await keySet();
      refreshInBackground(keys);
      return (...args) => resolve(keys, ...args);
    },
    async warmUp() {
      const keys = await keySet();
      await keys.reload().catch((error: unknown) => {
        throw jwksUnavailable(error);
      });
      refreshDueMs = clock.now() + config.jwksCacheMaxAgeMs;
    },
  };
}

/** The error for a key set that cannot be read (503: try again shortly). */
export function jwksUnavailable(cause: unknown): BreakwaterError {
  return new BreakwaterError('upstream_unavailable', {
    source: 'oauth',
    message:
      "The authorization server's keys could not be read, so access tokens cannot be checked; try again shortly.",
    details: { reason: 'jwks_unavailable' },
    cause,
  });
}
