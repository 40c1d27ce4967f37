/**
 * Limit nodes' rules, layered over the gateway's: a model step inside one or more `limit` nodes acquires
 * each enclosing node's rule (outermost first), then the gateway's own rules, before its provider is called.
 * The step executor sees one `AiLimits` (a {@link LayeredLimits}); a refusal by a node's rule carries
 * `details.route_limit` (the rule's name) so that node can divert to its `else`.
 */
import { BreakwaterError, type Clock, type ErrorCode, type Principal } from '../../core/index.js';
import { MemoryRateLimitStore, type RateLimitStore } from '../../policy/index.js';
import type { CounterStore } from '../../store/index.js';
import type { BudgetEvent } from '../limits/budget-events.js';
import { combineGrants } from '../limits/grants.js';
import { AiLimits, type LimitGrant } from '../limits/limits.js';
import type { SpendStore } from '../limits/spend-store.js';
import { MemoryCounterStore } from '../limits/memory-counters.js';
import type { LimitTarget } from '../limits/scope.js';
import type { EstimateInput, PriceTable } from '../pricing.js';
import type { RouteLimitRule } from './definition.js';

/** Where route rules keep their counters (shared by every version of every route of a resolver). */
export interface RouteLimitStores {
  counters: CounterStore;
  rateStore: RateLimitStore;
  /** Where spend reservations live (default: over `counters`). */
  spendStore?: SpendStore;
  /** The estimate of a request without `max_tokens` under a spend rule, micro-USD (undefined: refused). */
  ceilingMicroUsd: number | undefined;
  /** The share of a node's budget one principal may hold in flight (default: `AiLimits`'s, 0.25). */
  maxReservedShare?: number;
  /** Hears the nodes' budgets reaching 80 % and 100 % (see `AiLimitsConfig.onBudget`). */
  onBudget?: (event: BudgetEvent) => void;
}

/** One limit node's rule over the route's counters. */
export interface LimitLayer {
  readonly rule: string;
  readonly limits: AiLimits;
}

/**
 * The rule of a limit node as an `AiLimits` whose counters are `route:<route>:…`: the same rule name in
 * another version of the route counts in the same counters (a deploy does not reset a budget).
 */
export function limitLayer(
  route: string,
  rule: RouteLimitRule,
  stores: RouteLimitStores,
  prices: PriceTable,
  clock: Clock,
): LimitLayer {
  const { kind, ...plain } = rule;
  return {
    rule: rule.name,
    limits: new AiLimits({
      rateRules: kind === 'rate' ? [plain as Extract<RouteLimitRule, { kind: 'rate' }>] : [],
      spendRules: kind === 'spend' ? [plain as Extract<RouteLimitRule, { kind: 'spend' }>] : [],
      rateStore: stores.rateStore,
      counters: stores.counters,
      spendStore: stores.spendStore,
      prices,
      ceilingMicroUsd: stores.ceilingMicroUsd,
      maxReservedShare: stores.maxReservedShare,
      clock,
      keyPrefix: `route:${route}`,
      onBudget: stores.onBudget,
    }),
  };
}

/**
 * The limit layers of a step followed by the gateway's limits, as one `AiLimits` (a subclass, so the step
 * executor takes it as it is; it has no rules of its own). `acquire` takes every layer's grant in order; a
 * refusal releases what was taken and is rethrown with `details.route_limit` when a layer refused.
 */
export class LayeredLimits extends AiLimits {
  constructor(
    private readonly layers: readonly LimitLayer[],
    private readonly base: AiLimits,
    prices: PriceTable,
    clock: Clock,
  ) {
    super({
      rateRules: [],
      spendRules: [],
      rateStore: new MemoryRateLimitStore(),
      counters: new MemoryCounterStore(clock),
      prices,
      ceilingMicroUsd: undefined,
      clock,
    });
  }

  override get empty(): boolean {
    return false;
  }

  /** The caller's own rules live with the gateway's (the base), whatever route layers enclose the step. */
  override forCaller(principal: Principal | undefined): AiLimits | undefined {
    return this.base.forCaller(principal);
  }

  override async acquire(
    target: LimitTarget,
    estimate: EstimateInput | (() => EstimateInput),
  ): Promise<LimitGrant> {
    const grants: LimitGrant[] = [];
    const release = () => Promise.all(grants.map((g) => g.settle(0)));
    for (const layer of this.layers) {
      try {
        grants.push(await layer.limits.acquire(target, estimate));
      } catch (error) {
        await release();
        throw markRefusal(error, layer.rule);
      }
    }
    try {
      grants.push(await this.base.acquire(target, estimate));
    } catch (error) {
      await release();
      throw error;
    }
    return combineGrants(grants);
  }
}

/** The rule name of a limit node that refused `error`, or undefined (any other failure). */
export function refusingRule(error: unknown): string | undefined {
  if (!(error instanceof BreakwaterError)) return undefined;
  if (error.code !== 'rate_limited' && error.code !== 'spend_limited') return undefined;
  const rule = error.details?.route_limit;
  return typeof rule === 'string' ? rule : undefined;
}

function markRefusal(error: unknown, rule: string): unknown {
  if (!(error instanceof BreakwaterError)) return error;
  if (error.code !== 'rate_limited' && error.code !== 'spend_limited') return error;
  return BreakwaterError.withoutStack(error.code as ErrorCode, {
    message: error.message,
    kind: error.kind,
    status: error.status,
    retryAfterMs: error.retryAfterMs,
    source: error.source,
    details: { ...error.details, route_limit: rule },
  });
}

/** Default stores: this process's memory. */
export function memoryLimitStores(clock: Clock): RouteLimitStores {
  return {
    counters: new MemoryCounterStore(clock),
    rateStore: new MemoryRateLimitStore(),
    ceilingMicroUsd: undefined,
  };
}
