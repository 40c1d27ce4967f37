/**
 * Who is calling (docs/architecture.md#identity-and-ownership). Every request the HTTP edge admits carries
 * one {@link Principal}: an API key, an OAuth access token, the admin token, the machine's own user (loopback
 * mode, no credentials configured), or nobody in particular (`--insecure-no-auth`). Jobs, tasks and
 * operations record the `id` of the principal that started them; only that principal, or one with the `admin`
 * scope, sees them again. Lives in core so every capability can read it without importing the HTTP edge.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The scopes Breakwater checks. A credential may hold others (an OAuth token's scopes, tool scopes); they are
 * kept in {@link Principal.scopes} as given.
 * - `mcp`: `/mcp` (tools, tasks); `ai`: `/v1/*`; `jobs`: `/jobs/*` (the principal's own jobs);
 * - `metrics`: `GET /metrics` (a Prometheus scraper's least privilege);
 * - `admin`: everything above, every principal's jobs, tasks and operations, and the admin API.
 */
export const SCOPES = ['mcp', 'ai', 'jobs', 'metrics', 'admin'] as const;

/** One of {@link SCOPES}. */
export type Scope = (typeof SCOPES)[number];

/**
 * How a principal was established:
 * - `api_key`: a Breakwater API key (`breakwater keys create`);
 * - `oauth`: a bearer JWT validated against an authorization server's keys (the gateway as a resource server);
 * - `admin`: the admin token (`BREAKWATER_ADMIN_TOKEN`) or a dashboard session made with it;
 * - `local`: loopback mode, a client on this machine while no credential is configured;
 * - `anonymous`: `--insecure-no-auth`, any client;
 * - `webhook`: a verified webhook source (its jobs belong to it);
 * - `system`: the gateway itself (recovery loops, the CLI on the store).
 */
export type PrincipalKind = 'api_key' | 'oauth' | 'admin' | 'local' | 'anonymous' | 'webhook' | 'system';

/** A principal's own AI gateway limits (an API key's), applied on top of the gateway's rules. */
export interface PrincipalAiLimits {
  /** Models it may call, as clients name them (`<provider>/<model>` or `dynamic/<route>`). Absent: any. */
  readonly allowedModels?: readonly string[];
  /** Spend budgets counted for this principal alone. */
  readonly budgets?: readonly PrincipalBudget[];
  /** Request rate rules counted for this principal alone. */
  readonly rateRules?: readonly PrincipalRateRule[];
}

/** A spend budget: at most `limitUsd` per `windowMs` (fixed window unless `sliding`). */
export interface PrincipalBudget {
  readonly limitUsd: number;
  readonly windowMs: number;
  readonly window?: 'fixed' | 'sliding';
}

/** A rate rule: at most `limit` requests per `windowMs` (fixed window unless `sliding`). */
export interface PrincipalRateRule {
  readonly limit: number;
  readonly windowMs: number;
  readonly window?: 'fixed' | 'sliding';
}

/** The caller of one request. Immutable. */
export interface Principal {
  /**
   * Stable and unique across kinds: what jobs, tasks and operations record as their owner. `key:<key id>`,
   * `oauth:<issuer> <subject>`, `admin`, `local`, `anonymous`, `webhook:<source>`, `system`.
   */
  readonly id: string;
  readonly kind: PrincipalKind;
  /** For people: the key's name, the token's subject, the source's name. */
  readonly name: string;
  /** Scopes held (see {@link SCOPES}); `admin` implies the others (use {@link hasScope}). */
  readonly scopes: ReadonlySet<string>;
  /**
   * Metadata bound to the credential (`user`, `team`, `plan`, …): what AI rate and spend rules scope by.
   * A client header adds to it only when {@link trustedBackend} is true, and never overrides a bound key.
   */
  readonly metadata: Readonly<Record<string, string>>;
  /** True when the caller is a backend trusted to say on whose behalf it calls (`x-breakwater-metadata`). */
  readonly trustedBackend: boolean;
  /** The credential's own AI limits (API keys), when it has any. */
  readonly ai?: PrincipalAiLimits;
}

/** True when `principal` holds `scope` (directly, or through `admin`). */
export function hasScope(principal: Principal, scope: string): boolean {
  return principal.scopes.has(scope) || principal.scopes.has('admin');
}

/**
 * True when `principal` may see a record owned by `owner` (a principal id, or null for records made before
 * owners were kept and by the gateway itself): its own records, and every record for `admin`.
 */
export function canAccess(principal: Principal, owner: string | null): boolean {
  return principal.scopes.has('admin') || (owner !== null && owner === principal.id);
}

function fixed(
  id: string,
  kind: PrincipalKind,
  name: string,
  scopes: readonly string[],
  trustedBackend: boolean,
): Principal {
  return Object.freeze({
    id,
    kind,
    name,
    scopes: new Set(scopes),
    metadata: Object.freeze({}),
    trustedBackend,
  });
}

/**
 * The principals that do not come from a credential. `local` and `anonymous` hold every scope: in loopback
 * mode the machine's user is its operator, and `--insecure-no-auth` says so of everyone.
 */
export const PRINCIPALS = {
  local: fixed('local', 'local', 'this machine (loopback mode)', SCOPES, true),
  anonymous: fixed('anonymous', 'anonymous', 'anyone (--insecure-no-auth)', SCOPES, true),
  admin: fixed('admin', 'admin', 'admin token', SCOPES, true),
  system: fixed('system', 'system', 'the gateway', SCOPES, true),
} as const;

/** The principal a webhook source's jobs belong to (`webhook:<source>`); no scope but its own. */
export function webhookPrincipal(source: string): Principal {
  return fixed(`webhook:${source}`, 'webhook', source, [], false);
}

const current = new AsyncLocalStorage<Principal>();

/**
 * The principal of the work in progress, carried by `AsyncLocalStorage` below {@link PrincipalContext.run}:
 * the HTTP edge runs a route's handler under it, so code far from the request (an MCP task store, a tool's
 * job enqueue) knows on whose behalf it runs.
 */
export const PrincipalContext = {
  /** Runs `fn` with `principal` as the current one. */
  run<T>(principal: Principal, fn: () => T): T {
    return current.run(principal, fn);
  },
  /** The current principal, or undefined outside any {@link PrincipalContext.run} (library use). */
  get(): Principal | undefined {
    return current.getStore();
  },
};
