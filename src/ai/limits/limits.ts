/**
 * The limit check: rate rules, then spend rules, for one step about to call a provider (docs/ai-gateway.md).
 * The rules. Both run BEFORE the provider is called, so a refused request costs nothing.
 *
 * Spend reservations in flight are capped per caller (`maxReservedShare`, see {@link AiLimitsConfig}): one
 * principal's requests still running may hold at most that share of a shared budget, so a caller that opens
 * requests with a large `max_tokens` (and leaves them hanging) locks only its own share, never the budget
 * other callers need.
 */
import { BreakwaterError, defineOptions, o, type Clock, type Principal } from '../../core/index.js';
import {
  FixedWindow,
  SlidingWindow,
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitStore,
} from '../../policy/index.js';
import type { CounterStore } from '../../store/index.js';
import { isSharedCaller } from '../caller.js';
import { estimateMicroUsd, usdToMicro, type EstimateInput, type PriceTable } from '../pricing.js';
import { crossedThresholds, type BudgetEvent } from './budget-events.js';
import { callerRules } from './caller-rules.js';
import { rateLimitHeaders, rateRefusal, spendRefusal } from './refusals.js';
import { encodeValue, scopeKey, type LimitTarget, type RuleScope } from './scope.js';
import { spendWindowStart } from './spend.js';
import { counterSpendStore, type SpendReservation, type SpendStore } from './spend-store.js';

export { IN_FLIGHT_RETRY_AFTER_MS, rateLimitHeaders } from './refusals.js';

/** A rate rule: at most `limit` requests per `windowMs` in each counter of its scope. */
export interface RateRule {
  name: string;
  limit: number;
  windowMs: number;
  /** `fixed`: windows aligned to multiples of `windowMs` (2·limit can pass around a boundary); `sliding`: any trailing `windowMs`. */
  technique: 'fixed' | 'sliding';
  scope: RuleScope;
}

/**
 * A spend rule: at most `budgetUsd` per `windowMs` in each counter of its scope.
 * - `fixed` (default): windows aligned to multiples of `windowMs`; up to twice the budget can be spent
 *   around a boundary.
 * - `sliding`: no trailing `windowMs` ever holds more than the budget. Each cost is counted in the window it
 *   falls in and in the next one, and a window admits a request only while both of its own counts leave room:
 *   spend frees up between `windowMs` and `2 × windowMs` after it happened (conservative: never above).
 */
export interface SpendRule {
  name: string;
  budgetUsd: number;
  windowMs: number;
  window?: 'fixed' | 'sliding';
  scope: RuleScope;
}

/** Defaults of {@link AiLimitsConfig}. */
export const AI_LIMITS_DEFAULTS = {
  /** A quarter of each shared budget may be held in flight by one principal. */
  maxReservedShare: 0.25,
} as const;

/** What {@link AiLimits} is built from (already validated). */
export interface AiLimitsConfig {
  rateRules: readonly RateRule[];
  spendRules: readonly SpendRule[];
  rateStore: RateLimitStore;
  counters: CounterStore;
  /** Where spend is reserved and settled (default: `counterSpendStore(counters)`). */
  spendStore?: SpendStore;
  prices: PriceTable;
  /** The estimate of a request without `max_tokens`, micro-USD; undefined: such a request is refused under a spend rule. */
  ceilingMicroUsd: number | undefined;
  clock: Clock;
  /** Prefix of every counter key (default `ai`): rules of different owners (routes) do not share counters. */
  keyPrefix?: string;
  /**
   * The share (0 < share <= 1) of each spend rule's budget that one principal's requests in flight may hold
   * in reservations (default {@link AI_LIMITS_DEFAULTS}: 0.25; 1: no cap). Counted per rule, scope value
   * and window in the spend store, so it holds across processes. Not applied to rules scoped
   * `{ by: 'principal' }` (a budget of one caller) nor to callers that stand for everyone (`local`,
   * `anonymous`, no principal): there is no one to share with. A request whose estimate alone is over the
   * share is refused (`over_share`).
   */
  maxReservedShare?: number;
  /**
   * Hears each spend rule counter reaching 80 % or 100 % of its budget in its current window (see
   * {@link BudgetEvent}); callers' own budgets ({@link AiLimits.forCaller}) report here too. Default: none.
   * Called synchronously; one that throws changes nothing.
   */
  onBudget?: (event: BudgetEvent) => void;
}

