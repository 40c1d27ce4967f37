/**
 * http/oauth/: the gateway as an OAuth 2.1 resource server for MCP (the MCP authorization spec, 2025-11-25;
 * RFC 6750, RFC 8707, RFC 9068, RFC 9728). Bearer JWTs are checked with `jose` against the authorization
 * server's published keys and become a core `Principal`; the metadata document tells clients where to get a
 * token; the challenge builder writes `WWW-Authenticate`; tool scopes are checked by pure functions.
 */
export {
  createOAuthVerifier,
  missingToken,
  type InvalidTokenReason,
  type OAuthVerifier,
  type ProtectedResourceMetadata,
} from './verifier.js';
export { ASYMMETRIC_ALGORITHMS, OAUTH_DEFAULTS, type OAuthOptions } from './options.js';
export { METADATA_CACHE_CONTROL, oauthMetadataRoutes } from './metadata.js';
export {
  bearerChallenge,
  isJwtShaped,
  parseBearer,
  type BearerChallenge,
  type BearerError,
} from './challenge.js';
export {
  DEFAULT_SCOPE_MAP,
  assertCanCallTool,
  canCallTool,
  insufficientScope,
  isScopeToken,
  missingScopes,
  principalScopes,
  requiredScopesFor,
  type ScopeMap,
  type ScopedTool,
} from './scopes.js';
