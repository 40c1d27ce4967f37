/**
 * server/metrics: `/metrics` in the Prometheus text format (prom-client), fed by the events the capabilities
 * already emit and by scrape-time reads of their state. See `catalogue.ts` for every metric.
 */
export {
  METRICS_DEFAULTS,
  createMetrics,
  metricsRoutes,
  type Metrics,
  type MetricsOptions,
} from './metrics.js';
export { METRIC_FAMILIES, UNKNOWN_SOURCE, type MetricFamily } from './catalogue.js';
export type { ObservedUpstream } from './upstream.js';
export type { JobStatsSource, ObservedJobs } from './jobs.js';
export { STORE_KIND_LABELS, type ObservedStore } from './store.js';
export type { ObservedAi, ObservedLedger, ObservedRateLimit, ObservedWebhooks } from './observers.js';
