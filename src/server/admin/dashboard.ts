/**
 * The dashboard assembled from a gateway's parts: which breakers and bulkheads it shows, what feeds its
 * charts, and the Fastify plugin that serves it (see routes.ts).
 */
import { defineOptions, o, type Clock, type Disposable } from '../../core/index.js';
import type { ApiKeys } from '../../http/keys/index.js';
import type { Jobs } from '../../jobs/index.js';
import type { CircuitBreakerPolicy, CircuitStateChange } from '../../policy/index.js';
import type { OperationStore, Pruner } from '../../store/index.js';
import type { Upstream } from '../../upstream/index.js';
import type { ServerRoutes, ServerStore } from '../options.js';
import type { AdminAuth } from './auth.js';
import { WebhookCounts, type AdminWebhooks } from './overview.js';
import { adminRoutes } from './routes.js';
import { createSeries, type Series, type SeriesOptions } from './series.js';
import type { AdminSpendSource } from './spend.js';
import { WebFiles } from './static.js';
import type { AdminBreaker } from './views.js';

/** Options of {@link createDashboard}; validated at once (an OptionsError names every bad option). */
export interface DashboardOptions {
  /** The admin check in front of the page and its API ({@link createAdminAuth}). */
  auth: AdminAuth;
  jobs: Jobs;
  /** The job store (a job's last progress). */
  store: ServerStore;
  /** The operation store (`store.operations`). */
  operations: OperationStore;
  /** Runs an operation recovery pass now (`ledger.recover()`): a reconcile does not wait for the loop. */
  recoverOperations?: () => Promise<unknown>;
  /** The app's dependencies: their breakers, bulkheads and calls (the charts). */
  upstreams?: readonly Pick<Upstream, 'name' | 'breaker' | 'policies' | 'onResult'>[];
  /** Breakers of webhook handlers (`onWebhook(…, { breaker })`). */
  handlerBreakers?: readonly CircuitBreakerPolicy[];
  /** The webhook ingress: sources with their counts and backlog. */
  webhooks?: AdminWebhooks;
  /** The AI gateway: its requests (the charts) and, with `spend`, spend per rule. */
  ai?: {
    onRequest: Parameters<Series['observeAi']>[0]['onRequest'];
    spend?: Omit<AdminSpendSource, 'clock'>;
  };
  /** Base of the job URLs in answers (as the server's `publicUrl`). */
  publicUrl?: string;
  /** The charts' intervals (default 2 s over 10 minutes). */
  series?: Omit<SeriesOptions, 'clock'>;
  /** Where the page's files are (default web/ at the package root). */
  webRoot?: string;
  /** Longest wait of a reconcile, ms (integer in [0, 30 000], default 5 000; a request's `wait_ms` wins). */
  reconcileWaitMs?: number;
  /** The gateway's API keys, managed at `/admin/api/keys…` (default: no such routes). */
  keys?: ApiKeys;
  /** The gateway's pruner: the overview shows the store's size and the last prune (default: not shown). */
  storeSize?: Pick<Pruner, 'size' | 'lastReport'>;
  clock?: Clock;
}

/** Defaults of {@link DashboardOptions}. */
export const DASHBOARD_DEFAULTS = { reconcileWaitMs: 5_000 } as const;

const isFn = (v: unknown): boolean => typeof v === 'function';

/**
 * Checks {@link DashboardOptions} and applies {@link DASHBOARD_DEFAULTS}. The gateway's parts (jobs, stores,
 * upstreams' policies, the webhook ingress, the AI gateway, the keys) are checked where they are made.
 */
