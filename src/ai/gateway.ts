/**
 * The AI gateway (docs/ai-gateway.md): OpenAI-compatible `POST /v1/chat/completions`, `POST /v1/embeddings`
 * and `GET /v1/models` in front of OpenAI-compatible providers, with rate and spend rules, retries, first-byte timeouts, fallbacks (through
 * route flows) and one log line per request.
 */
import type { FastifyInstance } from 'fastify';
import { BreakwaterError, EventSource, type Disposable, type Principal } from '../core/index.js';
import { MemoryRateLimitStore } from '../policy/index.js';
import { splitModel } from './body.js';
import { checkModelAllowed } from './caller.js';
import { AI_ENDPOINTS, ModelCatalog, visibleModels, type OpenAiModel } from './endpoints/index.js';
import { DYNAMIC_PREFIX } from './endpoints/prefix.js';
import { aiGatewayRoutes } from './http/routes.js';
import { counterRateLimitStore } from './limits/counter-rate-limit-store.js';
import type { BudgetEvent } from './limits/budget-events.js';
import { AiLimits } from './limits/limits.js';
import { MemoryCounterStore } from './limits/memory-counters.js';
import { aiMetricLabels, type AiLabelConfig, type AiMetricLabels } from './metric-labels.js';
import { resolveAiOptions, type AiGatewayOptions } from './options.js';
import { PriceTable, usdToMicro } from './pricing.js';
import { ProviderRegistry } from './providers.js';
import { executeStep } from './step/execute.js';
import type { AiRequest, AiRequestLog, AiStep, Metadata, StepAnswer, StepContext } from './types.js';

export { DYNAMIC_PREFIX };

/** Direct `<provider>/<model>` steps kept for reuse (see `directStep`). */
const DIRECT_STEPS = 1_024;

/** The name of the step of a direct `<provider>/<model>` request (what `x-breakwater-step` shows). */
export const DIRECT_STEP = 'direct';

/** A running gateway. */
export interface AiGateway {
  /**
   * Mounts `POST /v1/chat/completions`, `POST /v1/embeddings`, `GET /v1/models[/{model}]` and the problem of
   * any other path under `/v1`; pass it to `createServer({ routes })` or call it on a Fastify app.
   */
  readonly routes: (app: FastifyInstance) => Promise<void>;
  /** What steps run with (providers, prices, limits, defaults, clock): for route flows and tests. */
  readonly context: StepContext;
  /**
   * Finds the answer to a request as the route does: `dynamic/<name>` through the `routes` resolver (which
   * sets `request.route` to `<name>@<version>` once found), `<provider>/<model>` as one step named `direct`.
   * A `request.principal` whose `ai.allowedModels` does not list `model` is refused first.
   * @throws BreakwaterError as the client would get it (`details.route` set for a flow; `unauthorized` 403
   *   `model_not_allowed`).
   */
  answer(request: AiRequest, model: string): Promise<StepAnswer>;
  /**
   * The models `principal` may use, as `GET /v1/models` lists them: every configured model (`models`, then
   * `prices`) and deployed route (`routeNames`), or for a key with `ai.allowedModels` those of them the
   * gateway can serve, in the key's order.
   * @throws what `routeNames` or the route resolver throw.
   */
  listModels(principal: Principal | undefined, metadata?: Metadata): Promise<OpenAiModel[]>;
  /** Hears the log line of every request (for metrics per step). A listener that throws breaks nothing. */
  onRequest(listener: (line: AiRequestLog) => void): Disposable;
  /**
   * Hears each spend rule counter of the gateway's rules (and of callers' own budgets) reaching 80 % or
   * 100 % of its budget in its window, in this process (see {@link BudgetEvent}; a route's limit nodes
   * report through the route resolver's `onBudget`). A listener that throws breaks nothing.
   */
  onBudget(listener: (event: BudgetEvent) => void): Disposable;
  /**
   * The metric labels of a request's line, bounded by this gateway's configuration: a provider, model or route
   * the configuration does not name is `_unknown` (see `aiMetricLabels`), so no client adds series.
   */
  metricLabels(line: AiRequestLog): AiMetricLabels;
  /** Closes the providers' connection pools (in-flight calls finish first). */
  close(): Promise<void>;
}

/**
 * Creates the gateway. API keys are read from the environment now, once; they are sent only to their
 * provider, never logged, never in an error.
 *
 * Limits live in `store.counters` when a store is given (rate windows through `counterRateLimitStore`, spend
 * budgets as reservations, see limits/spend.ts), so they hold across every process sharing the store;
 * without one, in this process's memory. `rateLimitStore` and `spendStore` override either (Redis:
 * `createRedisLimits`).
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createAiGateway`) listing every bad option:
 *   an invalid value, a price of an unknown provider, an `apiKeyEnv` variable that is not set.
 */
