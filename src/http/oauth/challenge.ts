/**
 * The Bearer scheme on the wire (RFC 6750): reading `Authorization: Bearer <token>` and writing the
 * `WWW-Authenticate` challenge, with RFC 9728's `resource_metadata` parameter.
 */
import { BreakwaterError } from '../../core/index.js';
import { isScopeToken } from './scopes.js';

/** The error codes of RFC 6750, section 3.1. */
export type BearerError = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

/** The parameters of one Bearer challenge. */
export interface BearerChallenge {
  /** The protected resource metadata document's URL (RFC 9728, section 5.1). */
  readonly resourceMetadataUrl: string;
  /** Absent when the request carried no credential (RFC 6750, section 3.1: then no error code). */
  readonly error?: BearerError;
  /** For people; characters outside RFC 6750's set (`"`, `\`, controls, non-ASCII) become spaces. */
  readonly errorDescription?: string;
  /** Scopes the request needs (RFC 6750, section 3; the MCP spec asks for them on 401 and 403). */
  readonly scope?: readonly string[];
}

/**
 * The `WWW-Authenticate` value for `challenge`, parameters in this order: `resource_metadata`, `error`,
 * `scope`, `error_description`. Examples:
 * - `Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`
 * - `Bearer resource_metadata="…", error="invalid_token", scope="mcp", error_description="The access token has expired."`
 *
 * Scope tokens that are not RFC 6749 scope tokens are left out (they could not be quoted safely).
 * `scope` comes before `error_description` so a client that scans for the first `scope=` (the MCP SDK does)
 * finds the parameter, never text inside the description.
 */
export function bearerChallenge(challenge: BearerChallenge): string {
  const params = [`resource_metadata="${quotable(challenge.resourceMetadataUrl)}"`];
  if (challenge.error !== undefined) params.push(`error="${challenge.error}"`);
  const scope = [...new Set(challenge.scope ?? [])].filter(isScopeToken);
  if (scope.length > 0) params.push(`scope="${scope.join(' ')}"`);
  if (challenge.errorDescription !== undefined && challenge.errorDescription !== '') {
    params.push(`error_description="${quotable(challenge.errorDescription)}"`);
  }
  return `Bearer ${params.join(', ')}`;
}

/** RFC 6750's `error_description` set: %x20-21 / %x23-5B / %x5D-7E; anything else becomes a space. */
function quotable(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, ' ');
}

/** RFC 6750, section 2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The bearer token of an `Authorization` header value (RFC 6750, section 2.1; the scheme name is
 * case-insensitive, RFC 9110 section 11.1).
 * @returns the token; `undefined` when there is no header or it names another scheme (`Basic …`), which
 *   RFC 6750 treats as a request without a credential (401 without an error code).
 * @throws BreakwaterError `unauthorized`, status 400, `details.reason: 'invalid_request'` for a Bearer header
 *   that holds no token, more than one, or characters a token cannot have (RFC 6750: `invalid_request`).
 */
export function parseBearer(authorization: string | readonly string[] | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  if (typeof authorization !== 'string')
    throw invalidRequest('The request has more than one Authorization header.');
  const match = /^bearer(?:\s+(.*))?$/is.exec(authorization.trim());
  if (match === null) return undefined;
  const token = (match[1] ?? '').trim();
  if (token === '')
    throw invalidRequest('The Authorization header names the Bearer scheme but holds no token.');
  if (!B64TOKEN.test(token)) {
    throw invalidRequest('The Authorization header holds a malformed bearer token (RFC 6750 b64token).');
  }
  return token;
}

/** True when `token` has the shape of a JWS compact serialization (three base64url parts): a JWT access token. */
export function isJwtShaped(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

function invalidRequest(message: string): BreakwaterError {
  return new BreakwaterError('unauthorized', {
    status: 400,
    message,
    details: { reason: 'invalid_request' },
  });
}
