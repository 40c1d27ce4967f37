/**
 * Credentials and the auth mode (docs/architecture.md#identity-and-ownership; docs/security.md).
 *
 * A credential travels as `Authorization: Bearer <value>` (or `x-api-key: <value>`, what Anthropic's SDK
 * sends). The value says what it is: `bw_…` is a Breakwater API key; the admin token is compared in constant
 * time; anything else is an OAuth access token (a JWT) when an authorization server is configured. A
 * presented credential that does not verify is refused (401), never ignored: a client with a revoked key
 * must hear so, not be served as a stranger. One exception: in loopback mode a value that is none of these
 * kinds (the placeholder `apiKey` an SDK insists on) is not ours to judge and is treated as absent.
 *
 * Without a credential, the mode decides:
 * - `loopback` (no credential configured at startup): a client on this machine (see `isLocalClient`) is the
 *   `local` principal; anyone else gets 403 `loopback_only`.
 * - `credentials`: 401 with a `WWW-Authenticate: Bearer` challenge (with `resource_metadata` when OAuth is on).
 * - `insecure` (`--insecure-no-auth`): the `anonymous` principal, every scope.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { BreakwaterError, PRINCIPALS, type Principal } from '../core/index.js';
import { isLocalClient } from './proxy.js';

/** How requests without a credential are treated (see the module doc). */
export type AuthMode = 'loopback' | 'credentials' | 'insecure';

/** Verifies one kind of bearer credential. */
export interface CredentialVerifier {
  /**
   * The principal of a presented value.
   * @throws BreakwaterError `unauthorized` (401, `details.reason`) when the value does not verify.
   */
  verify(value: string): Promise<Principal>;
}

/** An OAuth resource server's verifier (`createOAuthVerifier`): it also writes the challenges. */
export interface OAuthCredentialVerifier extends CredentialVerifier {
  /** The URL of the protected resource metadata (RFC 9728), for `WWW-Authenticate: … resource_metadata`. */
  readonly resourceMetadataUrl: string;
  /** The `WWW-Authenticate` value for an authorization failure, or undefined for another error. */
  challengeFor(error: unknown, principal?: Principal): string | undefined;
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  /** See {@link AuthMode}. Default `loopback`. */
  mode?: AuthMode;
  /** The admin token (`BREAKWATER_ADMIN_TOKEN`): its bearer is the `admin` principal. */
  adminToken?: string;
  /** API keys (`bw_…`), e.g. `createApiKeys(...)`. */
  apiKeys?: CredentialVerifier;
  /** Bearer JWTs of an authorization server. */
  oauth?: OAuthCredentialVerifier;
}

/** The credential check of the edge. */
export interface Authenticator {
  readonly mode: AuthMode;
  /**
   * The principal of a request's credential, or undefined when it presents none.
   * @throws BreakwaterError `unauthorized` (401) for a credential that does not verify or is malformed.
   */
  fromCredential(request: FastifyRequest): Promise<Principal | undefined>;
  /**
   * The principal of a request without a credential, by mode: `local` for a local client in loopback mode,
   * `anonymous` in insecure mode, else undefined (the request needs a credential).
   */
  withoutCredential(request: FastifyRequest): Principal | undefined;
  /**
   * The `WWW-Authenticate` value of a 401 or 403 refusal `error` (RFC 6750 section 3; RFC 9728 section 5.1):
   * the OAuth verifier's when one is configured (it names its metadata and the scopes to ask for), else
   * `Bearer realm="breakwater"` with `error` (`invalid_token`, `invalid_request`, `insufficient_scope`) and
   * `scope` from the refusal's `details`.
   */
  challenge(error: BreakwaterError, principal?: Principal): string;
}

/** Longest credential value read (a JWT with many claims fits; anything longer is not one). */
export const MAX_CREDENTIAL_LENGTH = 8_192;

/** Creates the edge's credential check. */
export function createAuthenticator(options: AuthenticatorOptions = {}): Authenticator {
  const mode = options.mode ?? 'loopback';
  const adminDigest =
    options.adminToken === undefined || options.adminToken === '' ? undefined : digest(options.adminToken);
  const { apiKeys, oauth } = options;

  const challenge: Authenticator['challenge'] = (error, principal) => {
    const theirs = oauth?.challengeFor(error, principal);
    if (theirs !== undefined) return theirs;
    const reason = error.details?.reason;
    const parts = ['realm="breakwater"'];
    if (reason === 'insufficient_scope') parts.push('error="insufficient_scope"');
    else if (reason === 'invalid_request') parts.push('error="invalid_request"');
    else if (error.status === 401 && reason !== 'credentials_missing') parts.push('error="invalid_token"');
    const required = error.details?.required_scopes;
    const scope = Array.isArray(required) ? required.join(' ') : error.details?.scope;
    if (typeof scope === 'string') parts.push(`scope="${quoted(scope)}"`);
    return `Bearer ${parts.join(', ')}`;
  };

  return {
    mode,
    challenge,
    async fromCredential(request) {
      const value = presentedCredential(request);
      if (value === undefined) return undefined;
      if (value.startsWith('bw_')) {
        if (apiKeys === undefined) throw invalidCredential('API keys are not enabled on this gateway.');
        return apiKeys.verify(value);
      }
      if (adminDigest !== undefined && timingSafeEqual(digest(value), adminDigest)) return PRINCIPALS.admin;
      if (oauth !== undefined && /^[\w-]+\.[\w-]+\.[\w-]*$/.test(value)) return oauth.verify(value);
      // Loopback mode has no credential of this kind to compare with: the value was not meant for us (the
      // OpenAI SDK will not run without some apiKey), so the request is judged as one without a credential.
      if (mode === 'loopback') return undefined;
      throw invalidCredential('The credential is not valid.');
    },
    withoutCredential(request) {
      if (mode === 'insecure') return PRINCIPALS.anonymous;
      if (mode === 'loopback' && isLocalClient(request)) return PRINCIPALS.local;
      return undefined;
    },
  };
}

/**
 * The credential a request presents: the `Authorization: Bearer` value, else `x-api-key` (the same value in
 * both is one credential). Undefined when it presents none. The admin routes read the admin token with it too.
 * @throws BreakwaterError `unauthorized` (401, `invalid_request`) for another scheme or a `Bearer` without a
 *   value, an oversized value, or two different credentials at once.
 */
export function presentedCredential(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  const apiKey = request.headers['x-api-key'];
  let value: string | undefined;
  if (authorization !== undefined) {
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) {
      throw invalidCredential(
        'Send the credential as Authorization: Bearer <key or token>.',
        'invalid_request',
      );
    }
    value = match[1]!;
  }
  if (typeof apiKey === 'string' && apiKey !== '') {
    if (value !== undefined && value !== apiKey) {
      throw invalidCredential('Authorization and x-api-key carry different credentials.', 'invalid_request');
    }
    value = apiKey.trim();
  }
  if (value !== undefined && value.length > MAX_CREDENTIAL_LENGTH) {
    throw invalidCredential('The credential is too long.', 'invalid_request');
  }
  return value;
}

function invalidCredential(message: string, error = 'invalid_token'): BreakwaterError {
  return new BreakwaterError('unauthorized', { status: 401, message, details: { reason: error } });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A value for a quoted-string of an auth-param (RFC 9110 section 5.6.4): no quotes or backslashes. */
function quoted(text: string): string {
  return text.replace(/["\\]/g, "'");
}
