import { describe, expect, it } from 'vitest';
import {
  ConsecutiveWindow,
  CountWindow,
  MemoryRateLimitStore,
  TimeWindow,
  bulkhead,
  circuitBreaker,
  constantBackoff,
  decorrelatedJitterBackoff,
  exponentialBackoff,
  fallback,
  hedging,
  linearBackoff,
  rateLimit,
  retry,
  timeout,
} from '../../src/entries/index.js';
import { faultInjection } from '../../src/entries/testing.js';

type Case = readonly [label: string, make: () => unknown, option: RegExp];

function expectRangeError(label: string, make: () => unknown, option: RegExp): void {
  let thrown: unknown;
  try {
    make();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `${label}: should throw`).toBeInstanceOf(RangeError);
  expect((thrown as Error).message, label).toMatch(option);
}

const bad = [Number.NaN, -1, '10' as unknown as number];

const cases: Case[] = [
  // timeout
  ...[...bad, 0, Infinity, undefined as unknown as number].map((v): Case => [
    `timeout timeoutMs ${String(v)}`,
    () => timeout({ timeoutMs: v }),
    /timeoutMs/,
  ]),
  ...[Number.NaN, -1, Infinity].map((v): Case => [
    `timeout deadlineMarginMs ${v}`,
    () => timeout({ timeoutMs: 100, deadlineMarginMs: v }),
    /deadlineMarginMs/,
  ]),
  ['timeout strategy', () => timeout({ timeoutMs: 100, strategy: 'eager' as never }), /strategy/],
  ['timeout clock {}', () => timeout({ timeoutMs: 100, clock: {} as never }), /clock/],
  // retry
  ...[0, 1.5, Number.NaN, -1, '3' as unknown as number].map((v): Case => [
    `retry maxAttempts ${String(v)}`,
    () => retry({ maxAttempts: v }),
    /maxAttempts/,
  ]),
  ...[Number.NaN, -1, Infinity].map((v): Case => [
    `retry maxDelayMs ${v}`,
    () => retry({ maxDelayMs: v }),
    /maxDelayMs/,
  ]),
  ['retry backoff {}', () => retry({ backoff: {} as never }), /backoff/],
  ['retry backoff null', () => retry({ backoff: null as never }), /backoff/],
  ['retry shouldRetry string', () => retry({ shouldRetry: 'yes' as never }), /shouldRetry/],
  ['retry clock {}', () => retry({ clock: {} as never }), /clock/],
  // backoffs
  ['constantBackoff NaN', () => constantBackoff(Number.NaN), /delayMs/],
  ['linearBackoff stepMs -1', () => linearBackoff({ stepMs: -1 }), /stepMs/],
  ['exponentialBackoff factor 0.5', () => exponentialBackoff({ factor: 0.5 }), /factor/],
  ['exponentialBackoff baseMs Infinity', () => exponentialBackoff({ baseMs: Infinity }), /baseMs/],
  ['exponentialBackoff jitter', () => exponentialBackoff({ jitter: 'some' as never }), /jitter/],
  ['decorrelated maxMs NaN', () => decorrelatedJitterBackoff({ maxMs: Number.NaN }), /maxMs/],
  // circuit breaker and windows
  ...[0, Number.NaN, Infinity, -1].map((v): Case => [
    `breaker openDurationMs ${v}`,
    () => circuitBreaker({ openDurationMs: v }),
    /openDurationMs/,
  ]),
  ['breaker permittedCalls 0', () => circuitBreaker({ permittedCalls: 0 }), /permittedCalls/],
  ['breaker permittedCalls 1.5', () => circuitBreaker({ permittedCalls: 1.5 }), /permittedCalls/],
  [
    'breaker successesToClose NaN',
    () => circuitBreaker({ successesToClose: Number.NaN }),
    /successesToClose/,
  ],
  ['breaker openBackoff null', () => circuitBreaker({ openBackoff: null as never }), /openBackoff/],
  [
    'breaker openBackoff.multiplier 0.5',
    () => circuitBreaker({ openBackoff: { multiplier: 0.5, maxMs: 60_000 } }),
    /openBackoff\.multiplier/,
  ],
  [
    'breaker openBackoff.maxMs below openDurationMs',
    () => circuitBreaker({ openDurationMs: 1000, openBackoff: { maxMs: 10 } }),
    /openBackoff\.maxMs/,
  ],
  ['breaker window {}', () => circuitBreaker({ window: {} as never }), /window/],
  ['breaker isFailure string', () => circuitBreaker({ isFailure: 'x' as never }), /isFailure/],
  ['breaker clock {}', () => circuitBreaker({ clock: {} as never }), /clock/],
  ['ConsecutiveWindow 0', () => new ConsecutiveWindow(0), /threshold/],
  ['CountWindow size NaN', () => new CountWindow({ size: Number.NaN }), /size/],
  [
    'CountWindow failureRateThreshold 1.5',
    () => new CountWindow({ size: 10, failureRateThreshold: 1.5 }),
    /failureRateThreshold/,
  ],
  ['CountWindow minimumCalls > size', () => new CountWindow({ size: 10, minimumCalls: 11 }), /minimumCalls/],
  ['TimeWindow bucketMs not a divisor', () => new TimeWindow({ windowMs: 1000, bucketMs: 300 }), /bucketMs/],
  ['TimeWindow windowMs Infinity', () => new TimeWindow({ windowMs: Infinity }), /windowMs/],
  // bulkhead
  ...[0, 1.5, Number.NaN, Infinity, '2' as unknown as number].map((v): Case => [
    `bulkhead maxConcurrent ${String(v)}`,
    () => bulkhead({ maxConcurrent: v }),
    /maxConcurrent/,
  ]),
  ...[-1, 1.5, Number.NaN].map((v): Case => [
    `bulkhead maxQueue ${v}`,
    () => bulkhead({ maxConcurrent: 1, maxQueue: v }),
    /maxQueue/,
  ]),
  ...[0, -1, Number.NaN, Infinity].map((v): Case => [
    `bulkhead queueTimeoutMs ${v}`,
    () => bulkhead({ maxConcurrent: 1, queueTimeoutMs: v }),
    /queueTimeoutMs/,
  ]),
  ['bulkhead clock {}', () => bulkhead({ maxConcurrent: 1, clock: {} as never }), /clock/],
  // hedging
  ['hedging maxHedgedAttempts 0', () => hedging({ maxHedgedAttempts: 0 }), /maxHedgedAttempts/],
  ...[-1, Number.NaN, Infinity].map((v): Case => [
    `hedging delayMs ${v}`,
    () => hedging({ delayMs: v }),
    /delayMs/,
  ]),
  ['hedging shouldHedge number', () => hedging({ shouldHedge: 1 as never }), /shouldHedge/],
  ['hedging clock {}', () => hedging({ clock: {} as never }), /clock/],
  // rate limit
  [
    'rateLimit cost NaN',
    () =>
      rateLimit({
        algorithm: { type: 'token_bucket', capacity: 2, refillIntervalMs: 1000 },
        cost: Number.NaN,
      }),
    /cost/,
  ],
  ['rateLimit algorithm null', () => rateLimit({ algorithm: null as never }), /algorithm/],
  [
    'rateLimit fixed window limit Infinity',
    () => rateLimit({ algorithm: { type: 'fixed_window', limit: Infinity, windowMs: 1000 } }),
    /limit/,
  ],
  [
    'rateLimit clock {}',
    () => rateLimit({ algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 }, clock: {} as never }),
    /clock/,
  ],
  ['memory store sweepEvery 0', () => new MemoryRateLimitStore({ sweepEvery: 0 }), /sweepEvery/],
  // fault injection
  ...[1.5, -0.1, Number.NaN].map((v): Case => [
    `faultInjection error.rate ${v}`,
    () => faultInjection({ error: { rate: v } }),
    /error\.rate/,
  ]),
  [
    'faultInjection latency.ms [5, 1]',
    () => faultInjection({ latency: { rate: 1, ms: [5, 1] } }),
    /latency\.ms/,
  ],
  [
    'faultInjection latency.ms Infinity',
    () => faultInjection({ latency: { rate: 1, ms: Infinity } }),
    /latency\.ms/,
  ],
  ['faultInjection latency null', () => faultInjection({ latency: null as never }), /latency/],
  ['faultInjection hang null', () => faultInjection({ hang: null as never }), /hang/],
  [
    'faultInjection error.code',
    () => faultInjection({ error: { rate: 1, code: 'nope' as never } }),
    /error\.code/,
  ],
  ['faultInjection enabled string', () => faultInjection({ enabled: 'yes' as never }), /enabled/],
  // fallback
  ['fallback neither', () => fallback({} as never), /value and fallback/],
  ['fallback both', () => fallback({ value: 1, fallback: () => 2 } as never), /value and fallback/],
];

describe('option validation: nonsense is refused at construction with a RangeError naming the option', () => {
  for (const [label, make, option] of cases) {
    it(label, () => expectRangeError(label, make, option));
  }
});
