/**
 * Every metric family `/metrics` serves, in one table: name (without the prefix), type, help, labels and
 * buckets. Names follow the Prometheus conventions (https://prometheus.io/docs/practices/naming/): snake_case,
 * base units with their suffix (`_seconds`), `_total` on counters; labels are low-cardinality (a dependency,
 * job type, source or action name, a method, a status class, a code), never ids.
 *
 * Every label value comes from configuration (a declared upstream, rate limiter, job type, webhook source or
 * operation action; an AI provider, priced model or deployed route) or from a fixed set (states, methods,
 * status classes, core's error codes, the AI outcomes); anything a client chose counts as `_unknown`
 * (docs/architecture.md#identity-and-ownership). Each distinct label set is a series kept for the life of the
 * process, so a label a client could vary would let it grow the process's memory and every scrape without
 * bound.
 */

/** One metric family; `name` is appended to the registry prefix (default `breakwater_`). */
export interface MetricFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  readonly labels: readonly string[];
  /** Histogram bucket upper bounds, in the metric's unit (seconds). */
  readonly buckets?: readonly number[];
}

/** Upstream request latency, seconds: 5 ms to 30 s (the hard maximum of a tool call's deadline). */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Job run time, seconds: 10 ms to one hour. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];
/** Enqueue to start, seconds: 5 ms to 10 minutes. */
const WAIT_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600];

/**
 * The families, keyed by the instrument that records them. Order matters: families are registered in this
 * order, and `metrics_collect_errors_total` comes last so a scrape reports the collection errors of that
 * same scrape (its collect waits for the other collections).
 */