/** One spend reservation held by a grant: a budget's (settled with the cost) or a caller's share (released). */
interface Reservation {
  readonly key: string;
  readonly windowEnd: number;
  /** A share hold: settled with 0 (only released), whatever the cost. */
  readonly hold: boolean;
  /** The rule's current-window budget counter, whose thresholds are reported (not a share, not the next window). */
  readonly watched?: Watched;
}

/** What a budget event of a watched counter says besides its amounts. */
interface Watched {
  readonly rule: SpendRule;
  readonly scopeKey: string;
  readonly budgetMicro: number;
  readonly windowStart: number;
}

/** One reservation to make, in order. */
interface Wanted extends Reservation {
  /** What it may reach: the rule's budget, or the caller's share of it. */
  readonly budgetMicro: number;
  /** The rule's whole budget. */
  readonly ruleBudgetMicro: number;
  readonly rule: string;
}

/**
 * What passing the check holds: the spend reservations to settle once the cost is known. Settle exactly once
 * (a second call does nothing).
 */
export interface LimitGrant {
  /** The reserved estimate, micro-USD (0 when no spend rule applied). */
  readonly estimateMicroUsd: number;
  /** `x-ratelimit-limit/remaining/reset` of the rate rule with the fewest requests left, if any applied. */
  readonly rateHeaders: Readonly<Record<string, string>> | undefined;
  /**
   * Replaces every reservation with the cost (micro-USD): the real cost, or the step's estimate of what was
   * produced (see execute.ts). `undefined` settles the whole estimate, which never undercounts. Never rejects:
   * a store failure leaves the reservation counted until its window ends (conservative).
   */
  settle(costMicroUsd: number | undefined): Promise<void>;
}

/** The grant of a request no rule covers: nothing reserved, nothing to settle. */
export const NO_GRANT: LimitGrant = {
  estimateMicroUsd: 0,
  rateHeaders: undefined,
  settle: () => Promise.resolve(),
};

/** Longest encoded principal id kept as it is in a share key (the rest of the key has its own bounds). */
const MAX_PLAIN_PRINCIPAL = 64;

/**
 * The config's one declaration: the rules, stores, prices and clock come validated (by `createAiGateway`,
 * `createRouteResolver` or `callerRules`) and pass as they are; the share and the key prefix are checked
 * here and take their defaults.
 */
const parseConfig = defineOptions<AiLimitsConfig>()('AiLimits', {
  rateRules: o.any<readonly RateRule[]>(),
  spendRules: o.any<readonly SpendRule[]>(),
  rateStore: o.any<RateLimitStore>(),
  counters: o.any<CounterStore>(),
  spendStore: o.any<SpendStore | undefined>(),
  prices: o.any<PriceTable>(),
  ceilingMicroUsd: o.any<number | undefined>(),
  clock: o.any<Clock>(),
  keyPrefix: o.string().default('ai'),
  maxReservedShare: o.fraction().default(AI_LIMITS_DEFAULTS.maxReservedShare),
  onBudget: o.any<((event: BudgetEvent) => void) | undefined>(),
});

/** The compiled rules over their stores. */
export class AiLimits {
  private readonly rate: { rule: RateRule; algorithm: RateLimitAlgorithm }[];
  private readonly spend: { rule: SpendRule; budgetMicroUsd: number; shareMicroUsd: number | undefined }[];
  private readonly prefix: string;
  private readonly spendStore: SpendStore;
  /** Each principal's own rules (`Principal.ai`), compiled once per limits object the principal carries. */
  private readonly callers = new WeakMap<object, AiLimits | undefined>();

  /** @throws OptionsError (`RangeError`, `invalid_options`, owner `AiLimits`) for a bad share or key prefix. */
  constructor(private readonly config: AiLimitsConfig) {
    const { keyPrefix, maxReservedShare: share } = parseConfig(config);
    this.prefix = keyPrefix;
    this.spendStore = config.spendStore ?? counterSpendStore(config.counters);
    this.rate = config.rateRules.map((rule) => ({
      rule,
      algorithm:
        rule.technique === 'fixed'
          ? new FixedWindow({ limit: rule.limit, windowMs: rule.windowMs })
          : new SlidingWindow({ limit: rule.limit, windowMs: rule.windowMs }),
    }));
    this.spend = config.spendRules.map((rule) => {
      const budgetMicroUsd = usdToMicro(rule.budgetUsd);
      // A rule of one caller has no one to share with; a share of 1 is no cap.
      const capped = share < 1 && rule.scope.by !== 'principal';
      return { rule, budgetMicroUsd, shareMicroUsd: capped ? Math.floor(budgetMicroUsd * share) : undefined };
    });
  }

  /** True when no rule is configured (the check is then free). */
  get empty(): boolean {
    return this.rate.length === 0 && this.spend.length === 0;
  }

