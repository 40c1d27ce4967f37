/**
 * The gateway as an OAuth 2.1 resource server (the MCP authorization spec, 2025-11-25): bearer JWTs checked
 * against the authorization server's keys with `jose`, turned into a core `Principal`.
 */
import { jwtVerify, type JWTPayload } from 'jose';
import { BreakwaterError, isBreakwaterError, type Principal } from '../../core/index.js';
import { bearerChallenge, isJwtShaped } from './challenge.js';
import { KeySetUnavailable, createKeySource, jwksUnavailable } from './keys.js';
import { parseUrl, resolveOAuthOptions, type OAuthOptions } from './options.js';
import { isScopeToken, principalScopes } from './scopes.js';

/**
 * Why a token was refused (`details.reason` of the 401): `malformed` (not a compact JWS), `algorithm_not_allowed`,
 * `unknown_key` (no published key matches its `kid`/`alg`), `invalid_signature`, `expired`, `not_yet_valid`
 * (`nbf`), `wrong_issuer`, `wrong_audience` (RFC 8707: not issued for this gateway), `wrong_type` (`typ`),
 * `missing_claim` (`details.claim` names it), `invalid_claim`, `unverifiable` (anything else jose refuses).
 */
export type InvalidTokenReason =
  | 'malformed'
  | 'algorithm_not_allowed'
  | 'unknown_key'
  | 'invalid_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'wrong_type'
  | 'missing_claim'
  | 'invalid_claim'
  | 'unverifiable';

/** The protected resource metadata document (RFC 9728, section 2), as {@link OAuthVerifier.metadata} gives it. */
export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorization_servers: readonly string[];
  readonly scopes_supported?: readonly string[];
  readonly bearer_methods_supported: readonly string[];
  readonly resource_name?: string;
  readonly resource_documentation?: string;
}

/** What {@link createOAuthVerifier} returns. */
export interface OAuthVerifier {
  /** The configured issuer. */
  readonly issuer: string;
  /** The configured audience: the gateway's canonical MCP URL. */
  readonly audience: string;
  /** The scopes a 401 challenge asks for and the metadata advertises (`scopesSupported`). */
  readonly scopesSupported: readonly string[];
  /**
   * The metadata document's URL: `/.well-known/oauth-protected-resource` inserted between the audience's
   * host and path (RFC 9728, section 3.1), e.g. `https://gw.example.com/.well-known/oauth-protected-resource/mcp`.
   */
  readonly resourceMetadataUrl: string;
  /** The paths the metadata is served at: the path-inserted one and the root one (the MCP spec's fallback). */
  readonly metadataPaths: readonly string[];
  /**
   * Checks a bearer token (signature against the issuer's keys, `iss`, `aud` ∋ audience, `exp`/`nbf` on the
   * injected clock with the tolerance, `typ` when configured) and returns its principal: `kind: 'oauth'`,
   * `id: 'oauth:<iss> <sub>'`, `name` = `sub` (or `client_id`), `scopes` = mapped Breakwater scopes plus the
   * token's own scopes (`scope` or `scp`), `metadata` from `metadataClaims`, `trustedBackend: false`.
   * @throws BreakwaterError `unauthorized` (401, `details.reason`: an {@link InvalidTokenReason}); the message
   *   never contains the token.
   * @throws BreakwaterError `upstream_unavailable` (503, `details.reason`: `issuer_metadata_unavailable` or
   *   `jwks_unavailable`) when the keys cannot be read: the token is not at fault.
   */
  verify(token: string): Promise<Principal>;
  /** The protected resource metadata document (RFC 9728). */
  metadata(): ProtectedResourceMetadata;
  /**
   * The `WWW-Authenticate` value for an error, or `undefined` when it is not an authorization failure:
   * - 401 `unauthorized` with reason `missing_token`, `credentials_missing` (the edge's) or none:
   *   `Bearer resource_metadata="…", scope="…"` (RFC 6750 section 3.1: no error code without a credential);
   * - any other 401 `unauthorized`: `error="invalid_token"` with the message as `error_description`;
   * - 400 with reason `invalid_request`: `error="invalid_request"`;
   * - 403 with reason `insufficient_scope`: `error="insufficient_scope"`, `scope` = `scopesSupported` + the
   *   scopes the token already held (when `principal` came from this verifier) + the required ones (the MCP
   *   spec's "recommended approach", so a step-up does not lose earlier grants).
   */
  challengeFor(error: unknown, principal?: Principal): string | undefined;
  /** Fetches the issuer's metadata and keys now, so a startup can report a misconfiguration at once. */
  warmUp(): Promise<void>;
}

