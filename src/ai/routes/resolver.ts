/**
 * The gateway's route resolver over `store.routes` (docs/ai-gateway.md#routes): deployed routes compiled once
 * and cached; a deploy or rollback from any process sharing the store takes effect within `refreshMs`,
 * without a restart.
 */
import { BreakwaterError, defineOptions, o, type Clock } from '../../core/index.js';
import { MemoryRateLimitStore, type RateLimitStore } from '../../policy/index.js';
import type { CounterStore, RouteStore, RouteVersion } from '../../store/index.js';
import type { BudgetEvent } from '../limits/budget-events.js';
import { counterRateLimitStore } from '../limits/counter-rate-limit-store.js';
import { MemoryCounterStore } from '../limits/memory-counters.js';
import type { SpendStore } from '../limits/spend-store.js';
import { usdToMicro } from '../pricing.js';
import type { AiRouteResolver } from '../types.js';
import { parseRouteDefinition } from './definition.js';
import { compileRoute, type RouteFlow } from './flow.js';
import type { RouteLimitStores } from './route-limits.js';

/** Options of {@link createRouteResolver}. */
export interface RouteResolverOptions {
  /** Where routes are (`store.routes`). */
  routes: RouteStore;
  /**
   * Where limit nodes keep their counters (`store.counters`, so they hold across processes). Default: this
   * process's memory.
   */
  counters?: CounterStore;
  /** Where limit nodes' rate windows live (default: `counterRateLimitStore(counters)`, or memory). */
  rateLimitStore?: RateLimitStore;
  /** Where limit nodes' spend reservations live (default: over `counters`; `createRedisLimits` gives Redis's). */
  spendStore?: SpendStore;
  /**
   * The estimated cost of a request without `max_tokens` under a limit node's spend rule, USD (give the
   * gateway's `maxRequestCostUsd`). Without it such a request is refused (400) by that rule.
   */
  maxRequestCostUsd?: number;
  /**
   * The share of a limit node's budget one principal's requests in flight may hold, 0 < share <= 1 (give the
   * gateway's `maxReservedShare`; default 0.25).
   */
  maxReservedShare?: number;
  /** At most how often the store's revision is read, ms (default 1 000). */
  refreshMs?: number;
  clock?: Clock;
  /**
   * Hears what the resolver could not do and worked around: the store unreachable during a refresh (the
   * cached routes keep serving) or a deployed version whose definition is invalid (its route answers 500).
   */
  onError?: (error: unknown, route: string | undefined) => void;
  /**
   * Hears each limit node's spend counter reaching 80 % or 100 % of its budget in its window, in this process
   * (`owner` `route:<name>`; see `BudgetEvent`). Called synchronously; one that throws changes nothing.
   */
  onBudget?: (event: BudgetEvent) => void;
}

/** A resolver and its controls. */
export interface RouteResolver {
  /** Give it to `createAiGateway({ routes })`. */
  readonly resolve: AiRouteResolver;
  /** Makes the next `resolve` read the store's revision at once (after a deploy made by this process). */
  invalidate(): void;
  /** Reads the revision now and reloads the cached routes that changed. Never rejects. */
  refresh(): Promise<void>;
  /**
   * The names of the deployed routes, as of the last check (made now when due, as `resolve` does): give it
   * to `createAiGateway({ routeNames })` for `GET /v1/models`.
   * @throws BreakwaterError `upstream_unavailable` when the store has never been read.
   */
  names(): Promise<string[]>;
}

/** Defaults of {@link RouteResolverOptions}. */
export const ROUTE_RESOLVER_DEFAULTS = { refreshMs: 1_000 } as const;

const parseOptions = defineOptions<RouteResolverOptions>()('createRouteResolver', {
  routes: o.methods<RouteStore>('a RouteStore (store.routes)', 'deployed', 'revision'),
  counters: o.methods<CounterStore>('a CounterStore', 'update').optional(),
  rateLimitStore: o.methods<RateLimitStore>('a RateLimitStore', 'consume').optional(),
  spendStore: o.methods<SpendStore>('a SpendStore', 'reserve', 'settle').optional(),
  maxRequestCostUsd: o.number().positive().optional(),
  maxReservedShare: o.fraction().optional(),
  refreshMs: o.number().int().min(0).max(3_600_000).default(ROUTE_RESOLVER_DEFAULTS.refreshMs),
  clock: o.clock(),
  onError: o.fn<(error: unknown, route: string | undefined) => void>().optional(),
  onBudget: o.fn<(event: BudgetEvent) => void>().optional(),
});

/** A cached route: its deployed flow, none (unknown or nothing deployed), or a definition that failed. */
interface Entry {
  readonly version: number | null;
  readonly flow: RouteFlow | undefined;
  readonly error: BreakwaterError | undefined;
}

/**
 * Creates the resolver. How it stays current:
 * - a deployed route is read (`routes.deployed(name)`) and compiled on its first request, then served from
 *   memory; a name that was not deployed at the last check is answered (404) without reading the store, so a
 *   flood of `dynamic/typo` never reaches it;
 * - at most every `refreshMs` (on `clock`), the request that finds the check due reads `routes.revision()`
 *   (one row) and, only when it changed, `routes.heads()` and each cached route whose deployed version
 *   changed. Requests arriving meanwhile wait for that one check, so a deploy committed `refreshMs` before a
 *   request is always seen by it; between checks no request touches the store;
 * - a flow, once resolved, is the request's for its whole run: a request in flight keeps its version.
 *
 * A store failure during a check keeps the cached routes serving (retried after `refreshMs`, reported to
 * `onError`); a route never read before then answers 503 `upstream_unavailable`. A deployed version whose
 * definition is invalid (written around the admin API) answers 500 `internal_error` until another version is
 * deployed.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createRouteResolver`) naming every bad
 *   option.
 */
