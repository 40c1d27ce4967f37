/**
 * The limit check: rate rules, then spend rules, for one step about to call a provider (DESIGN: "AI
 * gateway"). Both run BEFORE the provider is called, so a refused request costs nothing.
 */
import { BreakwaterError, type Clock } from '../../core/index.js';
import {
  FixedWindow,
  SlidingWindow,
  rateLimitedError,
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitStore,
} from '../../policy/index.js';
import type { CounterStore } from '../../store/index.js';
import { estimateMicroUsd, usdToMicro, type EstimateInput, type PriceTable } from '../pricing.js';
import { scopeKey, type LimitTarget, type RuleScope } from './scope.js';
import { spendWindowStart } from './spend.js';
import { counterSpendStore, type SpendStore } from './spend-store.js';

/** A rate rule: at most `limit` requests per `windowMs` in each counter of its scope. */
export interface RateRule {
  name: string;
  limit: number;
  windowMs: number;
  /** `fixed`: windows aligned to multiples of `windowMs` (2·limit can pass around a boundary); `sliding`: any trailing `windowMs`. */
  technique: 'fixed' | 'sliding';
  scope: RuleScope;
}

/** A spend rule: at most `budgetUsd` per fixed window of `windowMs` in each counter of its scope. */
export interface SpendRule {
  name: string;
  budgetUsd: number;
  windowMs: number;
  scope: RuleScope;
}

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
}

/** One spend reservation held by a grant. */
interface Reservation {
  readonly key: string;
  readonly windowEnd: number;
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
   * Replaces every reservation with the real cost (micro-USD). `undefined` (usage unknown: a stream cut off,
   * a body without usage) settles the whole estimate, which never undercounts. Never rejects: a store failure
   * leaves the reservation counted until its window ends (conservative).
   */
  settle(costMicroUsd: number | undefined): Promise<void>;
}

/** The grant of a request no rule covers: nothing reserved, nothing to settle. */
export const NO_GRANT: LimitGrant = {
  estimateMicroUsd: 0,
  rateHeaders: undefined,
  settle: () => Promise.resolve(),
};

/** The compiled rules over their stores. */
export class AiLimits {
  private readonly rate: { rule: RateRule; algorithm: RateLimitAlgorithm }[];
  private readonly spend: { rule: SpendRule; budgetMicroUsd: number }[];
  private readonly prefix: string;
  private readonly spendStore: SpendStore;

  constructor(private readonly config: AiLimitsConfig) {
    this.prefix = config.keyPrefix ?? 'ai';
    this.spendStore = config.spendStore ?? counterSpendStore(config.counters);
    this.rate = config.rateRules.map((rule) => ({
      rule,
      algorithm:
        rule.technique === 'fixed'
          ? new FixedWindow({ limit: rule.limit, windowMs: rule.windowMs })
          : new SlidingWindow({ limit: rule.limit, windowMs: rule.windowMs }),
    }));
    this.spend = config.spendRules.map((rule) => ({
      rule,
      budgetMicroUsd: usdToMicro(rule.budgetUsd),
    }));
  }

  /** True when no rule is configured (the check is then free). */
  get empty(): boolean {
    return this.rate.length === 0 && this.spend.length === 0;
  }

