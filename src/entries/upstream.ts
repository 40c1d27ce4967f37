/**
 * `breakwater/upstream`: an HTTP client per dependency (undici) with its policies, correlation and
 * idempotency headers, dependency-specific errors and breaker state shared between processes.
 */
export {
  createUpstream,
  UPSTREAM_DEFAULTS,
  SHARED_BREAKER_DEFAULTS,
  shareBreakerState,
  type SharedBreakerOptions,
  type SharedBreakerState,
  type DependencyErrorText,
  type Upstream,
  type UpstreamBreaker,
  type UpstreamBreakerOptions,
  type UpstreamBreakerStatus,
  type UpstreamBulkheadOptions,
  type UpstreamErrorTexts,
  type UpstreamOptions,
  type UpstreamPolicies,
  type UpstreamQuery,
  type UpstreamRequest,
  type UpstreamRequestOptions,
  type UpstreamResponse,
  type UpstreamResultEvent,
  type UpstreamRetryOptions,
  type UpstreamSharedBreakerOptions,
} from '../upstream/index.js';
