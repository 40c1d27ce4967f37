/**
 * The gateway process, assembled: a store, the jobs runtime (and its worker), the app's tools over MCP, the
 * HTTP server, and an orderly shutdown. `breakwater serve` is a thin wrapper around {@link startGateway}
 * (`breakwater worker` around `startWorker`, in `worker.ts`); tests and embedding programs call them directly.
 */
import type { FastifyInstance } from 'fastify';
import { createMetrics, closeGracefully, createServer } from '../server/index.js';
import { createDurableEventStore, mcpRoutes } from '../mcp/index.js';
import { createJobs } from '../jobs/index.js';
import { systemClock } from '../core/index.js';
import { openStore, startPruner } from '../store/index.js';
import { pruneEveryFromEnv, retentionFromEnv, vacuumFromEnv } from './retention-env.js';
import { createRedisLimits } from '../ai/index.js';
import { setLogger } from '../core/index.js';
import { createWebhookIngress } from '../webhooks/index.js';
import { assembleAi } from './ai.js';
import { auditAdminActions, auditJobsAndWebhooks, operationsRuntime } from './operations-runtime.js';
import { adminToken, checkAdminToken, gatewayAdminAuth, gatewayDashboard } from './admin.js';
import { gatewayAuth } from './auth.js';
import { oauthMetadataRoutes } from '../http/oauth/index.js';
import { mountAppRoutes } from '../server/index.js';
import { createApiKeys } from '../http/keys/index.js';
import { jsonNotices, textNotices, watchOperatorEvents } from './operator/index.js';
import { freePort, urlHost } from './listen.js';
import { GATEWAY_DEFAULTS, type Gateway, type GatewayOptions } from './types.js';

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
      resources: parts.resources ?? [],
      prompts: parts.prompts ?? [],
      jobs,
      store,
      publicUrl,
      // One durable event store per MCP session: the SDK names every session's standalone stream alike.
      eventStore: (sessionId: string) => createDurableEventStore(store, { scope: sessionId }),
      // Gateways that share BREAKWATER_MCP_STATE_KEY accept each other's requestState (docs/mcp.md).
      requestStateKey: env.BREAKWATER_MCP_STATE_KEY || undefined,
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
