import { describe, expect, it } from 'vitest';
import { DecorrelatedJitterBackoff, ExponentialBackoff, LinearBackoff, ConstantBackoff } from './backoff.js';
import { ConsecutiveWindow, CountWindow, TimeWindow } from './breaker-windows.js';
import { bulkhead, BULKHEAD_DEFAULTS } from './bulkhead.js';
import { circuitBreaker, CIRCUIT_BREAKER_DEFAULTS } from './circuit-breaker.js';
import { fallback, FALLBACK_DEFAULTS } from './fallback.js';
import { faultInjection, FAULT_INJECTION_DEFAULTS } from './fault-injection.js';
import { hedging, HEDGING_DEFAULTS } from './hedging.js';
import { FixedWindow, SlidingWindow, TokenBucket } from './rate-limit/algorithms.js';
import { MemoryRateLimitStore } from './rate-limit/memory-store.js';
import { rateLimit, RATE_LIMIT_DEFAULTS } from './rate-limit/policy.js';
import { retry, RETRY_DEFAULTS } from './retry.js';
import { timeout, TIMEOUT_DEFAULTS } from './timeout.js';
import { optionsErrorOf, expectOptionsError } from '../../test/support/options.js';

function messageOf(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(RangeError);
    return (error as Error).message;
  }
  throw new Error('expected a RangeError');
}

const fixed = { type: 'fixed_window', limit: 5, windowMs: 1000 } as const;

/** One bad option per owner: the message starts with the name users call it by, then the option. */
const owners: [owner: string, make: () => unknown, option: string][] = [
  ['timeout', () => timeout({ timeoutMs: 0 }), 'timeoutMs'],
  ['retry', () => retry({ maxDelayMs: -1 }), 'maxDelayMs'],
  ['circuitBreaker', () => circuitBreaker({ permittedCalls: 0 }), 'permittedCalls'],
  ['bulkhead', () => bulkhead({ maxConcurrent: 0 }), 'maxConcurrent'],
  ['rateLimit', () => rateLimit({ algorithm: fixed, key: '' }), 'key'],
  ['rateLimit', () => rateLimit({ algorithm: { type: 'leaky' } as never }), 'algorithm.type'],
  ['fallback', () => fallback({ value: 1, shouldFallback: 1 as never }), 'shouldFallback'],
  ['hedging', () => hedging({ delayMs: -1 }), 'delayMs'],
  ['faultInjection', () => faultInjection({ hang: { rate: 2 } }), 'hang.rate'],
  ['ConstantBackoff', () => new ConstantBackoff(-1), 'delayMs'],
  ['LinearBackoff', () => new LinearBackoff({ stepMs: -1 }), 'stepMs'],
  ['ExponentialBackoff', () => new ExponentialBackoff({ factor: 0.5 }), 'factor'],
  ['DecorrelatedJitterBackoff', () => new DecorrelatedJitterBackoff({ baseMs: 0 }), 'baseMs'],
  ['ConsecutiveWindow', () => new ConsecutiveWindow(0), 'threshold'],
  ['CountWindow', () => new CountWindow({ size: 0 }), 'size'],
  ['TimeWindow', () => new TimeWindow({ windowMs: 0 }), 'windowMs'],
  ['FixedWindow', () => new FixedWindow({ limit: 0, windowMs: 1000 }), 'limit'],
  ['SlidingWindow', () => new SlidingWindow({ limit: 1, windowMs: 0 }), 'windowMs'],
  ['TokenBucket', () => new TokenBucket({ capacity: 0, refillIntervalMs: 1000 }), 'capacity'],
  ['MemoryRateLimitStore', () => new MemoryRateLimitStore({ sweepEvery: 0 }), 'sweepEvery'],
];

describe('option errors name their owner as users call it, in one format', () => {
  for (const [owner, make, option] of owners) {
    it(`${owner}: ${option}`, () => {
      expect(messageOf(make)).toMatch(
        new RegExp(`^${owner}: ${option.replace('.', '\\.')} must be .+, got .+$`),
      );
    });
  }

  it('a bad clock names the owner too', () => {
    expect(messageOf(() => circuitBreaker({ clock: {} as never }))).toMatch(
      /^circuitBreaker: clock must be /,
    );
    expect(messageOf(() => rateLimit({ algorithm: fixed, clock: {} as never }))).toMatch(
      /^rateLimit: clock /,
    );
  });
});

describe('options validated at construction that were not before', () => {
  it('name must be a non-empty string in every policy', () => {
    const makers: [string, (name: string) => unknown][] = [
      ['timeout', (name) => timeout({ timeoutMs: 10, name })],
      ['retry', (name) => retry({ name })],
      ['circuitBreaker', (name) => circuitBreaker({ name })],
      ['bulkhead', (name) => bulkhead({ maxConcurrent: 1, name })],
      ['rateLimit', (name) => rateLimit({ algorithm: fixed, name })],
      ['fallback', (name) => fallback({ value: 1, name })],
      ['hedging', (name) => hedging({ name })],
      ['faultInjection', (name) => faultInjection({ name })],
    ];
    for (const [owner, make] of makers) {
      expect(messageOf(() => make(''))).toBe(`${owner}: name must be a non-empty string, got ''`);
      expect(messageOf(() => make(42 as never))).toBe(`${owner}: name must be a non-empty string, got 42`);
    }
  });

  it('random must be a function (fault injection and the jittered backoffs)', () => {
    expect(messageOf(() => faultInjection({ random: 0.5 as never }))).toBe(
      'faultInjection: random must be a function, got 0.5',
    );
    expect(() => new ExponentialBackoff({ random: 'x' as never })).toThrow(/ExponentialBackoff: random/);
    expect(() => new DecorrelatedJitterBackoff({ random: {} as never })).toThrow(
      /DecorrelatedJitterBackoff: random/,
    );
    expect(new ExponentialBackoff({ jitter: 'full', random: () => 0.5, baseMs: 100 }).next(1, 0)).toBe(50);
  });

  it('captureRejectionStack must be a boolean', () => {
    expect(messageOf(() => circuitBreaker({ captureRejectionStack: 'yes' as never }))).toBe(
      "circuitBreaker: captureRejectionStack must be a boolean, got 'yes'",
    );
    expect(circuitBreaker({ captureRejectionStack: true })).toBeDefined();
  });

  it('classifyOptions must be an object (retry and fallback)', () => {
    expect(() => retry({ classifyOptions: 'POST' as never })).toThrow(
      /retry: classifyOptions must be an object/,
    );
    expect(() => fallback({ value: 1, classifyOptions: null as never })).toThrow(/fallback: classifyOptions/);
  });

  it('numeric strings are refused even where a comparison would have let them through', () => {
    expect(() => new CountWindow({ size: 10, failureRateThreshold: '0.5' as never })).toThrow(
      /failureRateThreshold/,
    );
    expect(() => faultInjection({ error: { rate: '0.5' as never } })).toThrow(/error\.rate/);
  });
});

