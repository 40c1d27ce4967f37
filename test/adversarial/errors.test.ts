import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  ConsecutiveWindow,
  Deadline,
  ERROR_CODES,
  bulkhead,
  circuitBreaker,
  constantBackoff,
  fallback,
  hedging,
  isErrorCode,
  pipeline,
  rateLimit,
  retry,
  timeout,
  toProblem,
  type Policy,
} from '../../src/entries/index.js';
import { FakeClock, faultInjection } from '../../src/entries/testing.js';

/** Asserts `error` is a well-formed BreakwaterError and its problem+json is well-formed; returns the problem. */
function checkRejection(error: unknown, code: string): Record<string, unknown> {
  expect(error).toBeInstanceOf(BreakwaterError);
  const e = error as BreakwaterError;
  expect(e.code).toBe(code);
  expect(isErrorCode(e.code)).toBe(true);
  expect(e.name).toBe('BreakwaterError');
  expect(e.status).toBe(ERROR_CODES[e.code].status);
  expect(Number.isInteger(e.status)).toBe(true);
  expect(['transient', 'permanent', 'fatal']).toContain(e.kind);
  expect(['failed', 'unknown']).toContain(e.outcome);
  if (e.retryAfterMs !== undefined) {
    expect(Number.isInteger(e.retryAfterMs)).toBe(true);
    expect(e.retryAfterMs).toBeGreaterThan(0);
  }
  expect(e.message).not.toMatch(/undefined|NaN|null|\[object/);
  const problem = toProblem(e, '/tools/gifts');
  expect(problem).toMatchObject({
    type: `urn:breakwater:error:${code}`,
    title: ERROR_CODES[e.code].title,
    status: e.status,
    detail: e.message,
    code,
    retryable: e.kind === 'transient' && e.outcome === 'failed',
    retry_after_ms: e.retryAfterMs ?? null,
    outcome: e.outcome,
    instance: '/tools/gifts',
  });
  expect(JSON.parse(JSON.stringify(problem))).toEqual(problem);
  return problem;
}

const rejectionOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );

describe('every rejection a policy makes is a well-formed BreakwaterError', () => {
  it('timeout: timeout and deadline_exceeded', async () => {
    const clock = new FakeClock();
    const limit = timeout({ timeoutMs: 100, name: 'gifts', clock });
    const a = rejectionOf(limit.execute(() => new Promise(() => {})));
    await clock.tickAsync(100);
    expect(checkRejection(await a, 'timeout')).toMatchObject({ timeout_ms: 100, status: 504 });
    const b = rejectionOf(Deadline.run(10, () => limit.execute(() => 1), clock));
    checkRejection(await b, 'deadline_exceeded');
    const c = rejectionOf(Deadline.run(90, () => limit.execute(() => new Promise(() => {})), clock));
    await clock.tickAsync(100);
    checkRejection(await c, 'deadline_exceeded');
  });

  it('bulkhead: full, queue_timeout, deadline_exceeded', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 50, name: 'gifts', clock });
    let release!: () => void;
    const holder = guard.execute(() => new Promise<void>((r) => (release = r)));
    const queued = rejectionOf(guard.execute(() => 1));
    const full = await rejectionOf(guard.execute(() => 1));
    expect(checkRejection(full, 'bulkhead_full')).toMatchObject({ reason: 'full', status: 503 });
    await clock.tickAsync(50);
    expect(checkRejection(await queued, 'bulkhead_full')).toMatchObject({
      reason: 'queue_timeout',
      waited_ms: 50,
    });
    const late = rejectionOf(Deadline.run(20, () => guard.execute(() => 1), clock));
    await clock.tickAsync(20);
    checkRejection(await late, 'deadline_exceeded');
    release();
    await holder;
  });

  it('circuit breaker: open, half-open, isolated', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ name: 'gifts', window: new ConsecutiveWindow(1), clock });
    await breaker.execute(() => Promise.reject(new BreakwaterError('upstream_unavailable'))).catch(() => 0);
    checkRejection(await rejectionOf(breaker.execute(() => 1)), 'circuit_open');
    clock.tick(30_000);
    const trial = breaker.execute(() => new Promise(() => {}));
    void trial;
    checkRejection(await rejectionOf(breaker.execute(() => 1)), 'circuit_open');
    breaker.isolate();
    checkRejection(await rejectionOf(breaker.execute(() => 1)), 'circuit_open');
  });

  it('rate limiter and fault injection', async () => {
    const clock = new FakeClock();
    const limiter = rateLimit({
      algorithm: { type: 'token_bucket', capacity: 1, refillIntervalMs: 1000 },
      clock,
    });
    await limiter.execute(() => 1);
    expect(checkRejection(await rejectionOf(limiter.execute(() => 1)), 'rate_limited')).toMatchObject({
      limit: 1,
      remaining: 0,
      reset_ms: 1000,
      retry_after_ms: 1000,
    });
    const chaos = faultInjection({ error: { rate: 1 }, clock });
    checkRejection(await rejectionOf(chaos.execute(() => 1)), 'upstream_unavailable');
  });

  it('hedging cancels losers with a well-formed canceled error', async () => {
    const clock = new FakeClock();
    const policy = hedging({ delayMs: 10, clock });
    const reasons: unknown[] = [];
    const result = policy.execute(
      (ctx) =>
        new Promise((resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reasons.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
          if (ctx.attempt === 2) clock.setTimeout(() => resolve('second'), 5);
        }),
    );
    await clock.tickAsync(20);
    expect(await result).toBe('second');
    expect(reasons).toHaveLength(1);
    checkRejection(reasons[0], 'canceled');
  });
});

