import { describe, expect, it } from 'vitest';
import { FakeClock, type Principal } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { PriceTable } from '../pricing.js';
import { crossedThresholds, type BudgetEvent } from './budget-events.js';
import { AiLimits, type SpendRule } from './limits.js';
import { MemoryCounterStore } from './memory-counters.js';

const HOUR = 3_600_000;
const PRICES = new PriceTable({ 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } });
// 100 output tokens at 1 USD/MTok: an estimate of 100 micro-USD.
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };
const TARGET = { provider: 'p', model: 'm', metadata: {} };
/** A budget of 1 000 micro-USD per hour, per provider. */
const RULE: SpendRule = { name: 'hourly', budgetUsd: 0.001, windowMs: HOUR, scope: { by: 'provider' } };

function limits(rules: SpendRule[] = [RULE]) {
  const clock = new FakeClock();
  const events: BudgetEvent[] = [];
  const l = new AiLimits({
    rateRules: [],
    spendRules: rules,
    rateStore: new MemoryRateLimitStore(),
    counters: new MemoryCounterStore(clock),
    prices: PRICES,
    ceilingMicroUsd: undefined,
    clock,
    onBudget: (event) => events.push(event),
  });
  const spend = async (cost: number) => (await l.acquire(TARGET, ESTIMATE)).settle(cost);
  return { l, clock, events, spend };
}

/** What every event of RULE's first window carries besides `percent` and `spentMicroUsd`. */
const WINDOW = {
  rule: 'hourly',
  owner: 'ai',
  scope: { by: 'provider' },
  scopeKey: 'v:p',
  budgetMicroUsd: 1_000,
  windowStart: Date.UTC(2026, 0, 1),
  windowEnd: Date.UTC(2026, 0, 1) + HOUR,
};

describe('crossedThresholds', () => {
  it('reports each threshold the move from before to after passed, exactly at the boundary', () => {
    expect(crossedThresholds(0, 799, 1_000)).toEqual([]);
    expect(crossedThresholds(700, 800, 1_000)).toEqual([80]);
    expect(crossedThresholds(800, 900, 1_000)).toEqual([]);
    expect(crossedThresholds(900, 1_000, 1_000)).toEqual([100]);
    expect(crossedThresholds(700, 1_200, 1_000)).toEqual([80, 100]);
    expect(crossedThresholds(1_000, 1_100, 1_000)).toEqual([]);
  });
});

describe('AiLimits: budget events', () => {
  it('80 % when a settle reaches it, 100 % when one reaches the budget', async () => {
    const { events, spend } = limits();
    for (let i = 0; i < 7; i++) await spend(100);
    expect(events).toEqual([]);
    await spend(100); // 800 of 1 000
    expect(events).toEqual([{ ...WINDOW, percent: 80, spentMicroUsd: 800 }]);
    await spend(100);
    await spend(100); // 1 000 of 1 000
    expect(events).toEqual([
      { ...WINDOW, percent: 80, spentMicroUsd: 800 },
      { ...WINDOW, percent: 100, spentMicroUsd: 1_000 },
    ]);
  });

  it('100 % when the budget refuses a request for what was spent (budget_spent), on every such refusal', async () => {
    const { l, events, spend } = limits();
    await spend(750);
    await spend(100); // 850: 80 %
    await spend(60); // 910: 910 + 100 > 1 000 refuses the next
    for (let i = 0; i < 2; i++) {
      await expect(l.acquire(TARGET, ESTIMATE)).rejects.toMatchObject({
        details: { refusal: 'budget_spent' },
      });
    }
    expect(events).toEqual([
      { ...WINDOW, percent: 80, spentMicroUsd: 850 },
      { ...WINDOW, percent: 100, spentMicroUsd: 910 },
      { ...WINDOW, percent: 100, spentMicroUsd: 910 },
    ]);
  });

  it('no event for refusals that say nothing of the budget: reserved in flight, an estimate over the whole budget', async () => {
    const { l, events } = limits();
    const held = [];
    for (let i = 0; i < 10; i++) held.push(await l.acquire(TARGET, ESTIMATE));
    await expect(l.acquire(TARGET, ESTIMATE)).rejects.toMatchObject({
      details: { refusal: 'reserved_in_flight' },
    });
    await expect(l.acquire(TARGET, { ...ESTIMATE, maxOutputTokens: 2_000 })).rejects.toMatchObject({
      details: { refusal: 'over_budget' },
    });
    for (const grant of held) await grant.settle(0);
    expect(events).toEqual([]);
  });

  it('a jump past both thresholds reports both; a sliding rule reports its current window only', async () => {
    const { events, spend } = limits([{ ...RULE, window: 'sliding' }]);
    await spend(100);
    await spend(100); // the estimate bounds a settle only by convention: a real cost may pass it
    await spend(900);
    expect(events).toEqual([
      { ...WINDOW, percent: 80, spentMicroUsd: 1_100 },
      { ...WINDOW, percent: 100, spentMicroUsd: 1_100 },
    ]);
  });

  it("a caller's own budget reports through the same listener", async () => {
    const { l, events } = limits([]);
    const principal: Principal = {
      id: 'key:k1',
      kind: 'api_key',
      name: 'k1',
      scopes: new Set(['ai']),
      metadata: {},
      trustedBackend: false,
      ai: { budgets: [{ limitUsd: 0.0001, windowMs: HOUR }] },
    };
    const own = l.forCaller(principal)!;
    await (await own.acquire({ ...TARGET, principal }, ESTIMATE)).settle(100);
    expect(events).toEqual([
      {
        ...WINDOW,
        rule: `key-spend-fixed-${HOUR}`,
        scope: { by: 'principal' },
        scopeKey: 'v:key%3Ak1',
        budgetMicroUsd: 100,
        percent: 80,
        spentMicroUsd: 100,
      },
      {
        ...WINDOW,
        rule: `key-spend-fixed-${HOUR}`,
        scope: { by: 'principal' },
        scopeKey: 'v:key%3Ak1',
        budgetMicroUsd: 100,
        percent: 100,
        spentMicroUsd: 100,
      },
    ]);
  });
});
