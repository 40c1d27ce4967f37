import { describe, expect, it } from 'vitest';
import { FakeClock, type BreakwaterError } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { AiLimits } from '../limits/limits.js';
import { MemoryCounterStore } from '../limits/memory-counters.js';
import { readState, spendWindowStart } from '../limits/spend.js';
import { PriceTable } from '../pricing.js';
import type { RouteLimitRule } from './definition.js';
import { LayeredLimits, limitLayer, refusingRule, type RouteLimitStores } from './route-limits.js';

const HOUR = 3_600_000;
const PRICES = new PriceTable({ 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } });
// 100 output tokens at 1 USD/MTok: an estimate of 100 micro-USD.
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };
const TARGET = { provider: 'p', model: 'm', metadata: {} };
const spend = (name: string, budgetUsd: number): RouteLimitRule => ({
  kind: 'spend',
  name,
  budgetUsd,
  windowMs: HOUR,
  scope: { by: 'provider' },
});

function setup(gatewayBudgetUsd?: number) {
  const clock = new FakeClock();
  const counters = new MemoryCounterStore(clock);
  const stores: RouteLimitStores = {
    counters,
    rateStore: new MemoryRateLimitStore(),
    ceilingMicroUsd: undefined,
  };
  const gateway = new AiLimits({
    rateRules: [],
    spendRules:
      gatewayBudgetUsd === undefined
        ? []
        : [{ name: 'g', budgetUsd: gatewayBudgetUsd, windowMs: HOUR, scope: { by: 'provider' } }],
    rateStore: new MemoryRateLimitStore(),
    counters,
    prices: PRICES,
    ceilingMicroUsd: undefined,
    clock,
  });
  const state = (key: string) =>
    counters.get(`${key}:v:p:${spendWindowStart(clock.now(), HOUR)}`).then(readState);
  return { clock, stores, gateway, state };
}

async function refusal(p: Promise<unknown>): Promise<BreakwaterError> {
  try {
    await p;
  } catch (error) {
    return error as BreakwaterError;
  }
  throw new Error('did not refuse');
}

describe('limit layers', () => {
  it('acquires every layer then the gateway; settles all with the real cost; counters per route and rule', async () => {
    const { clock, stores, gateway, state } = setup(1);
    const outer = limitLayer('gifts', spend('outer', 1), stores, PRICES, clock);
    const inner = limitLayer('gifts', spend('inner', 1), stores, PRICES, clock);
    const limits = new LayeredLimits([outer, inner], gateway, PRICES, clock);
    const grant = await limits.acquire(TARGET, ESTIMATE);
    expect(grant.estimateMicroUsd).toBe(100);
    expect(await state('route:gifts:spend:outer')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 100 });
    expect(await state('route:gifts:spend:inner')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 100 });
    expect(await state('ai:spend:g')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 100 });
    await grant.settle(30);
    for (const key of ['route:gifts:spend:outer', 'route:gifts:spend:inner', 'ai:spend:g']) {
      expect(await state(key)).toEqual({ spentMicroUsd: 30, reservedMicroUsd: 0 });
    }
  });

  it("a layer's refusal names its rule and releases the layers before it", async () => {
    const { clock, stores, gateway, state } = setup();
    const outer = limitLayer('gifts', spend('outer', 1), stores, PRICES, clock);
    const inner = limitLayer('gifts', spend('inner', 0.00005), stores, PRICES, clock); // 50 µUSD < 100
    const e = await refusal(
      new LayeredLimits([outer, inner], gateway, PRICES, clock).acquire(TARGET, ESTIMATE),
    );
    expect(e.code).toBe('spend_limited');
    expect(refusingRule(e)).toBe('inner');
    expect(await state('route:gifts:spend:outer')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it("the gateway's refusal is not a layer's (no divert), and releases every layer", async () => {
    const { clock, stores, gateway, state } = setup(0.00005);
    const layer = limitLayer('gifts', spend('route', 1), stores, PRICES, clock);
    const e = await refusal(new LayeredLimits([layer], gateway, PRICES, clock).acquire(TARGET, ESTIMATE));
    expect(e.code).toBe('spend_limited');
    expect(refusingRule(e)).toBeUndefined();
    expect(await state('route:gifts:spend:route')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it('the same rule name in another version of the route shares the budget', async () => {
    const { clock, stores, gateway } = setup();
    const v1 = new LayeredLimits(
      [limitLayer('gifts', spend('daily', 0.00015), stores, PRICES, clock)],
      gateway,
      PRICES,
      clock,
    );
    const v2 = new LayeredLimits(
      [limitLayer('gifts', spend('daily', 0.00015), stores, PRICES, clock)],
      gateway,
      PRICES,
      clock,
    );
    await (await v1.acquire(TARGET, ESTIMATE)).settle(100);
    expect(refusingRule(await refusal(v2.acquire(TARGET, ESTIMATE)))).toBe('daily');
    const other = limitLayer('other-route', spend('daily', 0.00015), stores, PRICES, clock);
    await expect(
      new LayeredLimits([other], gateway, PRICES, clock).acquire(TARGET, ESTIMATE),
    ).resolves.toBeDefined();
  });
});
