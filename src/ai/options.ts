/**
 * The gateway's options, their defaults and their validation (zod 4 for the data; the options model's
 * schemas for the objects: clock, stores, logger). Bad options fail at startup, all at once, in one
 * `OptionsError` naming each: `createAiGateway: spendRules.2.budgetUsd must be a number > 0, got 0; …`.
 */
import { z } from 'zod';
import { o, OptionsError, type Clock, type OptionProblem } from '../core/index.js';
import type { RateLimitStore } from '../policy/index.js';
import type { CounterStore } from '../store/index.js';
import type { RateRule, SpendRule } from './limits/limits.js';
import type { SpendStore } from './limits/spend-store.js';
import { AI_ENDPOINT_NAMES } from './endpoints/endpoint.js';
import type { ModelsInput } from './endpoints/catalog.js';
import type { PriceTableInput } from './pricing.js';
import { zodProblems } from './option-problems.js';
import { providerProblems, type ProviderConfig } from './providers.js';
import {
  nameSchema,
  rateRuleFields,
  scopeSchema,
  stepSettingsFields,
  windowMsSchema,
} from './schema-parts.js';
import type { AiLogger, AiRouteResolver, StepSettings } from './types.js';

/** Options of `createAiGateway`. */
export interface AiGatewayOptions {
  /** Providers by name (`[A-Za-z0-9._-]`, 1..64): what comes before the `/` of a request's `model`. */
  providers: Readonly<Record<string, ProviderConfig>>;
  /** Prices by `<provider>/<model>`, USD per million tokens (default none: costs unknown). */
  prices?: PriceTableInput;
  /**
   * Models by `<provider>/<model>` of a configured provider, at most 10 000: the endpoints each serves
   * (`chat`, `embeddings`; default `['chat']`, as for every model not named here) and how `GET /v1/models`
   * shows it. `GET /v1/models` lists these, then the priced models, then the deployed routes.
   */
  models?: ModelsInput;
  /**
   * The names of the deployed routes, for `GET /v1/models` (`createRouteResolver(...).names`; default none:
   * routes are not listed, though they are served).
   */
  routeNames?: () => Promise<readonly string[]>;
  /** Rate rules, checked before the provider is called (default none). Names unique. */
  rateRules?: readonly RateRule[];
  /** Spend rules, at most 20 (default none). Names unique. */
  spendRules?: readonly SpendRule[];
  /**
   * The share of each spend rule's budget one principal's requests in flight may hold in reservations,
   * 0 < share <= 1 (default 0.25; 1: no cap). See `AiLimitsConfig.maxReservedShare`.
   */
  maxReservedShare?: number;
  /** Gateway-wide step settings; request headers override them within bounds (defaults: {@link AI_GATEWAY_DEFAULTS}). */
  defaults?: StepSettings;
  /** Most ms waited between attempts, a provider's `Retry-After` included (default 5 000, at most 60 000). */
  maxRetryDelayMs?: number;
  /**
   * The estimated cost of a request without `max_tokens` / `max_completion_tokens`, USD, for spend
   * reservations. Without it such a request is refused (400) when a spend rule applies to it.
   */
  maxRequestCostUsd?: number;
  /** The store whose `counters` hold rate windows and spend budgets (default: memory, this process only). */
  store?: { readonly counters: CounterStore };
  /** Where rate windows live (default: `counterRateLimitStore(store.counters)`, or memory without a store). */
  rateLimitStore?: RateLimitStore;
  /**
   * Where spend rules reserve and settle (default: `counterSpendStore(store.counters)`, or memory without a
   * store); `createRedisLimits(...).spendStore` to keep budgets in Redis.
   */
  spendStore?: SpendStore;
  /** Resolves `dynamic/<name>` to a route flow (default none: `dynamic/…` is 404 `not_found`). */
  routes?: AiRouteResolver;
  /** One line per request (default none). */
  logger?: AiLogger;
  /** Where API keys are read, once, at startup (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Largest request body, bytes (default 4 MiB). */
  bodyLimitBytes?: number;
  /**
   * How long the route may take to answer in all (every attempt, wait and fallback; a stream counts until its
   * first byte), ms, before the host server answers 504 `timeout` for it and the provider call is stopped
   * (default 600 000: the `openai` client's own timeout). It replaces the server's `requestTimeoutMs`
   * (35 s, sized for tool calls) on this route through its `config.requestTimeoutMs`.
   */
  answerTimeoutMs?: number;
  /** Largest non-streamed provider answer read, bytes (default 16 MiB). */
  maxResponseBytes?: number;
  clock?: Clock;
  /** Uniform numbers in [0, 1) for retry jitter (default `Math.random`). */
  random?: () => number;
}