/** RFC 6750 says a request without a credential gets a 401 with no error code; this is that error. */
export function missingToken(): BreakwaterError {
  return new BreakwaterError('unauthorized', {
    message: 'This resource needs an OAuth access token: send it as Authorization: Bearer <token>.',
    details: { reason: 'missing_token' },
  });
}

/**
 * Creates the resource server's token verifier (see {@link OAuthVerifier}).
 * @throws RangeError naming the option for a bad option (see {@link OAuthOptions}).
 */
export function createOAuthVerifier(options: OAuthOptions): OAuthVerifier {
  const config = resolveOAuthOptions(options);
  const { issuer, audience, clock, scopesSupported } = config;
  const audienceHref = new URL(audience).href;
  const { resourceMetadataUrl, metadataPaths } = metadataLocation(audience);
  /** The token scopes of each principal this verifier made, for the 403 challenge. */
  const tokenScopesOf = new WeakMap<Principal, readonly string[]>();

  const keys = createKeySource(config);

  const verify = async (token: string): Promise<Principal> => {
    if (typeof token !== 'string' || !isJwtShaped(token)) {
      throw invalidToken('malformed', 'The access token is not a signed JWT.');
    }
    const getKey = await keys.resolver();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, getKey, {
        issuer,
        algorithms: [...config.algorithms],
        typ: config.tokenType,
        clockTolerance: config.clockToleranceMs / 1000,
        currentDate: new Date(clock.now()),
        requiredClaims: ['exp', 'aud'],
      }));
    } catch (error) {
      throw translate(error, config);
    }
    if (!audiences(payload.aud).some((aud) => sameResource(aud, audienceHref))) {
      throw invalidToken(
        'wrong_audience',
        `The access token was not issued for ${audience} (RFC 8707 audience).`,
        {
          expected_audience: audience,
        },
      );
    }
    const subject = nonEmpty(payload.sub) ?? nonEmpty(payload.client_id);
    if (subject === undefined) {
      throw invalidToken('missing_claim', 'The access token names no subject (sub or client_id).', {
        claim: 'sub',
      });
    }
    const tokenScopes = scopesOf(payload);
    const principal: Principal = Object.freeze({
      id: `oauth:${issuer} ${subject}`,
      kind: 'oauth',
      name: subject,
      scopes: principalScopes(tokenScopes, config.scopeMap),
      metadata: Object.freeze(metadataOf(payload, config.metadataClaims)),
      trustedBackend: false,
    });
    tokenScopesOf.set(principal, tokenScopes);
    return principal;
  };

  const document: ProtectedResourceMetadata = Object.freeze({
    resource: audience,
    authorization_servers: Object.freeze([issuer]),
    ...(scopesSupported.length > 0 ? { scopes_supported: scopesSupported } : {}),
    bearer_methods_supported: Object.freeze(['header']),
    ...(config.resourceName !== undefined ? { resource_name: config.resourceName } : {}),
    ...(config.resourceDocumentation !== undefined
      ? { resource_documentation: config.resourceDocumentation }
      : {}),
  });

  const challengeFor = (error: unknown, principal?: Principal): string | undefined => {
    if (!isBreakwaterError(error) || error.code !== 'unauthorized') return undefined;
    const reason = error.details?.reason;
    if (error.status === 401) {
      // `credentials_missing` is the HTTP edge's name for the same case (src/http/edge.ts).
      if (reason === undefined || reason === 'missing_token' || reason === 'credentials_missing') {
        return bearerChallenge({ resourceMetadataUrl, scope: scopesSupported });
      }
      return bearerChallenge({
        resourceMetadataUrl,
        error: 'invalid_token',
        scope: scopesSupported,
        errorDescription: error.message,
      });
    }
    if (error.status === 400 && reason === 'invalid_request') {
      return bearerChallenge({
        resourceMetadataUrl,
        error: 'invalid_request',
        errorDescription: error.message,
      });
    }
    if (error.status === 403 && reason === 'insufficient_scope') {
      const required = stringList(error.details?.required_scopes);
      const held = principal === undefined ? [] : (tokenScopesOf.get(principal) ?? []);
      return bearerChallenge({
        resourceMetadataUrl,
        error: 'insufficient_scope',
        scope: [...scopesSupported, ...held, ...required],
        errorDescription: error.message,
      });
    }
    return undefined;
  };

  return Object.freeze({
    issuer,
    audience,
    scopesSupported,
    resourceMetadataUrl,
    metadataPaths,
    verify,
    metadata: () => document,
    challengeFor,
    warmUp: () => keys.warmUp(),
  });
}

