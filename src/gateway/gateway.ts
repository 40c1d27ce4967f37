/**
 * The gateway process, assembled: a store, the jobs runtime (and its worker), the app's tools over MCP, the
 * HTTP server, and an orderly shutdown. `breakwater serve` is a thin wrapper around {@link startGateway}
 * (`breakwater worker` around `startWorker`, in `worker.ts`); tests and embedding programs call them directly.
 */
import { createServer as createNetServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import {
  createMetrics,
  type Metrics,
  closeGracefully,
  createServer,
  type ServerLoggerOptions,
} from '../server/index.js';
import { createDurableEventStore, mcpRoutes } from '../mcp/index.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openStore, type Store } from '../store/index.js';
import { systemClock, type Clock } from '../core/index.js';
import { startPruner, type Pruner, type RetentionPolicy, type VacuumMode } from '../store/index.js';
import { pruneEveryFromEnv, retentionFromEnv, vacuumFromEnv } from './retention-env.js';
import type { AuditLog, OperationLedger } from '../operations/index.js';
import { createRedisLimits, type AiGateway } from '../ai/index.js';
import { setLogger } from '../core/index.js';
import { createWebhookIngress, type WebhookIngress } from '../webhooks/index.js';
import type { AppParts, BreakwaterApp } from './app.js';
import { assembleAi } from './ai.js';
import { auditAdminActions, auditJobsAndWebhooks, operationsRuntime } from './operations-runtime.js';
import { adminToken, checkAdminToken, gatewayAdminAuth, gatewayDashboard } from './admin.js';
import { gatewayAuth, type GatewayOAuthOptions } from './auth.js';
import type { AuthMode } from '../http/index.js';
import { oauthMetadataRoutes } from '../http/oauth/index.js';
import { mountAppRoutes } from '../server/index.js';
import { createApiKeys } from '../http/keys/index.js';
import { jsonNotices, textNotices, watchOperatorEvents } from './operator/index.js';

/** Options of {@link startGateway}. */
export interface GatewayOptions {
  /** The application: its tools, job types and dependencies. */
  app: BreakwaterApp;
  /** An open store, or a store URL for `openStore` (default SQLite at `./data/breakwater.db`). */
  store?: Store | string;
  /** Interface to listen on (default `127.0.0.1`: only this machine; use `0.0.0.0` behind a proxy). */
  host?: string;
  /** Port (default 8787; 0 picks a free one). */
  port?: number;
  /** Base URL clients reach the gateway at (default `http://<host>:<port>` as listened). */
  publicUrl?: string;
  /** Run a worker for the app's job types in this process (default true; `serve --no-worker` sets false). */
  worker?: boolean;
  /** Fastify/pino logging (default false). */
  logger?: boolean | ServerLoggerOptions;
  /** Grace period of shutdown for in-flight requests and running jobs, ms (default 10 000). */
  graceMs?: number;
  /**
   * How long a request may take before the server answers for it (504; 408 for a body still arriving), ms
   * (default `createServer`'s 35 000). The AI gateway's route has its own (`answerTimeoutMs`).
   */
  requestTimeoutMs?: number;
  /**
   * Lease of a running job, ms (default the jobs runtime's 30 000): how long a job whose worker died waits
   * before another worker reclaims it. Heartbeats renew it every third of it.
   */
  leaseMs?: number;
  /**
   * Share the app's breaker state with the other processes on this store (default false: per process): the
   * app gets `store.counters` as `AppContext.sharedBreakers` for its upstreams (`serve --shared-breakers`).
   */
  sharedBreakers?: boolean;
  /**
   * About how often finished state past its retention is pruned, ms (default `$BREAKWATER_PRUNE_EVERY`, else
   * 300 000; each wait varied by 10 % either way): jobs and their events, webhook deliveries, stream events,
   * expired idempotency records, settled operations (`retention`), and counters past their window. See
   * `startPruner`.
   */
  pruneEveryMs?: number;
  /**
   * Retentions differing from the defaults (docs/operations-guide.md, "Retention"). Default: those set by the
   * `BREAKWATER_RETAIN_*` variables of `env` (`retention-env.ts`), else `RETENTION_DEFAULTS`.
   */
  retention?: Partial<RetentionPolicy>;
  /**
   * What a prune makes reusable on PostgreSQL (default `$BREAKWATER_PRUNE_VACUUM`, else `auto`: a
   * `VACUUM (SKIP_LOCKED)` of the pruned tables autovacuum does not look after; `always`; `never`). See
   * `VacuumMode`.
   */
  pruneVacuum?: VacuumMode;
  clock?: Clock;
  env?: NodeJS.ProcessEnv;
  /**
   * Where the app's and the gateway's operator lines go (default `console.log`), the notices included
   * (docs/operations-guide.md, "What the operator sees"); with `logger` set, the notices go to that JSON log.
   */
  log?: (line: string) => void;
  /** How often the store is probed for the "store unreachable" notice, ms (default 10 000). */
  storeCheckEveryMs?: number;
  /**
   * The admin token of the dashboard and every admin route (default `$BREAKWATER_ADMIN_TOKEN`; at least 16
   * characters). None: the admin routes answer clients on this machine only. See docs/http.md.
   */
  adminToken?: string;
  /** How often the operation ledger's recovery loop looks at unsettled operations, ms (default 5 000). */
  operationsCheckEveryMs?: number;
  /**
   * Serve anyone without a credential (`--insecure-no-auth`; default false). Without it, a gateway with no
   * credential configured serves this machine only and refuses to listen on another interface.
   */
  insecureNoAuth?: boolean;
  /** Host names answered besides IP literals, loopback names and the public URL's (default `$BREAKWATER_ALLOWED_HOSTS`, comma-separated). */
  allowedHosts?: readonly string[];
  /** Browser origins accepted besides loopback pages and the gateway's own (default `$BREAKWATER_ALLOWED_ORIGINS`). */
  allowedOrigins?: readonly string[];
  /** Proxies whose `X-Forwarded-*` headers are believed, addresses or CIDRs (default `$BREAKWATER_TRUSTED_PROXIES`). */
  trustedProxies?: readonly string[];
  /**
   * Accept OAuth access tokens (the MCP authorization spec: the gateway as a resource server) from this
   * issuer. Default from `$BREAKWATER_OAUTH_ISSUER` (`_AUDIENCE`, `_JWKS_URL`); the audience defaults to the
   * public URL's `/mcp`. See docs/security.md.
   */
  oauth?: GatewayOAuthOptions;
}

/** Defaults of {@link GatewayOptions}. */
export const GATEWAY_DEFAULTS = {
  host: '127.0.0.1',
  port: 8787,
  graceMs: 10_000,
  pruneEveryMs: 300_000,
} as const;

/** A running gateway. */
export interface Gateway {
  /** The URL it listens at, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The MCP endpoint, `${url}/mcp`. */
  mcpUrl: string;
  http: FastifyInstance;
  store: Store;
  jobs: Jobs;
  /** The operation ledger the app's side-effecting actions run through; its recovery loop runs here. */
  operations: OperationLedger;
  audit: AuditLog;
  parts: AppParts;
  /** The names of the MCP tools served, `get_job_status` and `cancel_job` included. */
  toolNames: string[];
  /** The app's own routes (`AppParts.routes`), as `METHOD /path` in declaration order; empty without. */
  appRoutes: readonly string[];
  /** The webhook ingress, when the app declares webhooks. */
  webhooks: WebhookIngress | undefined;
  /** The AI gateway (`POST /v1/chat/completions`), when the app declares one. */
  ai: AiGateway | undefined;
  /** The process's Prometheus metrics (served at `GET /metrics`). */
  metrics: Metrics;
  /** The background pruner: retention, and the store's size the dashboard and `/metrics` show. */
  pruner: Pruner;
  /** The dashboard's URL (`${url}/`); its JSON API is under `/admin/api/`. */
  dashboardUrl: string;
  /** `token` when an admin token is set, else `loopback` (admin routes answer this machine only). */
  adminMode: 'token' | 'loopback';
  /** Who may call the data plane (docs/security.md): `loopback`, `credentials` or `insecure`. */
  authMode: AuthMode;
  /** One line saying who may call, for the start banner. */
  authSummary: string;
  /**
   * Stops in order: new HTTP requests get 503 while in-flight ones finish (up to the grace period), the
   * worker stops claiming and lets running jobs finish (same grace), then the app, the store. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Starts a gateway: opens the store, runs the app's `setup`, mounts `/mcp`, `/jobs…`, `/healthz`, `/readyz`,
 * `/metrics`, the dashboard (`/`, `/admin/api/…`, behind the admin token or loopback-only) and the app's own
 * routes (`AppParts.routes`, see `mountAppRoutes`), starts the worker (unless `worker: false`) and listens.
 * @throws RangeError naming BREAKWATER_ADMIN_TOKEN when the admin token is too short, or the variable of a
 *   retention (`BREAKWATER_RETAIN_…`, `BREAKWATER_PRUNE_EVERY`) that is not a duration, or of
 *   `BREAKWATER_PRUNE_VACUUM` when it is not a vacuum mode (nothing is opened);
 *   RangeError naming the option for a bad `retention` or `pruneEveryMs`;
 *   RangeError with `code` `ERR_BREAKWATER_APP_ROUTES` for an app route at a path the gateway serves or a bad
 *   routes prefix (everything opened is closed again);
 *   Error with `code` `EADDRINUSE` when the port is taken (everything opened is closed again); the
 *   store's error when it cannot be opened; the app's error from `setup`.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const clock = options.clock ?? systemClock;
  const host = options.host ?? GATEWAY_DEFAULTS.host;
  const port = options.port ?? GATEWAY_DEFAULTS.port;
  const graceMs = options.graceMs ?? GATEWAY_DEFAULTS.graceMs;
  const log = options.log ?? ((line: string) => console.log(line));
  const env = options.env ?? process.env;
  // Checked before anything opens: a bad token or retention is a startup error that names the variable.
  const token = adminToken(options.adminToken, env);
  checkAdminToken(token);
  const retention = options.retention ?? retentionFromEnv(env);
  const pruneEveryMs = options.pruneEveryMs ?? pruneEveryFromEnv(env) ?? GATEWAY_DEFAULTS.pruneEveryMs;
  const pruneVacuum = options.pruneVacuum ?? vacuumFromEnv(env);
  const ownsStore = typeof options.store !== 'object';
  const store =
    typeof options.store === 'object' ? options.store : await openStore({ url: options.store, clock });
  const cleanups: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => undefined);
  };
  if (ownsStore) cleanups.push(() => store.close());
  try {
    // Its dashboard sessions live in the store.
    const adminAuth = gatewayAdminAuth(token, store, clock);
    const jobs = createJobs({ store, clock, leaseMs: options.leaseMs });
    // Job URLs are built from the public URL before the server listens, so port 0 is resolved up front.
    const listenPort = port === 0 ? await freePort(host) : port;
    const url = `http://${urlHost(host)}:${listenPort}`;
    const publicUrl = options.publicUrl ?? url;
    const apiKeys = createApiKeys({ store, clock });
    const front = gatewayAuth({
      host,
      publicUrl,
      adminToken: token,
      apiKeys,
      activeKeys: await store.keys.countActive(clock.now()),
      insecureNoAuth: options.insecureNoAuth,
      oauth: options.oauth,
      clock,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      trustedProxies: options.trustedProxies,
      env,
    });
    // Stopped before the store closes (cleanups run in reverse): a round in progress ends after its batch.
    const pruner = startPruner({
      store,
      clock,
      everyMs: pruneEveryMs,
      retention,
      vacuum: pruneVacuum,
      onError: warnPruneFailed,
    });
    cleanups.push(() => pruner.close());
    const { audit, operations } = operationsRuntime(store, clock, env, log, options.operationsCheckEveryMs);
    // Runs just before the store closes: records still queued are appended, not rejected.
    cleanups.push(() => audit.flush());
    const parts = await options.app.setup({
      store,
      jobs,
      operations,
      audit,
      clock,
      publicUrl,
      role: 'serve',
      env,
      log,
      sharedBreakers: options.sharedBreakers === true ? store.counters : undefined,
    });
    cleanups.push(() => parts.close?.() ?? Promise.resolve());
    for (const upstream of parts.upstreams ?? []) cleanups.push(() => upstream.close());
    // Registered after the app's parts so it runs before them: running jobs finish (within the grace)
    // while their upstreams and the app's services are still open.
    cleanups.push(() => jobs.stop({ graceMs }));

    const mcp = mcpRoutes({
      name: parts.name,
      version: parts.version,
      instructions: parts.instructions,
      tools: parts.tools ?? [],
      jobs,
      store,
      publicUrl,
      // One durable event store per MCP session: the SDK names every session's standalone stream alike.
      eventStore: (sessionId: string) => createDurableEventStore(store, { scope: sessionId }),
      clock,
    });
    // Prometheus metrics of everything this process runs, at GET /metrics.
    const metrics = createMetrics({ clock });
    for (const upstream of parts.upstreams ?? []) metrics.observeUpstream(upstream);
    metrics.observeJobs(jobs, store);
    metrics.observeOperations(operations);
    metrics.observeStore(pruner);
    const server: { app?: FastifyInstance } = {};
    // With REDIS_URL, rate windows (the AI gateway's and webhook admission's) and spend budgets live in Redis,
    // shared by every instance; when Redis is away, rate decisions deny and spend refuses.
    const redisUrl = env.REDIS_URL;
    const redis =
      redisUrl === undefined || redisUrl === ''
        ? undefined
        : createRedisLimits({ url: redisUrl, onUnavailable: 'deny' });
    if (redis !== undefined) {
      cleanups.push(() => redis.close());
      await redis.ready();
    }
    // The AI gateway, when the app declares one (its counters in this store, or Redis with REDIS_URL).
    const gatewayAi =
      parts.ai === undefined
        ? undefined
        : await assembleAi({
            ai: parts.ai,
            store,
            clock,
            redis,
            guard: adminAuth.hook,
            log: (line, message) => server.app?.log.info(line, message),
          });
    const ai = gatewayAi?.ai;
    if (gatewayAi !== undefined) {
      cleanups.push(() => gatewayAi.close());
      metrics.observeAi(gatewayAi.ai);
    }
    // Handlers as jobs on this runtime; routes mounted below. The inbox is the same store.
    const webhooks =
      parts.webhooks === undefined
        ? undefined
        : createWebhookIngress({
            ...parts.webhooks,
            store,
            jobs,
            clock,
            adminGuard: adminAuth.hook,
            ...(redis === undefined ? {} : { rateLimitStore: redis.rateLimitStore }),
          });
    // The page at `/` and `/admin/api/…`, behind the same admin check as every admin route.
    const admin = {
      auth: adminAuth,
      parts,
      store,
      jobs,
      operations,
      webhooks,
      ai,
      publicUrl,
      clock,
      // The instance the edge verifies with: a revoke over the admin API applies to the next request.
      keys: apiKeys,
      pruner,
    };
    // Refused here (a bad prefix) or while the server registers it (a reserved path): the gateway does not start.
    const appRoutes =
      parts.routes === undefined
        ? undefined
        : mountAppRoutes(parts.routes, { idempotency: store.idempotency, clock });
    const dashboard = gatewayDashboard(admin);
    cleanups.push(async () => dashboard.close());
    const http = createServer({
      jobs,
      store,
      // The same absolute job URLs over HTTP (`GET /jobs/:id`) as in the MCP tools' answers.
      publicUrl,
      logger: options.logger ?? false,
      breakers: () => [
        ...(parts.upstreams ?? []).flatMap((u) => (u.breaker === undefined ? [] : [u.breaker.state()])),
        ...(parts.webhooks?.handlers ?? []).flatMap((h) =>
          h.breaker === undefined ? [] : [h.breaker.state()],
        ),
      ],
      routes: [
        mcp,
        ...(webhooks === undefined ? [] : [webhooks.routes]),
        ...(gatewayAi?.routes ?? []),
        metrics.routes,
        dashboard.routes,
        ...(front.oauth === undefined ? [] : [oauthMetadataRoutes(front.oauth)]),
        // Last: a route the gateway serves already is a startup error, not a silent override.
        ...(appRoutes === undefined ? [] : [appRoutes.routes]),
      ],
      shutdownGraceMs: graceMs,
      authenticator: front.authenticator,
      allowedHosts: front.allowedHosts,
      allowedOrigins: front.allowedOrigins,
      trustedProxies: front.trustedProxies,
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      clock,
    });
    server.app = http;
    // Library lines (tool calls, upstream failures, job runs, operations) go to the server's JSON log.
    if (options.logger !== undefined && options.logger !== false) {
      const logging = setLogger(http.log);
      cleanups.push(async () => logging.dispose());
    }
    if (webhooks !== undefined) metrics.observeWebhooks(webhooks);
    cleanups.push(() => closeGracefully(http, { graceMs }));
    auditAdminActions(http, audit);
    auditJobsAndWebhooks(audit, jobs, webhooks);
    await http.listen({ host, port: listenPort });

    if (options.worker !== false) jobs.start();
    // Unsettled operations of the app's actions are looked up (and escalated) from every process.
    const recovery = operations.startRecovery();
    cleanups.push(async () => recovery.dispose());
    // Last in, so first out at shutdown: nothing is reported about the parts being closed.
    const notices = watchOperatorEvents({
      sink:
        options.logger === undefined || options.logger === false
          ? textNotices(log, clock)
          : jsonNotices(http.log),
      clock,
      upstreams: parts.upstreams,
      breakers: (parts.webhooks?.handlers ?? []).flatMap((h) => (h.breaker === undefined ? [] : [h.breaker])),
      jobs: options.worker === false ? undefined : jobs,
      webhooks,
      budgets: gatewayAi?.onBudget,
      store,
      storeCheckEveryMs: options.storeCheckEveryMs,
    });
    cleanups.push(async () => notices.dispose());

    let closing: Promise<void> | undefined;
    return {
      url,
      mcpUrl: `${url}/mcp`,
      http,
      store,
      jobs,
      operations,
      audit,
      parts,
      toolNames: mcp.server.tools.map((tool) => tool.name),
      appRoutes: appRoutes?.declared ?? [],
      webhooks,
      ai,
      metrics,
      pruner,
      dashboardUrl: `${url}/`,
      adminMode: adminAuth.mode,
      authMode: front.mode,
      authSummary: front.summary,
      close: () => (closing ??= cleanup()),
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** A failed prune is retried at the next interval; the operator hears of it as a process warning. */
function warnPruneFailed(error: unknown): void {
  const warning = new Error(`gateway: pruning finished state failed: ${(error as Error)?.message ?? error}`, {
    cause: error,
  });
  warning.name = 'BreakwaterGatewayWarning';
  process.emitWarning(warning);
}

/** A port free on `host` now (the OS picks it; it is released at once for the gateway to take). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0 }, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** A host as it goes in a URL: IPv6 literals in brackets, the wildcard addresses as loopback. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
