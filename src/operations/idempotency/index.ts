/**
 * Inbound idempotency (docs/operations.md#inbound-idempotency-idempotency-key; IETF httpapi
 * `Idempotency-Key` draft): the
 * header parser, the request fingerprint, the run-once library function and the Fastify route option.
 */
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from './key.js';
export {
  checkFingerprintFields,
  requestFingerprint,
  type FingerprintFieldOptions,
  type FingerprintFields,
  type FingerprintRequest,
} from './fingerprint.js';
export { ANONYMOUS_SCOPE, defaultIdempotencyScope } from './scope.js';
export {
  IDEMPOTENCY_DEFAULTS,
  RETRY_SAFE_STATUSES,
  finishIdempotent,
  runIdempotent,
  shouldReleaseIdempotency,
  startIdempotent,
  storedBody,
  toStoredResponse,
  type IdempotencyClaimOptions,
  type IdempotentResponse,
  type IdempotentResult,
  type IdempotentSettlement,
  type IdempotentStart,
} from './run.js';
export { registerIdempotency, type IdempotencyPluginOptions, type IdempotencyRouteConfig } from './route.js';
