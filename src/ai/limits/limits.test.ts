import { describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../../core/index.js';
import { FakeClock } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { UNCHANGED } from '../../store/index.js';
import { PriceTable } from '../pricing.js';
import { AiLimits, type RateRule, type SpendRule } from './limits.js';
import { MemoryCounterStore } from './memory-counters.js';
import { scopeKey } from './scope.js';
import { readState, reserveStep, settleStep, spendWindowStart } from './spend.js';
import { expectOptionsError } from '../../../test/support/options.js';

const HOUR = 3_600_000;
const PRICES = new PriceTable({ 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } });
// 100 output tokens at 1 USD/MTok: an estimate of 100 micro-USD.
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };
const TARGET = { provider: 'p', model: 'm', metadata: { user: 'u1' } };

function limits(spendRules: SpendRule[], rateRules: RateRule[] = [], clock = new FakeClock()) {
  const counters = new MemoryCounterStore(clock);
  const l = new AiLimits({
    rateRules,
    spendRules,
    rateStore: new MemoryRateLimitStore(),
    counters,
    prices: PRICES,
    ceilingMicroUsd: undefined,
    clock,
  });
  const state = (rule: string, scope: string) =>
    counters.get(`ai:spend:${rule}:${scope}:${spendWindowStart(clock.now(), HOUR)}`).then(readState);
  return { l, counters, clock, state };
}

async function refusal(p: Promise<unknown>): Promise<BreakwaterError> {
  try {
    await p;
  } catch (error) {
    return error as BreakwaterError;
  }
  throw new Error('did not refuse');
}

describe('AiLimits: spend', () => {
  it('reserves the estimate, then settles the real cost in place of it', async () => {
    const { l, state } = limits([
      { name: 'b', budgetUsd: 0.0003, windowMs: HOUR, scope: { by: 'provider' } },
    ]);
    const a = await l.acquire(TARGET, ESTIMATE);
    const b = await l.acquire(TARGET, ESTIMATE);
    expect(a.estimateMicroUsd).toBe(100);
    expect(await state('b', 'v:p')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 200 });
    await a.settle(40);
    await a.settle(40); // once only
    expect(await state('b', 'v:p')).toEqual({ spentMicroUsd: 40, reservedMicroUsd: 100 });
    await b.settle(undefined); // usage unknown: the whole estimate counts
    expect(await state('b', 'v:p')).toEqual({ spentMicroUsd: 140, reservedMicroUsd: 0 });
    const c = await l.acquire(TARGET, ESTIMATE); // 140 + 100 <= 300
    // 140 spent + 100 reserved + 100 > 300, but 140 + 100 fits: only the request in flight holds the room.
    const held = await refusal(l.acquire(TARGET, ESTIMATE));
    expect(held.code).toBe('spend_limited');
    expect(held.retryAfterMs).toBe(1_000);
    expect(held.details).toEqual({ rule: 'b', refusal: 'reserved_in_flight' });
    expect(held.message).toBe(
      'The spend limit "b" is reserved by requests still in flight (each holds its maximum cost until it ends); try again in 1 s.',
    );
    await c.settle(100);
    // 240 spent + 100 > 300: the money is gone until the window ends.
    const spent = await refusal(l.acquire(TARGET, ESTIMATE));
    expect(spent.retryAfterMs).toBe(HOUR);
    expect(spent.details).toEqual({ rule: 'b', refusal: 'budget_spent' });
    expect(spent.message).toBe('The spend limit "b" for this period has been reached; try again in 3600 s.');
  });

  it('n answers reserve the output n times: 3 answers × 90 tokens at 1 micro-USD each (the prompt is free here)', async () => {
    const { l, state } = limits([
      { name: 'b', budgetUsd: 0.0003, windowMs: HOUR, scope: { by: 'provider' } },
    ]);
    const g = await l.acquire(TARGET, { ...ESTIMATE, maxOutputTokens: 90, answers: 3 });
    expect(g.estimateMicroUsd).toBe(270);
    expect(await state('b', 'v:p')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 270 });
    const e = await refusal(l.acquire(TARGET, { ...ESTIMATE, maxOutputTokens: 90, answers: 4 }));
    expect(e.details).toEqual({ rule: 'b', refusal: 'over_budget' }); // 360 > 300
    expect(e.kind).toBe('permanent');
  });

  it('a refusal by a later rule releases the reservations of the earlier ones', async () => {
    const { l, state } = limits([
      { name: 'wide', budgetUsd: 1, windowMs: HOUR, scope: { by: 'provider' } },
      { name: 'narrow', budgetUsd: 0.00005, windowMs: HOUR, scope: { by: 'metadata', key: 'user' } },
    ]);
    const e = await refusal(l.acquire(TARGET, ESTIMATE));
    expect(e.code).toBe('spend_limited');
    expect(e.retryAfterMs).toBeUndefined(); // 100 alone is over the budget of 50: waiting will not help
    expect(e.kind).toBe('permanent');
    expect(await state('wide', 'v:p')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
  });

  it('starts over in the next window; a late settle goes to the window it reserved in', async () => {
    const { l, clock, counters } = limits([
      { name: 'b', budgetUsd: 0.0001, windowMs: HOUR, scope: { by: 'model' } },
    ]);
    clock.tick(HOUR - 1000);
    const grant = await l.acquire(TARGET, ESTIMATE);
    const first = `ai:spend:b:v:p%2Fm:${spendWindowStart(clock.now(), HOUR)}`;
    clock.tick(500);
    // Held by the request in flight, and the window ends in 500 ms: the sooner of that and 1 s.
    expect((await refusal(l.acquire(TARGET, ESTIMATE))).retryAfterMs).toBe(500);
    clock.tick(500);
    const next = await l.acquire(TARGET, ESTIMATE);
    await grant.settle(100);
    await next.settle(100);
    expect(await counters.get(first)).toBeUndefined(); // expired with its window
    expect(
      readState(await counters.get(`ai:spend:b:v:p%2Fm:${spendWindowStart(clock.now(), HOUR)}`)),
    ).toEqual({
      spentMicroUsd: 100,
      reservedMicroUsd: 0,
    });
  });

  it('refuses (400) an unpriced model or a request without max_tokens under a spend rule', async () => {
    const { l } = limits([
      { name: 'b', budgetUsd: 1, windowMs: HOUR, scope: { by: 'provider', value: 'p' } },
    ]);
    const unpriced = await refusal(l.acquire({ ...TARGET, model: 'x' }, ESTIMATE));
    expect([unpriced.code, unpriced.details?.reason]).toEqual(['invalid_payload', 'model_not_priced']);
    const unbounded = await refusal(l.acquire(TARGET, { ...ESTIMATE, maxOutputTokens: undefined }));
    expect([unbounded.code, unbounded.details?.reason]).toEqual(['invalid_payload', 'max_tokens_required']);
    // A request no rule covers needs neither.
    const other = await l.acquire({ ...TARGET, provider: 'q' }, { ...ESTIMATE, maxOutputTokens: undefined });
    expect(other.estimateMicroUsd).toBe(0);
  });
});