export const METRIC_FAMILIES = {
  breakerState: {
    name: 'circuit_breaker_state',
    type: 'gauge',
    help: 'Circuit breaker state per dependency: 1 for the current state, 0 for the others.',
    labels: ['dependency', 'state'],
  },
  breakerTransitions: {
    name: 'circuit_breaker_transitions_total',
    type: 'counter',
    help: 'Circuit breaker state transitions per dependency.',
    labels: ['dependency', 'from', 'to'],
  },
  bulkheadInUse: {
    name: 'bulkhead_in_use',
    type: 'gauge',
    help: 'Calls running in the bulkhead per dependency.',
    labels: ['dependency'],
  },
  bulkheadQueued: {
    name: 'bulkhead_queued',
    type: 'gauge',
    help: 'Calls waiting for a bulkhead slot per dependency.',
    labels: ['dependency'],
  },
  bulkheadMaxConcurrent: {
    name: 'bulkhead_max_concurrent',
    type: 'gauge',
    help: 'Calls the bulkhead lets run at once per dependency (its limit).',
    labels: ['dependency'],
  },
  bulkheadMaxQueue: {
    name: 'bulkhead_max_queue',
    type: 'gauge',
    help: 'Calls the bulkhead lets wait per dependency (its limit).',
    labels: ['dependency'],
  },
  bulkheadRejected: {
    name: 'bulkhead_rejected_total',
    type: 'counter',
    help: 'Calls the bulkhead turned away per dependency, by reason (full, queue_timeout, deadline_exceeded).',
    labels: ['dependency', 'reason'],
  },
  retries: {
    name: 'retries_total',
    type: 'counter',
    help: 'Retries scheduled per dependency (each wait before another attempt).',
    labels: ['dependency'],
  },
  retryGiveUps: {
    name: 'retry_give_ups_total',
    type: 'counter',
    help: 'Calls the retry policy stopped retrying and failed, per dependency and reason.',
    labels: ['dependency', 'reason'],
  },
  timeouts: {
    name: 'timeouts_total',
    type: 'counter',
    help: 'Attempts cut off by their time limit per dependency, by code (timeout, deadline_exceeded).',
    labels: ['dependency', 'code'],
  },
  upstreamDuration: {
    name: 'upstream_request_duration_seconds',
    type: 'histogram',
    help: 'Upstream request time, retries and waits included, by dependency, method, status class and outcome.',
    labels: ['dependency', 'method', 'status_class', 'outcome'],
    buckets: REQUEST_BUCKETS,
  },
  rateLimitDecisions: {
    name: 'rate_limit_decisions_total',
    type: 'counter',
    help: 'Rate limit decisions per limiter, allowed or denied.',
    labels: ['limiter', 'decision'],
  },
  jobs: {
    name: 'jobs',
    type: 'gauge',
    help: 'Jobs in the store by status (read from the store on scrape).',
    labels: ['status'],
  },
  jobQueueDepth: {
    name: 'job_queue_depth',
    type: 'gauge',
    help: 'Pending jobs: due, delayed or waiting out a retry backoff (read from the store on scrape).',
    labels: [],
  },
  jobOldestPendingAge: {
    name: 'job_oldest_pending_age_seconds',
    type: 'gauge',
    help: 'How long the oldest due pending job has waited since it became due; 0 when none.',
    labels: [],
  },
  jobRunDuration: {
    name: 'job_run_duration_seconds',
    type: 'histogram',
    help: "Job handler run time per run, by job type and the run's outcome.",
    labels: ['type', 'outcome'],
    buckets: RUN_BUCKETS,
  },
  jobEnqueueToStart: {
    name: 'job_enqueue_to_start_seconds',
    type: 'histogram',
    help: 'From when a job became due (enqueue, after any requested delay) to the start of its first run.',
    labels: ['type'],
    buckets: WAIT_BUCKETS,
  },
  jobDeadLetters: {
    name: 'job_dead_letters_total',
    type: 'counter',
    help: 'Jobs that ended failed (the dead letter) in this process, by job type.',
    labels: ['type'],
  },
  webhookDeliveries: {
    name: 'webhook_deliveries_total',
    type: 'counter',
    help: 'Webhook deliveries per source by result: accepted, duplicate or rejected.',
    labels: ['source', 'result'],
  },
  webhookRejections: {
    name: 'webhook_rejections_total',
    type: 'counter',
    help: 'Webhook deliveries refused per source, by error code.',
    labels: ['source', 'code'],
  },
  operationOutcomes: {
    name: 'operation_outcomes_total',
    type: 'counter',
    help: 'Outbound operations reaching an outcome (succeeded, failed, unknown) per action.',
    labels: ['action', 'outcome'],
  },
  operationsPastDeadline: {
    name: 'operations_unknown_past_deadline_total',
    type: 'counter',
    help: 'Operations still unknown at their recovery deadline (escalated to needs_attention) per action.',
    labels: ['action'],
  },
  aiRequests: {
    name: 'ai_requests_total',
    type: 'counter',
    help: 'AI gateway requests by route, step, provider, model and outcome (ok, or the reason the client got).',
    labels: ['route', 'step', 'provider', 'model', 'outcome'],
  },
  aiTokens: {
    name: 'ai_tokens_total',
    type: 'counter',
    help: 'Tokens the providers reported, by route step and kind (prompt, completion, cached).',
    labels: ['route', 'step', 'provider', 'model', 'kind'],
  },
  aiCost: {
    name: 'ai_cost_usd_total',
    type: 'counter',
    help: 'Cost of AI gateway requests in USD (from usage and the price table), by route step.',
    labels: ['route', 'step', 'provider', 'model'],
  },
  aiDuration: {
    name: 'ai_request_duration_seconds',
    type: 'histogram',
    help: 'AI gateway request time from receipt to the end of the answer, by route step.',
    labels: ['route', 'step', 'provider', 'model'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  },
  storeRows: {
    name: 'store_rows',
    type: 'gauge',
    help: 'Rows in the store per kind (jobs, job_events, webhook_inbox, stream_events, idempotency, operations, audit), as last measured by the pruner.',
    labels: ['kind'],
  },
  storeSize: {
    name: 'store_size_bytes',
    type: 'gauge',
    help: 'Bytes the store takes on disk (SQLite: the file and its log; PostgreSQL: its tables with indexes), as last measured.',
    labels: [],
  },
  storePruned: {
    name: 'store_pruned_rows_total',
    type: 'counter',
    help: 'Rows removed by the retention prunes of this process, per kind.',
    labels: ['kind'],
  },
  collectErrors: {
    name: 'metrics_collect_errors_total',
    type: 'counter',
    help: 'Scrape-time collections that failed or timed out, by collector; their gauges were left out.',
    labels: ['collector'],
  },
} as const satisfies Record<string, MetricFamily>;

export type FamilyKey = keyof typeof METRIC_FAMILIES;

/** The label value for a webhook delivery to a path that names no declared source (never a source name). */
export const UNKNOWN_SOURCE = '_unknown';

const METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
]);

/** The method as a label: one of the RFC 9110 methods (plus PATCH), any other as `OTHER`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'OTHER';
}

/** `2xx` … `5xx` for an HTTP status; `none` when no answer came back. */
export function statusClass(status: number | undefined): string {
  if (status === undefined || !(status >= 100 && status < 600)) return 'none';
  return `${Math.floor(status / 100)}xx`;
}
