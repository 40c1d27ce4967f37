/**
 * The options of `startGateway` and what it returns: the gateway process's public shapes, apart from
 * the assembly in `gateway.ts`.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/index.js';
import type { Metrics, ServerLoggerOptions } from '../server/index.js';
import type { Jobs } from '../jobs/index.js';
import type { Pruner, RetentionPolicy, Store, VacuumMode } from '../store/index.js';
import type { AuditLog, OperationLedger } from '../operations/index.js';
import type { AiGateway } from '../ai/index.js';
import type { WebhookIngress } from '../webhooks/index.js';
import type { AuthMode } from '../http/index.js';
import type { AppParts, BreakwaterApp } from './app.js';
import type { GatewayOAuthOptions } from './auth.js';

/** Options of `startGateway`. */
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
  /** The names of the MCP tools served, `get_job_status`, `cancel_job` and `respond_to_job` included. */
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