describe('every policy keeps its default name in its *_DEFAULTS', () => {
  it('and uses it', () => {
    expect(timeout(10).name).toBe(TIMEOUT_DEFAULTS.name);
    expect(retry().name).toBe(RETRY_DEFAULTS.name);
    expect(circuitBreaker().name).toBe(CIRCUIT_BREAKER_DEFAULTS.name);
    expect(bulkhead({ maxConcurrent: 1 }).name).toBe(BULKHEAD_DEFAULTS.name);
    expect(rateLimit({ algorithm: fixed }).name).toBe(RATE_LIMIT_DEFAULTS.name);
    expect(fallback({ value: 1 }).name).toBe(FALLBACK_DEFAULTS.name);
    expect(hedging().name).toBe(HEDGING_DEFAULTS.name);
    expect(faultInjection().name).toBe(FAULT_INJECTION_DEFAULTS.name);
    expect([TIMEOUT_DEFAULTS.name, RETRY_DEFAULTS.name, FALLBACK_DEFAULTS.name]).toEqual([
      'timeout',
      'retry',
      'fallback',
    ]);
    expect([HEDGING_DEFAULTS.name, FAULT_INJECTION_DEFAULTS.name]).toEqual(['hedging', 'fault-injection']);
  });
});

describe('a bad option set is reported all at once, naming the policy', () => {
  it('every problem in one message and in problems, with code invalid_options', () => {
    expectOptionsError(
      () =>
        circuitBreaker({
          name: '',
          openDurationMs: 0,
          permittedCalls: 1.5,
          openBackoff: { multiplier: 0.5, maxMs: -5 },
          captureRejectionStack: 'yes' as never,
        }),
      {
        owner: 'circuitBreaker',
        options: [
          'name',
          'openDurationMs',
          'openBackoff.multiplier',
          'permittedCalls',
          'captureRejectionStack',
          'openBackoff.maxMs',
        ],
        message:
          "circuitBreaker: name must be a non-empty string, got ''; openDurationMs must be a finite number > 0, " +
          'got 0; openBackoff.multiplier must be a finite number >= 1, got 0.5; permittedCalls must be an ' +
          "integer >= 1, got 1.5; captureRejectionStack must be a boolean, got 'yes'; openBackoff.maxMs must " +
          'be a finite number >= openDurationMs (0), got -5',
      },
    );
  });

  it('in each policy', () => {
    const cases: [string, () => unknown, string[]][] = [
      [
        'timeout',
        () => timeout({ timeoutMs: 0, deadlineMarginMs: -1, strategy: 'x' as never }),
        ['timeoutMs', 'strategy', 'deadlineMarginMs'],
      ],
      [
        'retry',
        () => retry({ maxAttempts: 0, maxDelayMs: -1, backoff: {} as never }),
        ['maxAttempts', 'backoff', 'maxDelayMs'],
      ],
      [
        'bulkhead',
        () => bulkhead({ maxConcurrent: 0, maxQueue: -1, queueTimeoutMs: 0 }),
        ['maxConcurrent', 'maxQueue', 'queueTimeoutMs'],
      ],
      [
        'fallback',
        () => fallback({ shouldFallback: 1 as never, name: '' } as never),
        ['shouldFallback', 'name', 'value and fallback'],
      ],
      ['hedging', () => hedging({ maxHedgedAttempts: 0, delayMs: -1 }), ['maxHedgedAttempts', 'delayMs']],
      [
        'faultInjection',
        () => faultInjection({ enabled: 1 as never, hang: { rate: 2 }, latency: { rate: 0, ms: [5, 1] } }),
        ['enabled', 'latency.ms', 'hang.rate'],
      ],
      ['rateLimit', () => rateLimit({ algorithm: fixed, key: '', store: {} as never }), ['key', 'store']],
      [
        'ExponentialBackoff',
        () => new ExponentialBackoff({ baseMs: 0, factor: 0.5, jitter: 'x' as never }),
        ['baseMs', 'factor', 'jitter'],
      ],
      [
        'MemoryRateLimitStore',
        () => new MemoryRateLimitStore({ sweepEvery: 0, sweepBatch: 0 }),
        ['sweepEvery', 'sweepBatch'],
      ],
    ];
    for (const [owner, make, options] of cases) {
      const e = optionsErrorOf(make);
      expect([e.owner, e.problems.map((p) => p.option)]).toEqual([owner, options]);
      expect(e.message.startsWith(`${owner}: ${options[0]} must be `)).toBe(true);
    }
  });
});
