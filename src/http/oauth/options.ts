/**
 * Options of the OAuth resource server ({@link createOAuthVerifier}), their defaults and their checks: a bad
 * option fails at construction with a RangeError naming it.
 */
import {
  NON_NEGATIVE,
  POSITIVE,
  POSITIVE_INTEGER,
  clockOption,
  finite,
  invalidOption,
  nonEmptyString,
  optionalFn,
  type Clock,
} from '../../core/index.js';
import { isScopeToken, scopeMapOption, tokenScopesGranting, type ScopeMap } from './scopes.js';

/** The signature algorithms accepted by default: every asymmetric JWS algorithm (RFC 7518, RFC 8037). */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Options of {@link createOAuthVerifier}. */
export interface OAuthOptions {
  /**
   * The authorization server's issuer identifier (RFC 8414): tokens must carry exactly this `iss`. An https
   * URL (http only on a loopback host), without query or fragment.
   */
  issuer: string;
  /**
   * The gateway's canonical MCP URL (the MCP spec's "canonical server URI", RFC 8707's resource), e.g.
   * `https://gw.example.com/mcp`: tokens must list it in `aud`; the metadata document names it as `resource`.
   * Same URL rules as `issuer`.
   */
  audience: string;
  /**
   * Where the authorization server publishes its keys. Default: the `jwks_uri` of its metadata, read once from
   * `/.well-known/oauth-authorization-server`, then `/.well-known/openid-configuration` (the order the MCP
   * spec gives clients).
   */
  jwksUrl?: string;
  /** Token scope → Breakwater scopes. Default: each Breakwater scope maps to itself (`mcp` → `mcp`, …). */
  scopeMap?: ScopeMap;
  /**
   * The scopes the metadata document advertises (`scopes_supported`) and a 401 challenge asks for. Default:
   * the token scopes that grant `mcp` (least privilege: what an MCP client needs to start). Add tool scopes
   * here only if every client should ask for them up front; otherwise a 403 asks for them when needed.
   */
  scopesSupported?: readonly string[];
  /**
   * Principal metadata key → claim name, e.g. `{ user: 'sub', team: 'org_id' }` (default `{ user: 'sub' }`).
   * String, number and boolean claims are kept (as strings); a missing claim leaves its key out.
   */
  metadataClaims?: Readonly<Record<string, string>>;
  /** Allowed skew for `exp` and `nbf`, in ms (default 30 000, at most 300 000). */
  clockToleranceMs?: number;
  /** Accepted JWS algorithms (default {@link ASYMMETRIC_ALGORITHMS}); `none` and HMAC are never accepted. */
  algorithms?: readonly string[];
  /**
   * When set, the token's `typ` header must be this (RFC 9068 access tokens say `at+jwt`). Default: not
   * checked, since several authorization servers send plain `JWT`.
   */
  tokenType?: string;
  /** `resource_name` of the metadata document (RFC 9728), for people. */
  resourceName?: string;
  /** `resource_documentation` of the metadata document: a URL of a page about the gateway. */
  resourceDocumentation?: string;
  /** Time source for `exp`/`nbf`, the key refresh and the retry delays (default the system clock). */
  clock?: Clock;
  /** The fetch for discovery and the JWKS (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /**
   * How often the keys are fetched again, in ms (default 600 000). The refresh runs in the background: requests
   * keep using the keys held, also while the key server is down.
   */
  jwksCacheMaxAgeMs?: number;
  /**
   * Least time between two key fetches caused by a token with an unknown `kid` (a key rotation), in ms
   * (default 30 000, jose's): a stream of tokens with made-up `kid`s cannot turn into a stream of fetches.
   */
  jwksCooldownMs?: number;
  /** Timeout of one metadata or key fetch, in ms (integer, default 5 000). */
  fetchTimeoutMs?: number;
}

/** The defaults of {@link OAuthOptions}. */
export const OAUTH_DEFAULTS = Object.freeze({
  clockToleranceMs: 30_000,
  metadataClaims: Object.freeze({ user: 'sub' }) as Readonly<Record<string, string>>,
  jwksCacheMaxAgeMs: 600_000,
  jwksCooldownMs: 30_000,
  fetchTimeoutMs: 5_000,
  /** After a failed metadata discovery or key refresh, how long until it is tried again. */
  retryAfterFailureMs: 5_000,
});

/** {@link OAuthOptions} checked, with every default filled in. */
export interface ResolvedOAuthOptions {
  readonly issuer: string;
  readonly audience: string;
  readonly jwksUrl: string | undefined;
  readonly scopeMap: ScopeMap;
  readonly scopesSupported: readonly string[];
  readonly metadataClaims: Readonly<Record<string, string>>;
  readonly clockToleranceMs: number;
  readonly algorithms: readonly string[];
  readonly tokenType: string | undefined;
  readonly resourceName: string | undefined;
  readonly resourceDocumentation: string | undefined;
  readonly clock: Clock;
  readonly fetch: typeof fetch;
  readonly jwksCacheMaxAgeMs: number;
  readonly jwksCooldownMs: number;
  readonly fetchTimeoutMs: number;
}

