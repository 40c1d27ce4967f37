/**
 * http/: the HTTP edge every route sits behind (docs/architecture.md#layers-and-folders): `Host`/`Origin`
 * validation, the trusted-proxy rule, the caller's identity (`request.principal`) and each route's access,
 * the one error handler (with the renderers capabilities choose for their routes) and the checks of request
 * input. Below the capabilities, above core: imports core and store only.
 */
import './request.js';

export { DEFAULT_ACCESS, accessOf, type RouteAccess } from './access.js';
export {
  MAX_CREDENTIAL_LENGTH,
  createAuthenticator,
  presentedCredential,
  type AuthMode,
  type Authenticator,
  type AuthenticatorOptions,
  type CredentialVerifier,
  type OAuthCredentialVerifier,
} from './auth.js';
export { installEdge, principalOf, type EdgeOptions } from './edge.js';
export {
  checkHostAndOrigin,
  hostRules,
  isLoopbackName,
  parseHost,
  type HostRefusal,
  type HostRules,
} from './host.js';
export {
  FORWARDING_HEADERS,
  isForwarded,
  isLocalClient,
  isLoopbackAddress,
  trustedProxyList,
  viaTls,
} from './proxy.js';
export { IDEMPOTENT_METHODS, SAFE_METHODS, isSafeMethod } from './methods.js';
export { drainRefusedBody, handleClientError, pathOf, toHttpError } from './problems.js';
export {
  PROBLEM_RENDERER,
  createErrorHandler,
  handleError,
  handleFrameworkError,
  handleNotFound,
  installErrorRenderer,
  sendProblem,
  type ErrorRenderer,
} from './errors.js';
export { installJsonBodyParser, refuseRepeatedQuery } from './input.js';
export {
  assertCanCallTool,
  canCallTool,
  createOAuthVerifier,
  insufficientScope,
  missingScopes,
  oauthMetadataRoutes,
  requiredScopesFor,
  type OAuthOptions,
  type OAuthVerifier,
  type ProtectedResourceMetadata,
  type ScopedTool,
} from './oauth/index.js';