describe('a caller abort or a DOM timeout serialized as problem+json', () => {
  it('an AbortError from the caller is not reported as internal_error (a bug)', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    let release!: () => void;
    const holder = guard.execute(() => new Promise<void>((r) => (release = r)));
    const controller = new AbortController();
    const queued = rejectionOf(guard.execute(() => 1, controller.signal));
    controller.abort();
    const error = await queued;
    const problem = toProblem(error);
    expect(problem.code).toBe('canceled');
    expect(problem.status).toBe(499);
    release();
    await holder;
  });

  it("AbortSignal.timeout()'s TimeoutError is reported as timeout, not internal_error", () => {
    const problem = toProblem(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    expect(problem.code).toBe('timeout');
    expect(problem.status).toBe(504);
  });
});

describe('non-Error thrown values pass through every policy unchanged', () => {
  const values: unknown[] = ['oops', undefined, null, 0, { weird: true }, Symbol('s')];

  const policies = (clock: FakeClock): Record<string, Policy> => ({
    timeout: timeout({ timeoutMs: 100, clock }),
    cooperativeTimeout: timeout({ timeoutMs: 100, strategy: 'cooperative', clock }),
    retry: retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }),
    circuitBreaker: circuitBreaker({ clock }),
    bulkhead: bulkhead({ maxConcurrent: 1, clock }),
    hedging: hedging({ maxHedgedAttempts: 1, delayMs: 1000, clock }),
    rateLimit: rateLimit({ algorithm: { type: 'fixed_window', limit: 100, windowMs: 1000 }, clock }),
    faultInjection: faultInjection({ clock }),
    fallbackNotMatching: fallback({ value: 'stand-in', shouldFallback: () => false, clock }),
    pipeline: pipeline(
      bulkhead({ maxConcurrent: 1, clock }),
      retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }),
      circuitBreaker({ clock }),
      timeout({ timeoutMs: 100, clock }),
    ),
  });

  for (const value of values) {
    it(`thrown ${String(typeof value === 'symbol' ? 'symbol' : JSON.stringify(value))}: sync throw and rejection`, async () => {
      const clock = new FakeClock();
      for (const [name, policy] of Object.entries(policies(clock))) {
        const sync = await rejectionOf(
          policy.execute(() => {
            throw value;
          }),
        );
        expect(Object.is(sync, value), `${name} (sync throw)`).toBe(true);
        const async = await rejectionOf(policy.execute(() => Promise.reject(value)));
        expect(Object.is(async, value), `${name} (rejection)`).toBe(true);
      }
      await clock.tickAsync(1000);
      expect(clock.pendingTimers()).toBe(0);
    });
  }

  it('toProblem of each never leaks it and says internal_error', () => {
    for (const value of values) {
      expect(toProblem(value)).toMatchObject({ code: 'internal_error', status: 500, retry_after_ms: null });
    }
  });
});