export function createAiGateway(options: AiGatewayOptions): AiGateway {
  const o = resolveAiOptions(options);
  const providers = new ProviderRegistry(o.data.providers, options.env ?? process.env);
  const prices = new PriceTable(o.data.prices);
  const models = new ModelCatalog(o.data.models, Object.keys(o.data.prices ?? {}));
  const counters = options.store?.counters ?? new MemoryCounterStore(o.clock);
  const rateStore =
    options.rateLimitStore ??
    (options.store === undefined
      ? new MemoryRateLimitStore()
      : counterRateLimitStore(options.store.counters));
  const budgets = new EventSource<BudgetEvent>();
  const limits = new AiLimits({
    rateRules: o.data.rateRules ?? [],
    spendRules: o.data.spendRules ?? [],
    rateStore,
    counters,
    spendStore: options.spendStore,
    prices,
    ceilingMicroUsd:
      o.data.maxRequestCostUsd === undefined ? undefined : usdToMicro(o.data.maxRequestCostUsd),
    maxReservedShare: o.data.maxReservedShare,
    clock: o.clock,
    onBudget: (event) => budgets.emit(event),
  });
  const context: StepContext = {
    providers,
    prices,
    models,
    limits,
    defaults: o.defaults,
    maxRetryDelayMs: o.maxRetryDelayMs,
    maxResponseBytes: o.maxResponseBytes,
    clock: o.clock,
    random: o.random,
  };
  const lines = new EventSource<AiRequestLog>();
  const labelConfig: AiLabelConfig = {
    providers: new Set(providers.names()),
    models: new Set([...Object.keys(o.data.prices ?? {}), ...Object.keys(o.data.models ?? {})]),
  };
  const resolver = options.routes;
  const logger = options.logger;

  // A direct request returns its step's promise as it is: no async frame of its own stays suspended for the
  // provider's whole answer (what a request in flight keeps alive is what the young generation copies).
  const answer = (request: AiRequest, model: string): Promise<StepAnswer> => {
    try {
      checkModelAllowed(request.principal, model);
    } catch (error) {
      return Promise.reject(error);
    }
    if (model.startsWith(DYNAMIC_PREFIX)) return answerFlow(request, model.slice(DYNAMIC_PREFIX.length));
    const target = splitModel(model);
    if (target === undefined) {
      return Promise.reject(
        new BreakwaterError('invalid_payload', {
          message: 'model must be "<provider>/<model>" or "dynamic/<route>".',
          details: { reason: 'invalid_body', field: 'model' },
        }),
      );
    }
    return executeStep(directStep(model, target), request, context);
  };

  const answerFlow = async (request: AiRequest, name: string): Promise<StepAnswer> => {
    const flow = resolver === undefined ? undefined : await resolver(name, request.metadata);
    if (flow === undefined) {
      throw new BreakwaterError('not_found', {
        message: `There is no deployed route named ${JSON.stringify(name)}.`,
        details: { reason: 'unknown_route' },
      });
    }
    const route = flow.version === undefined ? flow.name : `${flow.name}@${flow.version}`;
    request.route = route;
    try {
      return await flow.run(request, context);
    } catch (error) {
      throw withRoute(error, route);
    }
  };

  // The step of a direct `<provider>/<model>` request, one object per model string: the retry policy of a
  // step is cached by the step object (step/settings.ts), so a fresh object per request made a new policy,
  // backoff and option checks every time. Only for configured providers and up to DIRECT_STEPS models (the
  // model part is the client's: a cache it could fill without bound is not one).
  const directSteps = new Map<string, AiStep>();
  const directStep = (model: string, target: { provider: string; model: string }): AiStep => {
    let step = directSteps.get(model);
    if (step !== undefined) return step;
    step = { name: DIRECT_STEP, provider: target.provider, model: target.model };
    if (providers.get(target.provider) !== undefined && directSteps.size < DIRECT_STEPS) {
      directSteps.set(model, step);
    }
    return step;
  };

  const listModels = (principal: Principal | undefined, metadata: Metadata = {}) =>
    visibleModels(
      {
        catalog: models,
        hasProvider: (name) => providers.get(name) !== undefined,
        routeNames: o.routeNames,
        hasRoute: async (name, meta) => resolver !== undefined && (await resolver(name, meta)) !== undefined,
      },
      principal,
      metadata,
    );

  return {
    context,
    answer,
    listModels,
    routes: (app) =>
      aiGatewayRoutes(app, {
        endpoints: AI_ENDPOINTS,
        listModels,
        clock: o.clock,
        bodyLimitBytes: o.bodyLimitBytes,
        answerTimeoutMs: o.answerTimeoutMs,
        answer,
        log(line) {
          try {
            logger?.info(line, 'ai request');
          } catch {
            // a failing logger must not fail the request
          }
          lines.emit(line);
        },
      }),
    onRequest: lines.on,
    onBudget: budgets.on,
    metricLabels: (line) => aiMetricLabels(line, labelConfig),
    close: () => providers.close(),
  };
}

/** `error` as a BreakwaterError with `details.route`. */
function withRoute(error: unknown, route: string): BreakwaterError {
  const e =
    error instanceof BreakwaterError ? error : new BreakwaterError('internal_error', { cause: error });
  return e.withDetails({ route });
}