describe('AiLimits: rate', () => {
  it('counts per scope value and reports the tightest rule', async () => {
    const { l } = limits(
      [],
      [
        { name: 'loose', limit: 10, windowMs: HOUR, technique: 'fixed', scope: { by: 'provider' } },
        {
          name: 'tight',
          limit: 2,
          windowMs: HOUR,
          technique: 'sliding',
          scope: { by: 'metadata', key: 'user' },
        },
      ],
    );
    const grant = await l.acquire(TARGET, ESTIMATE);
    expect(grant.rateHeaders).toEqual({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '3600',
    });
    await l.acquire(TARGET, ESTIMATE);
    const e = await refusal(l.acquire(TARGET, ESTIMATE));
    expect(e.code).toBe('rate_limited');
    expect(e.details).toEqual({ limit: 2, remaining: 0, reset_ms: HOUR, rule: 'tight' });
    await l.acquire({ ...TARGET, metadata: { user: 'u2' } }, ESTIMATE);
  });
});

describe('scopeKey', () => {
  it('splits, filters, shares a bucket for a missing key, and hashes long values', () => {
    expect(scopeKey({ by: 'provider' }, TARGET)).toBe('v:p');
    expect(scopeKey({ by: 'provider', value: 'q' }, TARGET)).toBeUndefined();
    expect(scopeKey({ by: 'model' }, TARGET)).toBe('v:p%2Fm');
    expect(scopeKey({ by: 'metadata', key: 'user' }, TARGET)).toBe('v:u1');
    expect(scopeKey({ by: 'metadata', key: 'user', value: 'u1' }, TARGET)).toBe('v:u1');
    expect(scopeKey({ by: 'metadata', key: 'user', value: 'u2' }, TARGET)).toBeUndefined();
    expect(scopeKey({ by: 'metadata', key: 'team' }, TARGET)).toBe('none');
    expect(scopeKey({ by: 'metadata', key: 'team', value: 'x' }, TARGET)).toBeUndefined();
    expect(scopeKey({ by: 'metadata', key: 'n' }, { ...TARGET, metadata: { n: 3 } })).toBe('v:3');
    expect(
      scopeKey({ by: 'metadata', key: 'user' }, { ...TARGET, metadata: { user: '€'.repeat(100) } }),
    ).toMatch(/^h:[0-9a-f]{64}$/);
  });
});

describe('spend steps', () => {
  it('reserve writes nothing when refused; settle leaves an expired window alone', () => {
    const refused = reserveStep(100, 150, HOUR)({ spentMicroUsd: 60, reservedMicroUsd: 0 }, 0);
    expect(refused.state).toBe(UNCHANGED);
    const ok = reserveStep(100, 160, HOUR)({ spentMicroUsd: 60, reservedMicroUsd: 0 }, 5);
    expect(ok).toEqual({
      state: { spentMicroUsd: 60, reservedMicroUsd: 100 },
      expiresAt: 5 + HOUR,
      result: { reserved: true, state: { spentMicroUsd: 60, reservedMicroUsd: 100 } },
    });
    expect(settleStep(100, 10, HOUR)(undefined, 0).state).toBe(UNCHANGED);
    expect(settleStep(100, 10, HOUR)({ spentMicroUsd: 0, reservedMicroUsd: 30 }, 0).state).toEqual({
      spentMicroUsd: 10,
      reservedMicroUsd: 0,
    });
  });
});

describe('AiLimits: its config', () => {
  it('refuses a bad share and key prefix at once, as an OptionsError', () => {
    const clock = new FakeClock();
    const config = {
      rateRules: [],
      spendRules: [],
      rateStore: new MemoryRateLimitStore(),
      counters: new MemoryCounterStore(clock),
      prices: PRICES,
      ceilingMicroUsd: undefined,
      clock,
    };
    expectOptionsError(() => new AiLimits({ ...config, keyPrefix: 1 as never, maxReservedShare: 0 }), {
      owner: 'AiLimits',
      options: ['keyPrefix', 'maxReservedShare'],
      message:
        'AiLimits: keyPrefix must be a string, got 1; maxReservedShare must be a fraction in (0, 1], got 0',
    });
    expect(new AiLimits({ ...config, maxReservedShare: 1 }).empty).toBe(true);
  });
});
