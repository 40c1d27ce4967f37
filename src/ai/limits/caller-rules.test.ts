import { describe, expect, it } from 'vitest';
import { FakeClock, type Principal } from '../../core/index.js';
import { MemoryRateLimitStore } from '../../policy/index.js';
import { PriceTable } from '../pricing.js';
import { callerRules, parsePrincipalAiLimits } from './caller-rules.js';
import { AiLimits } from './limits.js';
import { MemoryCounterStore } from './memory-counters.js';
import { expectOptionsError } from '../../../test/support/options.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

describe('callerRules', () => {
  it("a key's rules scoped by principal, named by their window; the same window twice is the lower limit", () => {
    expect(
      callerRules({
        rateRules: [
          { limit: 100, windowMs: MINUTE },
          { limit: 30, windowMs: MINUTE, window: 'fixed' },
          { limit: 1_000, windowMs: DAY, window: 'sliding' },
        ],
        budgets: [
          { limitUsd: 5, windowMs: DAY },
          { limitUsd: 50, windowMs: 30 * DAY, window: 'sliding' },
          { limitUsd: 7, windowMs: DAY },
        ],
      }),
    ).toEqual({
      rateRules: [
        {
          name: `key-rate-fixed-${MINUTE}`,
          limit: 30,
          windowMs: MINUTE,
          technique: 'fixed',
          scope: { by: 'principal' },
        },
        {
          name: `key-rate-sliding-${DAY}`,
          limit: 1_000,
          windowMs: DAY,
          technique: 'sliding',
          scope: { by: 'principal' },
        },
      ],
      spendRules: [
        {
          name: `key-spend-fixed-${DAY}`,
          budgetUsd: 5,
          windowMs: DAY,
          window: 'fixed',
          scope: { by: 'principal' },
        },
        {
          name: `key-spend-sliding-${30 * DAY}`,
          budgetUsd: 50,
          windowMs: 30 * DAY,
          window: 'sliding',
          scope: { by: 'principal' },
        },
      ],
    });
  });

  it('limits out of bounds are refused, naming the field', () => {
    expect(() =>
      parsePrincipalAiLimits({ budgets: [{ limitUsd: 0, windowMs: DAY }] }, 'keys create'),
    ).toThrow('keys create: budgets.0.limitUsd must be a number > 0, got 0');
    expect(() => parsePrincipalAiLimits({ rateRules: [{ limit: 1.5, windowMs: MINUTE }] })).toThrow(
      /rateRules\.0\.limit/,
    );
    expect(() => parsePrincipalAiLimits({ rateRules: [{ limit: 1, windowMs: 0 }] })).toThrow(/windowMs/);
    expect(() => parsePrincipalAiLimits({ allowedModels: [''] })).toThrow(/allowedModels\.0/);
    expect(() => parsePrincipalAiLimits({ budget: [] })).toThrow(/budget/);
  });

  it('every bad field at once, in one OptionsError', () => {
    expectOptionsError(
      () =>
        parsePrincipalAiLimits(
          {
            allowedModels: [''],
            budgets: [{ limitUsd: -1, windowMs: DAY, window: 'rolling' }],
            rateRules: [{ limit: 1.5, windowMs: 0 }],
            budget: [],
          },
          'keys create',
        ),
      {
        owner: 'keys create',
        options: [
          'allowedModels.0',
          'budgets.0.limitUsd',
          'budgets.0.window',
          'rateRules.0.limit',
          'rateRules.0.windowMs',
          'budget',
        ],
        message:
          "keys create: allowedModels.0 must be a non-empty string, got ''; budgets.0.limitUsd must be a number " +
          "> 0, got -1; budgets.0.window must be 'fixed' or 'sliding', got 'rolling'; rateRules.0.limit must " +
          'be an integer, got 1.5; rateRules.0.windowMs must be a number >= 1, got 0; budget must be left out ' +
          '(not an option), got []',
      },
    );
    expect(() => parsePrincipalAiLimits(5)).toThrow(new RangeError('ai: ai must be an object, got 5'));
  });
});

describe('AiLimits.forCaller', () => {
  const base = () =>
    new AiLimits({
      rateRules: [],
      spendRules: [],
      rateStore: new MemoryRateLimitStore(),
      counters: new MemoryCounterStore(new FakeClock()),
      prices: new PriceTable({}),
      ceilingMicroUsd: undefined,
      clock: new FakeClock(),
    });
  const principal = (ai: Principal['ai']): Principal => ({
    id: 'key:k',
    kind: 'api_key',
    name: 'k',
    scopes: new Set(['ai']),
    metadata: {},
    trustedBackend: false,
    ...(ai === undefined ? {} : { ai }),
  });

  it('compiled once per limits object; none without rules', () => {
    const limits = base();
    const ai = { rateRules: [{ limit: 2, windowMs: MINUTE }] };
    const own = limits.forCaller(principal(ai));
    expect(own).toBeInstanceOf(AiLimits);
    expect(limits.forCaller(principal(ai))).toBe(own);
    expect(limits.forCaller(principal({ allowedModels: ['a/b'] }))).toBeUndefined();
    expect(limits.forCaller(principal({ rateRules: [] }))).toBeUndefined();
    expect(limits.forCaller(principal(undefined))).toBeUndefined();
    expect(limits.forCaller(undefined)).toBeUndefined();
  });

  it('limits it cannot apply throw (the request then fails closed)', () => {
    expect(() => base().forCaller(principal({ rateRules: [{ limit: 0, windowMs: MINUTE }] }))).toThrow(
      /principal\.ai: rateRules\.0\.limit/,
    );
  });
});