export function createRouteResolver(options: RouteResolverOptions): RouteResolver {
  const p = parseOptions(options);
  const { refreshMs, clock, maxRequestCostUsd: cost, maxReservedShare: share, onError, onBudget } = p;
  const store = p.routes;
  const counters = p.counters ?? new MemoryCounterStore(clock);
  const stores: RouteLimitStores = {
    counters,
    rateStore:
      p.rateLimitStore ??
      (p.counters === undefined ? new MemoryRateLimitStore() : counterRateLimitStore(counters)),
    spendStore: p.spendStore,
    ceilingMicroUsd: cost === undefined ? undefined : usdToMicro(cost),
    ...(share === undefined ? {} : { maxReservedShare: share }),
    ...(onBudget === undefined ? {} : { onBudget }),
  };
  const report = (error: unknown, route: string | undefined): void => {
    try {
      onError?.(error, route);
    } catch {
      // a failing listener changes nothing
    }
  };

  /** Deployed version by route name, from `heads()` at the last revision change (undefined: never read). */
  let heads: Map<string, number | null> | undefined;
  /** Compiled deployed routes, read on first use. */
  const cache = new Map<string, Entry>();
  const loading = new Map<string, Promise<Entry>>();
  let seenRevision: number | undefined;
  let nextCheckAt = -Infinity;
  let checking: Promise<void> | undefined;

  const compile = (version: RouteVersion): Entry => {
    try {
      const definition = parseRouteDefinition(version.definition);
      const flow = compileRoute(definition, { name: version.name, version: version.version, stores });
      return { version: version.version, flow, error: undefined };
    } catch (error) {
      report(error, `${version.name}@${version.version}`);
      const detail = error instanceof BreakwaterError ? error.message : String(error);
      return {
        version: version.version,
        flow: undefined,
        error: new BreakwaterError('internal_error', {
          message: `The deployed version ${version.version} of the route ${version.name} cannot run: ${detail} Deploy a valid version.`,
          details: { reason: 'invalid_deployed_route', route: `${version.name}@${version.version}` },
        }),
      };
    }
  };

  /** Reads and compiles `name` (one read at a time per name), replacing its cache entry. */
  const load = (name: string): Promise<Entry> => {
    let pending = loading.get(name);
    if (pending === undefined) {
      pending = store
        .deployed(name)
        .then((version): Entry => {
          const entry: Entry =
            version === undefined ? { version: null, flow: undefined, error: undefined } : compile(version);
          if (entry.version === null) cache.delete(name);
          else cache.set(name, entry);
          return entry;
        })
        .finally(() => loading.delete(name));
      loading.set(name, pending);
    }
    return pending;
  };

  const check = (): Promise<void> => {
    checking ??= (async () => {
      try {
        const revision = await store.revision();
        if (revision !== seenRevision) {
          // Read after the revision: anything deployed later bumps it again and is seen next time.
          const next = new Map((await store.heads()).map((h) => [h.name, h.deployed]));
          const names = new Set([...cache.keys(), ...loading.keys()]);
          await Promise.all(
            [...names].map(async (name) => {
              // A read in flight may have started before this revision: wait for it, then compare.
              const entry = loading.has(name)
                ? await loading.get(name)!.catch(() => undefined)
                : cache.get(name);
              const deployed = next.get(name) ?? null;
              if (deployed === null) cache.delete(name);
              else if (entry?.version !== deployed) await load(name);
            }),
          );
          heads = next;
          // Only now, every changed route reloaded: after a failure above the next check tries again.
          seenRevision = revision;
        }
      } catch (error) {
        report(error, undefined);
      } finally {
        nextCheckAt = clock.now() + refreshMs;
        checking = undefined;
      }
    })();
    return checking;
  };

  const unavailable = (name: string, cause: unknown): BreakwaterError =>
    new BreakwaterError('upstream_unavailable', {
      message: `The route ${name} could not be read from the store; try again shortly.`,
      source: 'ai-routes',
      retryAfterMs: Math.max(1_000, refreshMs),
      cause,
    });

  const resolve: AiRouteResolver = async (name) => {
    if (checking !== undefined || clock.now() >= nextCheckAt) await check();
    let entry = cache.get(name);
    if (entry === undefined) {
      if (heads === undefined) throw unavailable(name, undefined);
      // Names not deployed at the last check are answered from memory: `dynamic/<anything>` floods
      // never reach the store.
      if ((heads.get(name) ?? null) === null) return undefined;
      try {
        entry = await load(name);
      } catch (error) {
        report(error, name);
        throw unavailable(name, error);
      }
    }
    if (entry.error !== undefined) throw entry.error;
    return entry.flow;
  };

  return {
    resolve,
    invalidate() {
      nextCheckAt = -Infinity;
    },
    refresh: check,
    async names() {
      if (checking !== undefined || clock.now() >= nextCheckAt) await check();
      if (heads === undefined) throw unavailable('list', undefined);
      return [...heads].filter(([, deployed]) => deployed !== null).map(([name]) => name);
    },
  };
}
