/**
 * server/: the Fastify HTTP app (docs/architecture.md#layers-and-folders): health, job polling, cancel and
 * SSE routes, problem+json for every error, the inbound request timeout and graceful shutdown, and `/metrics`
 * (Prometheus, see `metrics/`). Other fronts (the MCP endpoint, …) are mounted through `routes`. Imports
 * core, policy, store and jobs through their index.js; never mcp/ or cli/.
 */
export { createServer } from './server.js';
export {
  MASKED_TEXT_PATHS,
  REDACTED_FIELDS,
  REDACTED_HEADERS,
  SERVER_DEFAULTS,
  type BreakerSummary,
  type ServerLoggerOptions,
  type ServerOptions,
  type ServerRoutes,
  type ServerStore,
} from './options.js';
export { closeGracefully, type CloseOptions } from './lifecycle.js';
export {
  APP_ROUTES_DEFAULT_ACCESS,
  APP_ROUTES_ERROR_CODE,
  RESERVED_APP_PATHS,
  mountAppRoutes,
  type AppRoutes,
  type AppRoutesOptions,
  type AppRoutesPlugin,
  type MountAppRoutesOptions,
  type MountedAppRoutes,
} from './app-routes.js';
export { releaseRequestTimeout, requestSignal, type RouteTimeoutConfig } from './request-timeout.js';
export {
  PROBLEM_RENDERER,
  createErrorHandler,
  installErrorRenderer,
  pathOf,
  sendProblem,
  toHttpError,
  type ErrorRenderer,
} from '../http/index.js';
export {
  jobUrls,
  toEventView,
  toJobErrorView,
  toJobView,
  type JobErrorView,
  type JobEventView,
  type JobUrls,
  type JobView,
} from './views.js';
export { LIST_LIMITS } from './jobs-routes.js';
export type { OpenBreakerView } from './health.js';
export {
  METRICS_DEFAULTS,
  METRIC_FAMILIES,
  createMetrics,
  metricsRoutes,
  type JobStatsSource,
  type MetricFamily,
  type Metrics,
  type MetricsOptions,
} from './metrics/index.js';
export * from './admin/index.js';
