import { describe, expect, it } from 'vitest';
import { FakeClock, PRINCIPALS, type BreakwaterError, type Principal } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { PriceTable } from '../pricing.js';
import { AiLimits, type SpendRule } from './limits.js';
import { MemoryCounterStore } from './memory-counters.js';
import { readState, spendWindowStart } from './spend.js';

const HOUR = 3_600_000;
const PRICES = new PriceTable({ 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } });
// 100 output tokens at 1 USD/MTok: an estimate of 100 micro-USD.
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };
// 1000 micro-USD an hour; a quarter of it (250) per caller in flight: two estimates of 100, not three.
const BUDGET: SpendRule = { name: 'b', budgetUsd: 0.001, windowMs: HOUR, scope: { by: 'provider' } };

function key(name: string, kind: Principal['kind'] = 'api_key'): Principal {
  return { id: `key:${name}`, kind, name, scopes: new Set(['ai']), metadata: {}, trustedBackend: false };
}

function limits(spendRules: SpendRule[], maxReservedShare?: number) {
  const clock = new FakeClock();
  const counters = new MemoryCounterStore(clock);
  const l = new AiLimits({
    rateRules: [],
    spendRules,
    rateStore: new MemoryRateLimitStore(),
    counters,
    prices: PRICES,
    ceilingMicroUsd: undefined,
    clock,
    ...(maxReservedShare === undefined ? {} : { maxReservedShare }),
  });
  const start = () => spendWindowStart(clock.now(), HOUR);
  const budget = async (at = start()) => readState(await counters.get(`ai:spend:b:v:p:${at}`));
  const share = async (who: string) =>
    readState(await counters.get(`ai:share:b:v:p:${start()}:v:${encodeURIComponent(who)}`));
  const acquire = (principal: Principal | undefined, estimate = ESTIMATE) =>
    l.acquire({ provider: 'p', model: 'm', metadata: {}, principal }, estimate);
  return { l, clock, counters, budget, share, acquire };
}

async function refusal(p: Promise<unknown>): Promise<BreakwaterError> {
  try {
    await p;
  } catch (error) {
    return error as BreakwaterError;
  }
  throw new Error('did not refuse');
}

describe('AiLimits: one caller holds at most its share of a budget in flight (maxReservedShare)', () => {
  it('a key holds two of 100 in a share of 250; the third waits for its own (share_in_flight); another key is served', async () => {
    const { acquire, budget, share } = limits([BUDGET]);
    const a = key('a');
    const held = [await acquire(a), await acquire(a)];
    const third = await refusal(acquire(a));
    expect(third.code).toBe('spend_limited');
    expect(third.details).toEqual({ rule: 'b', refusal: 'share_in_flight' });
    expect(third.retryAfterMs).toBe(1_000);
    expect(await share('key:a')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 200 });
    // The refused one reserved nothing on the budget.
    expect(await budget()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 200 });

    const b = await acquire(key('b'));
    expect(await budget()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 300 });

    // Settling releases the share (nothing is spent on it) and spends the cost on the budget.
    await held[0]!.settle(30);
    expect(await share('key:a')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 100 });
    expect(await budget()).toEqual({ spentMicroUsd: 30, reservedMicroUsd: 200 });
    await acquire(a); // room again in its share
    await Promise.all([held[1]!.settle(undefined), b.settle(0)]);
    expect(await share('key:b')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it('an estimate over the share alone: over_share, permanent; over the whole budget: over_budget', async () => {
    const { acquire, budget } = limits([BUDGET]);
    const overShare = await refusal(acquire(key('a'), { ...ESTIMATE, maxOutputTokens: 300 }));
    expect([overShare.details, overShare.kind, overShare.retryAfterMs]).toEqual([
      { rule: 'b', refusal: 'over_share' },
      'permanent',
      undefined,
    ]);
    const overBudget = await refusal(acquire(key('a'), { ...ESTIMATE, maxOutputTokens: 1_001 }));
    expect(overBudget.details).toEqual({ rule: 'b', refusal: 'over_budget' });
    expect(await budget()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it('a refusal by the budget releases the share taken for it', async () => {
    const { acquire, budget, share } = limits([BUDGET]);
    // Eight other callers take 800 of 1000 (their own shares are fine), then one spends 150 of its 200.
    const others = await Promise.all(Array.from({ length: 8 }, (_, i) => acquire(key(`o${i}`))));
    await others[0]!.settle(100);
    await acquire(key('x'));
    await acquire(key('y'));
    expect(await budget()).toEqual({ spentMicroUsd: 100, reservedMicroUsd: 900 });
    const refused = await refusal(acquire(key('a')));
    expect(refused.details).toEqual({ rule: 'b', refusal: 'reserved_in_flight' });
    expect(await share('key:a')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it('not applied to callers that stand for everyone (local, anonymous, none), nor with a share of 1', async () => {
    for (const principal of [undefined, PRINCIPALS.local, PRINCIPALS.anonymous]) {
      const { acquire, budget } = limits([BUDGET]);
      for (let i = 0; i < 10; i++) await acquire(principal);
      expect(await budget()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 1_000 });
    }
    const { acquire, budget, counters, clock } = limits([BUDGET], 1);
    for (let i = 0; i < 10; i++) await acquire(key('a'));
    expect(await budget()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 1_000 });
    const shareKey = `ai:share:b:v:p:${spendWindowStart(clock.now(), HOUR)}:v:key%3Aa`;
    expect(await counters.get(shareKey)).toBeUndefined();
  });

  it("not applied to a rule scoped by principal: that budget is the caller's alone", async () => {
    const { acquire } = limits([{ ...BUDGET, scope: { by: 'principal' } }]);
    for (let i = 0; i < 10; i++) await acquire(key('a'));
    expect((await refusal(acquire(key('a')))).details).toEqual({ rule: 'b', refusal: 'reserved_in_flight' });
  });

  it('maxReservedShare out of (0, 1] is refused at construction', () => {
    for (const bad of [0, -0.5, 1.5, Number.NaN])
      expect(() => limits([BUDGET], bad)).toThrow(/maxReservedShare/);
  });
});

describe('AiLimits: a sliding spend rule', () => {
  it('charges each cost in its window and the next: no trailing window ever holds more than the budget', async () => {
    const { acquire, budget, clock } = limits([{ ...BUDGET, window: 'sliding' }], 1);
    const t0 = spendWindowStart(clock.now(), HOUR);
    clock.tick(HOUR - 1); // the last ms of window 0
    const g = await acquire(key('a'), { ...ESTIMATE, maxOutputTokens: 1_000 });
    await g.settle(1_000);
    expect(await budget(t0)).toEqual({ spentMicroUsd: 1_000, reservedMicroUsd: 0 });
    expect(await budget(t0 + HOUR)).toEqual({ spentMicroUsd: 1_000, reservedMicroUsd: 0 });
    clock.tick(1); // window 1 begins: a fixed rule would admit 1000 more here, 1 ms after the first
    const refused = await refusal(acquire(key('a')));
    expect([refused.details, refused.retryAfterMs]).toEqual([{ rule: 'b', refusal: 'budget_spent' }, HOUR]);
    clock.tick(HOUR); // window 2 holds nothing of window 0
    await acquire(key('a'));
  });
});
