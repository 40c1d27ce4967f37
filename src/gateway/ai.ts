/**
 * The AI gateway of a gateway process, assembled: its counters in the process's store (or Redis with
 * `REDIS_URL`), `dynamic/<route>` resolved from the store's deployed routes, and the routes admin API.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EventSource, type Disposable } from '../core/index.js';
import {
  createAiGateway,
  createRouteResolver,
  routeAdminRoutes,
  type AiGateway,
  type BudgetEvent,
  type RedisLimits,
} from '../ai/index.js';
import type { Clock } from '../core/index.js';
import type { Store } from '../store/index.js';
import type { AppAiOptions } from './app.js';

/** The AI gateway and its admin routes; `close` releases what it opened. */
export interface GatewayAi {
  ai: AiGateway;
  /** `POST /v1/chat/completions`, `POST /v1/embeddings`, `GET /v1/models` and the routes admin API. */
  routes: Array<(app: FastifyInstance) => Promise<void>>;
  /** Hears the budgets of the gateway's rules, callers' own and routes' limit nodes reaching 80 % and 100 %. */
  onBudget(listener: (event: BudgetEvent) => void): Disposable;
  close(): Promise<void>;
}

/**
 * With the process's Redis limits (`REDIS_URL`), rate windows and spend budgets live in Redis (hot counters
 * shared by every instance); when Redis is away, rate decisions deny and spend refuses, never counting per
 * process. Without them they live in the store's counters (SQLite: this machine; PostgreSQL: every instance). `log` takes the one line
 * per request (the server's logger, once it exists).
 */
export async function assembleAi(options: {
  ai: AppAiOptions;
  store: Store;
  clock: Clock;
  /** The process's Redis limits (`REDIS_URL`), when set. */
  redis: RedisLimits | undefined;
  /** The gateway's admin check, in front of the routes admin API. */
  guard: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  log: (line: object, message: string) => void;
}): Promise<GatewayAi> {
  const { ai: settings, store, clock, redis } = options;
  const stores = { rateLimitStore: redis?.rateLimitStore, spendStore: redis?.spendStore };
  const budgets = new EventSource<BudgetEvent>();
  const resolver = createRouteResolver({
    onBudget: (event) => budgets.emit(event),
    routes: store.routes,
    counters: store.counters,
    ...stores,
    maxRequestCostUsd: settings.maxRequestCostUsd,
    clock,
  });
  const ai = createAiGateway({
    ...settings,
    store,
    clock,
    ...stores,
    routes: resolver.resolve,
    routeNames: resolver.names,
    logger: { info: (line, message) => options.log(line, message) },
  });
  const aiBudgets = ai.onBudget((event) => budgets.emit(event));
  const admin = (app: FastifyInstance) =>
    routeAdminRoutes(app, {
      routes: store.routes,
      resolver,
      providers: Object.keys(settings.providers),
      guard: options.guard,
    });
  return {
    ai,
    routes: [ai.routes, admin],
    onBudget: budgets.on,
    async close() {
      aiBudgets.dispose();
      await ai.close();
    },
  };
}