const parseOptions = defineOptions<DashboardOptions>()('createDashboard', {
  auth: o.custom<AdminAuth>(
    (v) => typeof v === 'object' && v !== null && isFn((v as AdminAuth).hook),
    'an AdminAuth (createAdminAuth)',
  ),
  jobs: o.any<Jobs>(),
  store: o.any<ServerStore>(),
  operations: o.any<OperationStore>(),
  recoverOperations: o.fn<() => Promise<unknown>>().optional(),
  upstreams: o
    .custom<NonNullable<DashboardOptions['upstreams']>>(Array.isArray, 'an array of upstreams')
    .default([]),
  handlerBreakers: o
    .custom<readonly CircuitBreakerPolicy[]>(Array.isArray, 'an array of circuit breakers')
    .default([]),
  webhooks: o.any<AdminWebhooks | undefined>(),
  ai: o.any<DashboardOptions['ai']>(),
  publicUrl: o.string().optional(),
  series: o.record<NonNullable<DashboardOptions['series']>>().optional(),
  webRoot: o.string().min(1).optional(),
  reconcileWaitMs: o.number().int().min(0).max(30_000).default(DASHBOARD_DEFAULTS.reconcileWaitMs),
  keys: o.any<ApiKeys | undefined>(),
  storeSize: o.any<DashboardOptions['storeSize']>(),
  clock: o.clock(),
});

/** A dashboard: mount `routes` with `createServer({ routes })`; `close()` stops its subscriptions. */
export interface Dashboard {
  readonly routes: ServerRoutes;
  readonly series: Series;
  close(): void;
}

/**
 * Assembles the dashboard.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createDashboard`, or `createSeries` for a bad
 *   `series`) naming every bad option.
 */
export function createDashboard(given: DashboardOptions): Dashboard {
  const options = parseOptions(given);
  const clock = options.clock;
  const series = createSeries({ ...options.series, clock });
  const subscriptions: Disposable[] = [];
  const upstreams = options.upstreams;
  for (const upstream of upstreams) subscriptions.push(series.observeUpstream(upstream));
  subscriptions.push(series.observeJobs(options.jobs));
  if (options.ai !== undefined) subscriptions.push(series.observeAi(options.ai));
  let webhooks: WebhookCounts | undefined;
  if (options.webhooks !== undefined) {
    subscriptions.push(series.observeWebhooks(options.webhooks));
    webhooks = new WebhookCounts(options.webhooks);
    subscriptions.push({ dispose: () => webhooks!.dispose() });
  }

  const breakers: AdminBreaker[] = [];
  for (const upstream of upstreams) {
    const breaker = upstream.breaker;
    if (breaker === undefined) continue;
    breakers.push({
      name: breaker.name,
      kind: 'upstream',
      state: () => breaker.policy.state(),
      lastTransition: () => breaker.state().lastTransition,
      isolate: () => breaker.policy.isolate(),
      reset: () => breaker.policy.reset(),
    });
  }
  for (const policy of options.handlerBreakers) {
    let last: CircuitStateChange | null = null;
    subscriptions.push(policy.onStateChange((change) => (last = change)));
    breakers.push({
      name: policy.name,
      kind: 'webhook',
      state: () => policy.state(),
      lastTransition: () => last,
      isolate: () => policy.isolate(),
      reset: () => policy.reset(),
    });
  }
  const bulkheads = upstreams.flatMap((u) =>
    u.policies.bulkhead === undefined ? [] : [u.policies.bulkhead],
  );

  const routes = adminRoutes({
    auth: options.auth,
    jobs: options.jobs,
    store: options.store,
    operations: options.operations,
    recoverOperations: options.recoverOperations,
    reconcileWaitMs: options.reconcileWaitMs,
    keys: options.keys,
    breakers: () => breakers,
    bulkheads: () => bulkheads.map((b) => b.state()),
    webhooks,
    spend: options.ai?.spend === undefined ? undefined : { ...options.ai.spend, clock },
    publicUrl: options.publicUrl,
    storeSize: options.storeSize,
    series,
    files: new WebFiles(options.webRoot),
    clock,
  });
  return {
    routes,
    series,
    close: () => {
      for (const subscription of subscriptions.splice(0)) subscription.dispose();
    },
  };
}
