/**
 * Budget notices from real spend limits (`AiLimits` reserving and settling in a counter store) on a fake
 * clock: 80 % and used up once per counter and window, labels per scope and owner, and pacing per rule.
 */
import { describe, expect, it } from 'vitest';
import {
  AiLimits,
  MemoryCounterStore,
  PriceTable,
  type BudgetEvent,
  type LimitTarget,
  type SpendRule,
} from '../../ai/index.js';
import { EventSource, FakeClock } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { textNotices, watchOperatorEvents } from './index.js';

const HOUR = 3_600_000;
// 100 output tokens at 1 USD per million: every request reserves 100 micro-USD.
const PRICES = new PriceTable({ 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } });
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };

function setup(rules: SpendRule[], keyPrefix?: string) {
  const clock = new FakeClock();
  const budgets = new EventSource<BudgetEvent>();
  const limits = new AiLimits({
    rateRules: [],
    spendRules: rules,
    rateStore: new MemoryRateLimitStore(),
    counters: new MemoryCounterStore(clock),
    prices: PRICES,
    ceilingMicroUsd: undefined,
    clock,
    keyPrefix,
    onBudget: (event) => budgets.emit(event),
  });
  const lines: string[] = [];
  watchOperatorEvents({ sink: textNotices((line) => lines.push(line), clock), clock, budgets: budgets.on });
  const target = (user?: string): LimitTarget => ({
    provider: 'p',
    model: 'm',
    metadata: user === undefined ? {} : { user },
  });
  const spend = async (cost: number, user?: string) =>
    (await limits.acquire(target(user), ESTIMATE)).settle(cost);
  const refused = (user?: string) =>
    limits.acquire(target(user), ESTIMATE).then(
      () => 'granted',
      (e: Error & { details?: { refusal?: string } }) => e.details?.refusal,
    );
  return { clock, lines, spend, refused };
}

/** 1 000 micro-USD (0.001 USD) per hour, per provider. */
const HOURLY: SpendRule = { name: 'hourly', budgetUsd: 0.001, windowMs: HOUR, scope: { by: 'provider' } };

describe('operator notices: AI budgets', () => {
  it('80 % and used up, once per counter and window, whatever the refusals that follow', async () => {
    const { clock, lines, spend, refused } = setup([HOURLY]);
    await spend(700);
    await spend(100); // 800 of 1 000
    await clock.tickAsync(60_000);
    await spend(110); // 910: the next request's 100 no longer fits
    expect([await refused(), await refused()]).toEqual(['budget_spent', 'budget_spent']);
    expect(lines).toEqual([
      '2026-01-01T00:00:00Z AI budget hourly (provider p) at 80 %: 0.0008 of 0.001 USD spent in the window ending 2026-01-01T01:00:00Z; requests go on until it is used up',
      '2026-01-01T00:01:00Z AI budget hourly (provider p) used up: 0.00091 of 0.001 USD spent; requests it covers get 429 spend_limited until 2026-01-01T01:00:00Z',
    ]);

    // The next window starts empty, and reports again.
    await clock.tickAsync(HOUR);
    await spend(1_000);
    expect(lines.slice(2)).toEqual([
      '2026-01-01T01:01:00Z AI budget hourly (provider p) at 80 %: 0.001 of 0.001 USD spent in the window ending 2026-01-01T02:00:00Z; requests go on until it is used up',
      '2026-01-01T01:01:00Z AI budget hourly (provider p) used up: 0.001 of 0.001 USD spent; requests it covers get 429 spend_limited until 2026-01-01T02:00:00Z',
    ]);
  });

  it('a rule with a counter per user: four lines a minute, the rest counted at its end', async () => {
    const { clock, lines, spend, refused } = setup([
      { name: 'per-user', budgetUsd: 0.0001, windowMs: HOUR, scope: { by: 'metadata', key: 'user' } },
    ]);
    for (const user of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6']) await spend(80, user); // each at 80 %
    await spend(80); // no user: the counter of requests without the key
    expect(lines).toEqual(
      ['u1', 'u2', 'u3', 'u4'].map(
        (user) =>
          `2026-01-01T00:00:00Z AI budget per-user (user=${user}) at 80 %: 0.00008 of 0.0001 USD spent in the window ending 2026-01-01T01:00:00Z; requests go on until it is used up`,
      ),
    );
    await clock.tickAsync(60_000);
    expect(lines.slice(4)).toEqual([
      '2026-01-01T00:01:00Z AI budget per-user: 3 more budget lines within 1 min not shown',
    ]);
    // The keyless counter refuses the next request (80 + 100 > 100): used up; a new minute, a line again.
    expect(await refused()).toBe('budget_spent');
    expect(lines.slice(5)).toEqual([
      '2026-01-01T00:01:00Z AI budget per-user (user absent) used up: 0.00008 of 0.0001 USD spent; requests it covers get 429 spend_limited until 2026-01-01T01:00:00Z',
    ]);
  });

  it("a route's limit node names its route", async () => {
    const { lines, spend } = setup([{ ...HOURLY, scope: { by: 'model' } }], 'route:support');
    await spend(800);
    expect(lines).toEqual([
      '2026-01-01T00:00:00Z AI budget hourly of route support (model p/m) at 80 %: 0.0008 of 0.001 USD spent in the window ending 2026-01-01T01:00:00Z; requests go on until it is used up',
    ]);
  });
});