/** Defaults of {@link AiGatewayOptions}. */
export const AI_GATEWAY_DEFAULTS = {
  defaults: { timeoutMs: 60_000, maxAttempts: 3, retryDelayMs: 500, backoff: 'exponential' },
  maxRetryDelayMs: 5_000,
  bodyLimitBytes: 4 * 1024 * 1024,
  answerTimeoutMs: 600_000,
  maxResponseBytes: 16 * 1024 * 1024,
  maxSpendRules: 20,
} as const;

const name = nameSchema;
const usd = z.number().finite().nonnegative();

const schema = z.strictObject({
  providers: z
    .record(
      name,
      z.strictObject({
        baseUrl: z.string().min(1),
        apiKeyEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
          .optional(),
        headers: z
          .record(
            z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name'),
            z.string(),
          )
          .optional(),
        maxConnections: z.number().int().min(1).max(10_000).optional(),
      }),
    )
    .refine((p) => Object.keys(p).length > 0, { message: 'must be an object naming at least one provider' }),
  prices: z
    .record(
      z.string().regex(/^[^/]+\/.+$/, 'must be a "<provider>/<model>" key'),
      z.strictObject({ inputPerMTok: usd, outputPerMTok: usd, cachedInputPerMTok: usd.optional() }),
    )
    .optional(),
  models: z
    .record(
      z.string().regex(/^[^/]+\/.+$/, 'must be a "<provider>/<model>" key'),
      z.strictObject({
        endpoints: z
          .array(z.enum(AI_ENDPOINT_NAMES))
          .min(1)
          .refine((e) => new Set(e).size === e.length, { message: 'must name each endpoint once' })
          .optional(),
        created: z.number().int().min(0).optional(),
        ownedBy: z.string().min(1).max(256).optional(),
      }),
    )
    .refine((m) => Object.keys(m).length <= 10_000, { message: 'must name at most 10000 models' })
    .optional(),
  rateRules: z.array(z.strictObject(rateRuleFields)).optional(),
  spendRules: z
    .array(
      z.strictObject({
        name,
        budgetUsd: usd.positive(),
        windowMs: windowMsSchema,
        window: z.enum(['fixed', 'sliding']).optional(),
        scope: scopeSchema,
      }),
    )
    .max(AI_GATEWAY_DEFAULTS.maxSpendRules)
    .optional(),
  defaults: z.strictObject(stepSettingsFields).optional(),
  maxRetryDelayMs: z.number().int().min(0).max(60_000).optional(),
  maxRequestCostUsd: usd.positive().optional(),
  maxReservedShare: z.number().gt(0).max(1).optional(),
  bodyLimitBytes: z.number().int().min(1).optional(),
  answerTimeoutMs: z.number().int().min(1).max(2_147_483_647).optional(),
  maxResponseBytes: z.number().int().min(1).optional(),
});

/** The object options, checked with the options model's schemas rather than zod. */
const objectSchemas = {
  store: o
    .custom<{ readonly counters: CounterStore }>(
      (v) => typeof (v as { counters?: { update?: unknown } })?.counters?.update === 'function',
      'an object with counters (a CounterStore)',
    )
    .optional(),
  rateLimitStore: o.methods<RateLimitStore>('a RateLimitStore', 'consume').optional(),
  spendStore: o.methods<SpendStore>('a SpendStore', 'reserve', 'settle').optional(),
  routes: o.fn<AiRouteResolver>().optional(),
  routeNames: o.fn<() => Promise<readonly string[]>>().optional(),
  logger: o.methods<AiLogger>('an object with an info(line, message) method', 'info').optional(),
  env: o.record<Readonly<Record<string, string | undefined>>>().optional(),
  clock: o.clock(),
  random: o.fn<() => number>().optional(),
};
const OBJECT_OPTIONS = Object.keys(objectSchemas);

