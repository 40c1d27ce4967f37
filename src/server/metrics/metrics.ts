import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { defineOptions, o, type Clock, type Disposable } from '../../core/index.js';
import { BoundedCollections, createInstruments, type Instruments } from './instruments.js';
import { JobMetrics, type JobStatsSource, type ObservedJobs } from './jobs.js';
import {
  observeAi,
  observeOperations,
  observeRateLimit,
  observeWebhooks,
  type ObservedAi,
  type ObservedLedger,
  type ObservedRateLimit,
  type ObservedWebhooks,
} from './observers.js';
import { StoreMetrics, type ObservedStore } from './store.js';
import { UpstreamMetrics, type ObservedUpstream } from './upstream.js';

/** Options of {@link createMetrics}; validated at once (an OptionsError names every bad option). */
export interface MetricsOptions {
  /**
   * The prom-client registry to register on, e.g. prom-client's global `register` to serve its default
   * process metrics too. Default: a new registry of this instance's own.
   */
  registry?: Registry;
  /** Prepended to every metric name (default `breakwater_`; empty or `[a-zA-Z_:][a-zA-Z0-9_:]*`). */
  prefix?: string;
  /** Most ms a scrape waits for a store read such as the job stats (default 1 000, > 0). */
  collectTimeoutMs?: number;
  /** Times the scrape-time reads (default the system clock). */
  clock?: Clock;
}

/** Defaults of {@link MetricsOptions}. */
export const METRICS_DEFAULTS = { prefix: 'breakwater_', collectTimeoutMs: 1_000 } as const;

/**
 * The gateway's Prometheus metrics. Each `observe…` subscribes to what the part emits and returns a
 * disposable that unsubscribes (counters keep their values; scrape-time gauges of a disposed part are
 * left out). Listeners only count: they never throw into the part they watch.
 */
export interface Metrics {
  readonly registry: Registry;
  /** The exposition's content type (`text/plain; version=0.0.4; charset=utf-8` for a default registry). */
  readonly contentType: string;
  /** Latency, breaker, bulkhead, retry and timeout metrics of one upstream (label `dependency`: its name). */
  observeUpstream(upstream: ObservedUpstream): Disposable;
  /** Allowed and denied decisions of a rate-limit policy (label `limiter`: its name). */
  observeRateLimit(policy: ObservedRateLimit): Disposable;
  /**
   * Run time, enqueue-to-start and dead letters of a jobs runtime's worker, and jobs by status, queue depth
   * and oldest pending age read on scrape from `store.stats()` (default `jobs.stats()`), bounded by
   * `collectTimeoutMs`. @throws Error while another jobs runtime is observed.
   */
  observeJobs(jobs: ObservedJobs, store?: JobStatsSource): Disposable;
  /** Webhook deliveries accepted, duplicate and rejected (by code), per source. */
  observeWebhooks(ingress: ObservedWebhooks): Disposable;
  /** Operation outcomes and operations unknown past their recovery deadline, per action. */
  observeOperations(ledger: ObservedLedger): Disposable;
  /** AI gateway requests, tokens, cost and time per route step (from its one line per request). */
  observeAi(ai: ObservedAi): Disposable;
  /**
   * The store's rows per kind and bytes on disk, as the pruner last measured them (read at scrape from the
   * pruner, never from the store), and the rows its prunes removed. @throws Error while another is observed.
   */
  observeStore(pruner: ObservedStore): Disposable;
  /** The exposition text, gauges collected now. Never waits longer than `collectTimeoutMs` for a store. */
  scrape(): Promise<string>;
  /** Mounts `GET /metrics`: pass it to `createServer({ routes })` (see {@link metricsRoutes}). */
  readonly routes: (app: FastifyInstance) => Promise<void>;
}

const PREFIX = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/;

/** Checks {@link MetricsOptions} and applies {@link METRICS_DEFAULTS} (the registry is made after). */
const parseOptions = defineOptions<MetricsOptions>()('createMetrics', {
  registry: o.methods<Registry>('a prom-client Registry', 'metrics', 'registerMetric').optional(),
  prefix: o
    .custom<string>(
      (v) => typeof v === 'string' && PREFIX.test(v),
      'empty or a metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)',
    )
    .default(METRICS_DEFAULTS.prefix),
  collectTimeoutMs: o.number().positive().default(METRICS_DEFAULTS.collectTimeoutMs),
  clock: o.clock(),
});

/**
 * Creates the metrics of one gateway process on a prom-client registry (see `catalogue.ts` for every name,
 * type and label).
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createMetrics`) naming every bad option;
 *   Error (prom-client's) when the registry holds a metric of one of these names already (two
 *   `createMetrics` on one registry need distinct prefixes).
 */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const parsed = parseOptions(options);
  const { prefix, collectTimeoutMs: timeoutMs, clock } = parsed;
  const registry = parsed.registry ?? new Registry();

  // The hooks run at scrape time only, once everything below is built.
  const m: Instruments = createInstruments(registry, prefix, {
    breakerState: () => upstreams.collectBreakers(),
    breakerTransitions: () => upstreams.refreshBreakers(),
    bulkheadInUse: () => upstreams.collectBulkheads('bulkheadInUse'),
    bulkheadQueued: () => upstreams.collectBulkheads('bulkheadQueued'),
    bulkheadMaxConcurrent: () => upstreams.collectBulkheads('bulkheadMaxConcurrent'),
    bulkheadMaxQueue: () => upstreams.collectBulkheads('bulkheadMaxQueue'),
    jobs: () => jobs.collectByStatus(),
    jobQueueDepth: () => jobs.collectQueueDepth(),
    jobOldestPendingAge: () => jobs.collectOldestAge(),
    storeRows: () => store.collectRows(),
    storeSize: () => store.collectBytes(),
    // Registered last: waits for this scrape's bounded reads, so their errors show in this scrape.
    collectErrors: () => collections.settled(),
  });
  const collections = new BoundedCollections(clock, timeoutMs, m.collectErrors);
  const upstreams = new UpstreamMetrics(m);
  const jobs = new JobMetrics(m, collections);
  const store = new StoreMetrics(m);

  const metrics: Metrics = {
    registry,
    contentType: registry.contentType,
    observeUpstream: (upstream) => upstreams.observe(upstream),
    observeRateLimit: (policy) => observeRateLimit(m, policy),
    observeJobs: (runtime, store) => jobs.observe(runtime, store),
    observeWebhooks: (ingress) => observeWebhooks(m, ingress),
    observeOperations: (ledger) => observeOperations(m, ledger),
    observeAi: (ai) => observeAi(m, ai),
    observeStore: (pruner) => store.observe(pruner),
    scrape: () => registry.metrics(),
    routes: (app) => metricsRoutes(metrics)(app),
  };
  return metrics;
}

/**
 * The Fastify plugin serving `GET /metrics` (and HEAD): the exposition of `metrics.registry` with its
 * content type and `cache-control: no-store`. Mount it with `createServer({ routes: [metricsRoutes(m)] })`.
 */
export function metricsRoutes(
  metrics: Pick<Metrics, 'scrape' | 'contentType'>,
): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    app.get('/metrics', async (_request, reply) => {
      const text = await metrics.scrape();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
    });
  };
}