  /**
   * The principal's own rate rules and budgets (`principal.ai`) over this object's stores, prices and clock
   * (scoped `{ by: 'principal' }`, see caller-rules.ts), or undefined when it has none. Compiled once per
   * `principal.ai` object.
   * @throws RangeError when `principal.ai` holds limits out of bounds (the request then fails closed).
   */
  forCaller(principal: Principal | undefined): AiLimits | undefined {
    const ai = principal?.ai;
    if (ai === undefined || (ai.rateRules === undefined && ai.budgets === undefined)) return undefined;
    if (this.callers.has(ai)) return this.callers.get(ai);
    const rules = callerRules(ai);
    const own =
      rules.rateRules.length === 0 && rules.spendRules.length === 0
        ? undefined
        : new AiLimits({ ...this.config, ...rules });
    this.callers.set(ai, own);
    return own;
  }

  /**
   * Checks every rate rule whose scope covers `target` (each allowed one counts the request), then reserves
   * the request's estimated maximum cost under every spend rule that covers it.
   *
   * Spend is reserved atomically per rule, scope value and window (see spend.ts); the grant settles it. A
   * crash between reserve and settle leaves the reservation counted until the window ends (conservative:
   * the budget can be under-used, never overshot). Before a shared budget, the caller's own share of it is
   * reserved the same way (`maxReservedShare`): one more atomic update per rule, released at settlement.
   * A sliding rule's reservation is made in its window and the next (one more update).
   *
   * Order and what a refusal leaves: rate rules are checked first (cheap, and a flood is turned away before
   * any budget I/O); a request refused by a spend rule has still counted against the rate rules it passed,
   * like a request the provider refused. A spend refusal releases the reservations already made for it.
   *
   * @param estimate the request's size (see `estimateInput`), or a function giving it: it is then read only
   *   when a spend rule applies.
   * @throws BreakwaterError `rate_limited` (429, `retryAfterMs`, `details { limit, remaining, reset_ms, rule }`);
   *   `spend_limited` (429, `details { rule, refusal }`, see refusals.ts for `Retry-After`); `invalid_payload`
   *   (400) when a spend rule applies and the model has no price, or the request has no `max_tokens` and no
   *   ceiling is configured. The store's error when it fails (the spend store's refusal, e.g. `spend_limited`
   *   `store_unavailable` from `RedisSpendStore`); reservations already made for the request are released
   *   first.
   */
  async acquire(target: LimitTarget, estimate: EstimateInput | (() => EstimateInput)): Promise<LimitGrant> {
    if (this.empty) return NO_GRANT;
    const now = this.config.clock.now();
    let tightest: RateLimitDecision | undefined;
    for (const { rule, algorithm } of this.rate) {
      const scope = scopeKey(rule.scope, target);
      if (scope === undefined) continue;
      const decision = await this.config.rateStore.consume(
        `${this.prefix}:rate:${rule.name}:${scope}`,
        algorithm,
        1,
        now,
      );
      if (!decision.allowed) throw rateRefusal(decision, rule.name);
      if (tightest === undefined || decision.remaining < tightest.remaining) tightest = decision;
    }
    const rateHeaders = tightest === undefined ? undefined : rateLimitHeaders(tightest);

    const wanted = this.reservations(target, now);
    if (wanted.length === 0) return { ...NO_GRANT, rateHeaders };

    const price = this.config.prices.price(target.provider, target.model);
    if (price === undefined) {
      throw new BreakwaterError('invalid_payload', {
        message: `The model ${target.provider}/${target.model} has no price, and a spend limit applies to it.`,
        details: { reason: 'model_not_priced' },
      });
    }
    const size = typeof estimate === 'function' ? estimate() : estimate;
    const estimateMicro = estimateMicroUsd(size, price, this.config.ceilingMicroUsd);
    if (estimateMicro === undefined) {
      throw new BreakwaterError('invalid_payload', {
        message:
          'A spend limit applies to this request: set max_tokens or max_completion_tokens so its cost can be bounded.',
        details: { reason: 'max_tokens_required', field: 'max_tokens' },
      });
    }

    const held: Reservation[] = [];
    for (const w of wanted) {
      // An estimate over the whole budget is refused as such, not as over the caller's smaller share.
      const overBudget = w.hold && estimateMicro > w.ruleBudgetMicro;
      let result: SpendReservation | undefined;
      try {
        if (!overBudget) {
          result = await this.spendStore.reserve(w.key, estimateMicro, w.budgetMicro, w.windowEnd, now);
        }
      } catch (error) {
        await this.release(held, estimateMicro);
        throw error;
      }
      if (result === undefined || !result.ok) {
        // The refusal `budget_spent` (see refusals.ts): what was spent leaves no room for this request.
        if (
          w.watched !== undefined &&
          result !== undefined &&
          estimateMicro <= w.budgetMicro &&
          result.spentMicroUsd + estimateMicro > w.budgetMicro
        ) {
          this.announce(100, w.watched, result.spentMicroUsd, w.windowEnd);
        }
        await this.release(held, estimateMicro);
        throw spendRefusal({
          rule: w.rule,
          estimateMicro,
          budgetMicro: overBudget ? w.ruleBudgetMicro : w.budgetMicro,
          spentMicro: result?.spentMicroUsd ?? 0,
          windowLeftMs: w.windowEnd - now,
          share: w.hold && !overBudget,
        });
      }
      held.push(w);
    }
    return this.grant(held, estimateMicro, rateHeaders);
  }