  /**
   * Checks every rate rule whose scope covers `target` (each allowed one counts the request), then reserves
   * the request's estimated maximum cost under every spend rule that covers it.
   *
   * Spend is reserved atomically per rule, scope value and window (see spend.ts); the grant settles it. A
   * crash between reserve and settle leaves the reservation counted until the window ends (conservative:
   * the budget can be under-used, never overshot).
   *
   * Order and what a refusal leaves: rate rules are checked first (cheap, and a flood is turned away before
   * any budget I/O); a request refused by a spend rule has still counted against the rate rules it passed,
   * like a request the provider refused. A spend refusal releases the reservations already made for it.
   *
   * @param estimate the request's size (see `estimateInput`), or a function giving it: it is then read only
   *   when a spend rule applies.
   * @throws BreakwaterError `rate_limited` (429, `retryAfterMs`, `details { limit, remaining, reset_ms, rule }`);
   *   `spend_limited` (429, `retryAfterMs` to the end of the window, `details { rule }`; no retry hint when the
   *   estimate alone is over the whole budget); `invalid_payload` (400) when a spend rule applies and the model
   *   has no price, or the request has no `max_tokens` and no ceiling is configured. The store's error when
   *   it fails (the spend store's refusal, e.g. `spend_limited` `store_unavailable` from `RedisSpendStore`);
   *   reservations already made for the request are released first.
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

    const matching: { key: string; windowEnd: number; rule: SpendRule; budgetMicroUsd: number }[] = [];
    for (const { rule, budgetMicroUsd } of this.spend) {
      const scope = scopeKey(rule.scope, target);
      if (scope === undefined) continue;
      const start = spendWindowStart(now, rule.windowMs);
      matching.push({
        key: `${this.prefix}:spend:${rule.name}:${scope}:${start}`,
        windowEnd: start + rule.windowMs,
        rule,
        budgetMicroUsd,
      });
    }
    if (matching.length === 0) return { ...NO_GRANT, rateHeaders };

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
    for (const m of matching) {
      let result;
      try {
        result = await this.spendStore.reserve(m.key, estimateMicro, m.budgetMicroUsd, m.windowEnd, now);
      } catch (error) {
        await this.release(held, estimateMicro);
        throw error;
      }
      if (!result.ok) {
        await this.release(held, estimateMicro);
        throw spendRefusal(
          m.rule.name,
          estimateMicro,
          m.budgetMicroUsd,
          result.spentMicroUsd,
          m.windowEnd - now,
        );
      }
      held.push({ key: m.key, windowEnd: m.windowEnd });
    }
    return this.grant(held, estimateMicro, rateHeaders);
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
        await Promise.all(
          held.map((r) =>
            this.spendStore
              .settle(r.key, estimateMicro, cost ?? estimateMicro, r.windowEnd, now)
              .catch(() => undefined),
          ),
        );
      },
    };
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

/** `x-ratelimit-limit`, `-remaining` and `-reset` (whole seconds until the window is clear, rounded up). */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(Math.max(0, decision.remaining)),
    'x-ratelimit-reset': String(Math.ceil(decision.resetMs / 1000)),
  };
}

function rateRefusal(decision: RateLimitDecision, rule: string): BreakwaterError {
  const base = rateLimitedError(decision, rule);
  return BreakwaterError.withoutStack('rate_limited', {
    message: `The rate limit "${rule}" (${decision.limit} requests) was reached; try again in ${Math.ceil(decision.retryAfterMs / 1000)} s.`,
    source: rule,
    retryAfterMs: decision.retryAfterMs,
    details: { ...base.details, rule },
  });
}

/**
 * `Retry-After` of a refusal made only by reservations of requests in flight (ms): what they do not spend is
 * freed as each one ends, usually within seconds, not at the end of the window.
 */
export const IN_FLIGHT_RETRY_AFTER_MS = 1_000;

/**
 * The 429 `spend_limited` for one rule, `details.refusal` saying which of three cases it is (not `reason`,
 * which the OpenAI-shaped answer would show as the error's `code` in place of `spend_limited`):
 * - `over_budget`: the estimate alone is over the whole budget; waiting will not help (permanent, no
 *   Retry-After);
 * - `reserved_in_flight`: the money spent leaves room for the estimate, but requests in flight have reserved
 *   it; Retry-After {@link IN_FLIGHT_RETRY_AFTER_MS}, or the window's end when that comes sooner;
 * - `budget_spent`: what was spent leaves no room; Retry-After is the window's end.
 */
function spendRefusal(
  rule: string,
  estimateMicro: number,
  budgetMicro: number,
  spentMicro: number,
  windowLeftMs: number,
): BreakwaterError {
  const refuse = (refusal: string, message: string, retryAfterMs: number | undefined) =>
    BreakwaterError.withoutStack('spend_limited', {
      message,
      source: rule,
      ...(retryAfterMs === undefined ? { kind: 'permanent' as const } : { retryAfterMs }),
      details: { rule, refusal },
    });
  if (estimateMicro > budgetMicro) {
    return refuse(
      'over_budget',
      `This request's estimated maximum cost is over the whole budget of the spend limit "${rule}"; lower max_tokens (or n).`,
      undefined,
    );
  }
  if (spentMicro + estimateMicro <= budgetMicro) {
    const retryAfterMs = Math.min(IN_FLIGHT_RETRY_AFTER_MS, windowLeftMs);
    return refuse(
      'reserved_in_flight',
      `The spend limit "${rule}" is reserved by requests still in flight (each holds its maximum cost until it ends); try again in ${Math.ceil(retryAfterMs / 1000)} s.`,
      retryAfterMs,
    );
  }
  return refuse(
    'budget_spent',
    `The spend limit "${rule}" for this period has been reached; try again in ${Math.ceil(windowLeftMs / 1000)} s.`,
    windowLeftMs,
  );
}