/** The options with defaults applied. */
export interface ResolvedAiOptions {
  data: z.infer<typeof schema>;
  defaults: Required<StepSettings>;
  maxRetryDelayMs: number;
  bodyLimitBytes: number;
  answerTimeoutMs: number;
  maxResponseBytes: number;
  clock: Clock;
  random: () => number;
  routeNames: (() => Promise<readonly string[]>) | undefined;
}

/**
 * Validates `options` and fills in defaults.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createAiGateway`) listing every bad option:
 *   zod's issues (path joined with `.`), two rules of one kind with the same name (`rateRules.1.name`), a
 *   bad object option, a provider's `baseUrl` or unset `apiKeyEnv` (see `providerProblems`), a price of no
 *   configured provider (`prices.<key>`), a model of no configured provider (`models.<key>`).
 */
export function resolveAiOptions(options: AiGatewayOptions): ResolvedAiOptions {
  const owner = 'createAiGateway';
  if (typeof options !== 'object' || options === null)
    throw new OptionsError(owner, [{ option: 'options', rule: 'an object', value: options }]);
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (!OBJECT_OPTIONS.includes(key) && value !== undefined) data[key] = value;
  }
  const parsed = schema.safeParse(data);
  const problems: OptionProblem[] = parsed.success ? [] : zodProblems(parsed.error.issues, data);
  for (const kind of ['rateRules', 'spendRules'] as const) {
    const rules: unknown = options[kind];
    if (!Array.isArray(rules)) continue;
    const seen = new Set<unknown>();
    rules.forEach((rule: unknown, i) => {
      const name = (rule as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') return;
      if (seen.has(name))
        problems.push({ option: `${kind}.${i}.name`, rule: 'a name no other rule has', value: name });
      seen.add(name);
    });
  }
  const objects = {} as { [K in keyof typeof objectSchemas]: unknown };
  for (const key of Object.keys(objectSchemas) as (keyof typeof objectSchemas)[]) {
    objects[key] = objectSchemas[key].check(options[key], key, problems);
  }
  if (parsed.success) {
    // A bad `env` is reported above; the variables are then not looked up.
    const env = options.env === undefined ? process.env : isRecord(options.env) ? options.env : undefined;
    problems.push(...providerProblems(parsed.data.providers, env));
    for (const key of Object.keys(parsed.data.prices ?? {})) {
      if (!Object.hasOwn(parsed.data.providers, key.slice(0, key.indexOf('/'))))
        problems.push({ option: `prices.${key}`, rule: 'the price of a configured provider', value: key });
    }
    for (const key of Object.keys(parsed.data.models ?? {})) {
      if (!Object.hasOwn(parsed.data.providers, key.slice(0, key.indexOf('/'))))
        problems.push({ option: `models.${key}`, rule: 'a model of a configured provider', value: key });
    }
  }
  if (problems.length > 0 || !parsed.success) throw new OptionsError(owner, problems);
  const d = AI_GATEWAY_DEFAULTS;
  return {
    data: parsed.data,
    defaults: { ...d.defaults, ...stripUndefined(parsed.data.defaults ?? {}) },
    maxRetryDelayMs: parsed.data.maxRetryDelayMs ?? d.maxRetryDelayMs,
    bodyLimitBytes: parsed.data.bodyLimitBytes ?? d.bodyLimitBytes,
    answerTimeoutMs: parsed.data.answerTimeoutMs ?? d.answerTimeoutMs,
    maxResponseBytes: parsed.data.maxResponseBytes ?? d.maxResponseBytes,
    clock: objects.clock as Clock,
    random: (objects.random as (() => number) | undefined) ?? Math.random,
    routeNames: objects.routeNames as (() => Promise<readonly string[]>) | undefined,
  };
}

const isRecord = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