  /**
   * The reservations a request of `target` needs, in the order they are made: for each spend rule that covers
   * it, the caller's share (when capped), the window's budget, and for a sliding rule the next window's.
   */
  private reservations(target: LimitTarget, now: number): Wanted[] {
    const wanted: Wanted[] = [];
    const principal = target.principal;
    const capCaller = !isSharedCaller(principal);
    for (const { rule, budgetMicroUsd, shareMicroUsd } of this.spend) {
      const scope = scopeKey(rule.scope, target);
      if (scope === undefined) continue;
      const start = spendWindowStart(now, rule.windowMs);
      const windowEnd = start + rule.windowMs;
      const base = `${this.prefix}:spend:${rule.name}:${scope}`;
      if (shareMicroUsd !== undefined && capCaller) {
        const who = encodeValue(principal!.id, MAX_PLAIN_PRINCIPAL);
        wanted.push({
          key: `${this.prefix}:share:${rule.name}:${scope}:${start}:${who}`,
          windowEnd,
          hold: true,
          budgetMicro: shareMicroUsd,
          ruleBudgetMicro: budgetMicroUsd,
          rule: rule.name,
        });
      }
      const budget = {
        hold: false,
        budgetMicro: budgetMicroUsd,
        ruleBudgetMicro: budgetMicroUsd,
        rule: rule.name,
      };
      const watched = { rule, scopeKey: scope, budgetMicro: budgetMicroUsd, windowStart: start };
      wanted.push({ key: `${base}:${start}`, windowEnd, ...budget, watched });
      if (rule.window === 'sliding') {
        wanted.push({ key: `${base}:${windowEnd}`, windowEnd: windowEnd + rule.windowMs, ...budget });
      }
    }
    return wanted;
  }

  private grant(
    held: Reservation[],
    estimateMicro: number,
    rateHeaders: Record<string, string> | undefined,
  ): LimitGrant {
    let settled = false;
    return {
      estimateMicroUsd: estimateMicro,
      rateHeaders,
      settle: async (cost) => {
        if (settled) return;
        settled = true;
        const now = this.config.clock.now();
        const spent = cost ?? estimateMicro;
        await Promise.all(
          held.map((r) =>
            this.spendStore.settle(r.key, estimateMicro, r.hold ? 0 : spent, r.windowEnd, now).then(
              (state) => {
                if (r.watched === undefined || state === undefined || this.config.onBudget === undefined)
                  return;
                const after = state.spentMicroUsd;
                for (const percent of crossedThresholds(after - spent, after, r.watched.budgetMicro)) {
                  this.announce(percent, r.watched, after, r.windowEnd);
                }
              },
              () => undefined,
            ),
          ),
        );
      },
    };
  }

  private announce(percent: 80 | 100, watched: Watched, spentMicro: number, windowEnd: number): void {
    const listener = this.config.onBudget;
    if (listener === undefined) return;
    try {
      listener({
        percent,
        rule: watched.rule.name,
        owner: this.prefix,
        scope: watched.rule.scope,
        scopeKey: watched.scopeKey,
        spentMicroUsd: spentMicro,
        budgetMicroUsd: watched.budgetMicro,
        windowStart: watched.windowStart,
        windowEnd,
      });
    } catch {
      // A listener's failure must not fail the request whose cost it heard of.
    }
  }

  private async release(held: Reservation[], estimateMicro: number): Promise<void> {
    const now = this.config.clock.now();
    await Promise.all(
      held.map((r) =>
        this.spendStore.settle(r.key, estimateMicro, 0, r.windowEnd, now).catch(() => undefined),
      ),
    );
  }
}