const OWNER = 'createOAuthVerifier';

/** The global fetch, looked up at call time. */
const globalFetch: typeof fetch = (input, init) => globalThis.fetch(input, init);

/**
 * Checks `options` and fills in the defaults.
 * @throws RangeError naming the option (`createOAuthVerifier: audience must be …, got …`).
 */
export function resolveOAuthOptions(options: OAuthOptions): ResolvedOAuthOptions {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(OWNER, 'options', 'an object { issuer, audience, … }', options);
  }
  const scopeMap = scopeMapOption(OWNER, options.scopeMap);
  const scopesSupported =
    options.scopesSupported === undefined
      ? tokenScopesGranting(scopeMap, 'mcp')
      : scopeList('scopesSupported', options.scopesSupported);
  const clockToleranceMs = finite(
    OWNER,
    'clockToleranceMs',
    options.clockToleranceMs ?? OAUTH_DEFAULTS.clockToleranceMs,
    {
      ...NON_NEGATIVE,
      max: 300_000,
    },
  );
  return Object.freeze({
    issuer: urlOption('issuer', options.issuer),
    audience: urlOption('audience', options.audience),
    jwksUrl: options.jwksUrl === undefined ? undefined : urlOption('jwksUrl', options.jwksUrl, true),
    scopeMap,
    scopesSupported: Object.freeze(scopesSupported),
    metadataClaims: metadataClaimsOption(options.metadataClaims),
    clockToleranceMs,
    algorithms: algorithmsOption(options.algorithms),
    tokenType:
      options.tokenType === undefined ? undefined : nonEmptyString(OWNER, 'tokenType', options.tokenType),
    resourceName:
      options.resourceName === undefined
        ? undefined
        : nonEmptyString(OWNER, 'resourceName', options.resourceName),
    resourceDocumentation:
      options.resourceDocumentation === undefined
        ? undefined
        : urlOption('resourceDocumentation', options.resourceDocumentation, true),
    clock: clockOption(OWNER, options.clock),
    fetch: optionalFn(OWNER, 'fetch', options.fetch) ?? globalFetch,
    jwksCacheMaxAgeMs: finite(
      OWNER,
      'jwksCacheMaxAgeMs',
      options.jwksCacheMaxAgeMs ?? OAUTH_DEFAULTS.jwksCacheMaxAgeMs,
      POSITIVE,
    ),
    jwksCooldownMs: finite(
      OWNER,
      'jwksCooldownMs',
      options.jwksCooldownMs ?? OAUTH_DEFAULTS.jwksCooldownMs,
      NON_NEGATIVE,
    ),
    fetchTimeoutMs: finite(
      OWNER,
      'fetchTimeoutMs',
      options.fetchTimeoutMs ?? OAUTH_DEFAULTS.fetchTimeoutMs,
      POSITIVE_INTEGER,
    ),
  });
}

/**
 * An https URL, or http on a loopback host (the MCP spec: authorization server endpoints MUST be https; a
 * loopback address is for development and tests), without a fragment and, unless `allowQuery`, a query.
 * @returns the URL as given (an issuer is compared as a string, RFC 8414 section 3.3).
 */
function urlOption(option: string, value: unknown, allowQuery = false): string {
  const rule = `an https URL (http only on a loopback host) without ${allowQuery ? '' : 'query or '}fragment`;
  const url = typeof value === 'string' ? parseUrl(value) : null;
  if (
    url === null ||
    !(url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) ||
    url.hash !== '' ||
    (!allowQuery && url.search !== '') ||
    url.username !== '' ||
    url.password !== ''
  ) {
    throw invalidOption(OWNER, option, rule, value);
  }
  return value as string;
}

/** `value` as a URL, or null when it is not an absolute URL. */
export function parseUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** `localhost`, 127.0.0.0/8 and `[::1]`. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

function scopeList(option: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every(isScopeToken)) {
    throw invalidOption(OWNER, option, 'an array of scope tokens (printable ASCII, no space)', value);
  }
  return [...new Set(value)];
}

function metadataClaimsOption(value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return OAUTH_DEFAULTS.metadataClaims;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidOption(OWNER, 'metadataClaims', 'an object { [metadataKey]: claimName }', value);
  }
  for (const [key, claim] of Object.entries(value)) {
    if (key === '' || typeof claim !== 'string' || claim === '') {
      throw invalidOption(OWNER, `metadataClaims['${key}']`, 'a non-empty claim name', claim);
    }
  }
  return Object.freeze({ ...(value as Record<string, string>) });
}

function algorithmsOption(value: unknown): readonly string[] {
  if (value === undefined) return ASYMMETRIC_ALGORITHMS;
  const allowed: readonly string[] = ASYMMETRIC_ALGORITHMS;
  if (!Array.isArray(value) || value.length === 0 || !value.every((alg) => allowed.includes(alg as string))) {
    throw invalidOption(OWNER, 'algorithms', `a non-empty array of ${allowed.join(', ')}`, value);
  }
  return Object.freeze([...new Set(value as string[])]);
}