/** Where the metadata lives for `audience` (RFC 9728, section 3.1). */
function metadataLocation(audience: string): { resourceMetadataUrl: string; metadataPaths: string[] } {
  const url = new URL(audience);
  const root = '/.well-known/oauth-protected-resource';
  const path = url.pathname === '/' ? '' : url.pathname;
  return {
    resourceMetadataUrl: `${url.origin}${root}${path}`,
    metadataPaths: path === '' ? [root] : [`${root}${path}`, root],
  };
}

/** A jose failure as the gateway's error (jose's error codes are stable API: `ERR_JWT_EXPIRED`, …). */
function translate(
  error: unknown,
  config: { issuer: string; tokenType: string | undefined; algorithms: readonly string[] },
): BreakwaterError {
  if (error instanceof KeySetUnavailable) return jwksUnavailable(error.cause);
  const { code, claim, reason } = error as { code?: unknown; claim?: unknown; reason?: unknown };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return invalidToken('expired', 'The access token has expired.');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return invalidToken('invalid_signature', 'The access token signature does not verify.');
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return invalidToken(
        'unknown_key',
        "The access token is not signed with one of the authorization server's keys.",
      );
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return invalidToken(
        'algorithm_not_allowed',
        `The access token is signed with an algorithm this gateway does not accept (it accepts ${config.algorithms.join(', ')}).`,
      );
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return invalidToken('malformed', 'The access token is not a well-formed signed JWT.');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return claimFailure(String(claim), reason === 'missing', config);
    default:
      return invalidToken('unverifiable', 'The access token could not be verified.');
  }
}

function claimFailure(
  claim: string,
  missing: boolean,
  config: { issuer: string; tokenType: string | undefined },
): BreakwaterError {
  if (missing) {
    return invalidToken('missing_claim', `The access token has no "${claim}" claim.`, { claim });
  }
  switch (claim) {
    case 'iss':
      return invalidToken('wrong_issuer', `The access token was not issued by ${config.issuer}.`, {
        expected_issuer: config.issuer,
      });
    case 'nbf':
      return invalidToken('not_yet_valid', 'The access token is not valid yet (nbf).');
    case 'typ':
      return invalidToken(
        'wrong_type',
        `The access token's typ header is not ${config.tokenType ?? 'accepted'}.`,
        {
          expected_type: config.tokenType,
        },
      );
    default:
      return invalidToken('invalid_claim', `The access token's "${claim}" claim is not valid.`, { claim });
  }
}

function invalidToken(
  reason: InvalidTokenReason,
  message: string,
  extra: Readonly<Record<string, unknown>> = {},
): BreakwaterError {
  return new BreakwaterError('unauthorized', { message, details: { reason, ...extra } });
}

function audiences(aud: JWTPayload['aud']): string[] {
  return typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
}

/** RFC 8707 resources compared as URLs: scheme and host case, a default port and an empty path do not matter. */
function sameResource(aud: string, audienceHref: string): boolean {
  return (parseUrl(aud)?.href ?? aud) === audienceHref;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The token's scopes: RFC 9068's space-separated `scope`, or `scp` (a string or an array, as some servers send). */
function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp;
  const list = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw : [];
  return [...new Set(list.filter(isScopeToken))];
}

function metadataOf(payload: JWTPayload, claims: Readonly<Record<string, string>>): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [key, claim] of Object.entries(claims)) {
    const value = Object.prototype.hasOwnProperty.call(payload, claim) ? payload[claim] : undefined;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      metadata[key] = String(value);
    }
  }
  return metadata;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}
