/**
 * upstream/: an HTTP client per dependency (undici) with its policies, correlation and idempotency headers,
 * and dependency-specific errors (docs/architecture.md#layers-and-folders). Imports only core, policy and
 * store.
 */
export { createUpstream } from './upstream.js';
export { UPSTREAM_DEFAULTS } from './options.js';
export {
  SHARED_BREAKER_DEFAULTS,
  shareBreakerState,
  type SharedBreakerOptions,
  type SharedBreakerState,
} from './shared-breaker.js';
export type {
  DependencyErrorText,
  Upstream,
  UpstreamBreaker,
  UpstreamBreakerOptions,
  UpstreamBreakerStatus,
  UpstreamBulkheadOptions,
  UpstreamErrorTexts,
  UpstreamOptions,
  UpstreamPolicies,
  UpstreamQuery,
  UpstreamRequest,
  UpstreamRequestOptions,
  UpstreamResponse,
  UpstreamResultEvent,
  UpstreamRetryOptions,
  UpstreamSharedBreakerOptions,
} from './types.js';
