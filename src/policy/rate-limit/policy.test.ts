import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, toProblem } from '../../core/index.js';
import { pipeline } from '../pipeline.js';
import type { RateLimitAlgorithm, RateLimitDecision } from './algorithms.js';
import { MemoryRateLimitStore } from './memory-store.js';
import { rateLimit, RateLimitPolicy, rateLimitedError } from './policy.js';
import type { RateLimitStore } from './store.js';

const MINUTE = 60_000;

async function rejection(promise: Promise<unknown>): Promise<BreakwaterError> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`);
    },
    (error: unknown) => error as BreakwaterError,
  );
}

/** The memory store behind a promise, like a SQL or Redis store. */
class AsyncStore implements RateLimitStore {
  readonly inner = new MemoryRateLimitStore();
  calls = 0;
  consume(
    key: string,
    algorithm: RateLimitAlgorithm,
    cost: number,
    nowMs: number,
  ): Promise<RateLimitDecision> {
    this.calls++;
    return Promise.resolve().then(() => this.inner.consume(key, algorithm, cost, nowMs));
  }
  async reset(key: string): Promise<void> {
    this.inner.reset(key);
  }
}

describe('RateLimitPolicy', () => {
  it('fixed window 5/min: 5 in the last second, the 6th rejected with the exact retryAfterMs, 5 more next minute', async () => {
    const clock = new FakeClock();
    clock.tick(59_000);
    const policy = rateLimit({
      algorithm: { type: 'fixed_window', limit: 5, windowMs: MINUTE },
      clock,
      name: 'checkout',
    });
    let calls = 0;
    const fn = (): string => {
      calls++;
      return 'ok';
    };
    for (let i = 0; i < 5; i++) {
      await expect(policy.execute(fn)).resolves.toBe('ok');
      clock.tick(150);
    }
    expect(calls).toBe(5);
    expect(clock.now() % MINUTE).toBe(59_750);

    const error = await rejection(policy.execute(fn));
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('rate_limited');
    expect(error.status).toBe(429);
    expect(error.kind).toBe('transient');
    expect(error.retryAfterMs).toBe(250);
    expect(error.source).toBe('checkout');
    expect(error.message).toBe('checkout: rate limit of 5 reached; try again in 250 ms.');
    expect(error.details).toEqual({ limit: 5, remaining: 0, reset_ms: 250 });
    expect(calls).toBe(5);

    clock.tick(250);
    for (let i = 0; i < 5; i++) await expect(policy.execute(fn)).resolves.toBe('ok');
    expect(calls).toBe(10);
    expect((await rejection(policy.execute(fn))).retryAfterMs).toBe(MINUTE);
  });

  it('sliding window: denied calls never call fn and do not count', async () => {
    const clock = new FakeClock();
    const policy = rateLimit({ algorithm: { type: 'sliding_window', limit: 2, windowMs: 1000 }, clock });
    let calls = 0;
    const fn = (): number => ++calls;
    await policy.execute(fn);
    clock.tick(300);
    await policy.execute(fn);
    // Hammer it while full: if denials counted, the window would stay full past 1000 ms.
    for (let t = 0; t < 10; t++) {
      clock.tick(50);
      const error = await rejection(policy.execute(fn));
      expect(error.code).toBe('rate_limited');
      expect(error.retryAfterMs).toBe(1000 - 300 - 50 * (t + 1));
    }
    expect(calls).toBe(2);
    clock.tick(200);
    expect(clock.now() - Date.UTC(2026, 0, 1)).toBe(1000);
    await expect(policy.execute(fn)).resolves.toBe(3);
  });

  it('token bucket with cost > 1 per call', async () => {
    const clock = new FakeClock();
    const policy = rateLimit({
      algorithm: { type: 'token_bucket', capacity: 5, refillTokens: 1, refillIntervalMs: 200 },
      cost: 2,
      clock,
    });
    await policy.execute(() => 1);
    await policy.execute(() => 2);
    const error = await rejection(policy.execute(() => 3));
    // 1 token left, 1 more in 200 ms.
    expect(error.retryAfterMs).toBe(200);
    expect(error.details).toEqual({ limit: 5, remaining: 1, reset_ms: 800 });
    clock.tick(200);
    await expect(policy.execute(() => 4)).resolves.toBe(4);
  });

  it('uses a key function per call and defaults the key to the name', async () => {
    const clock = new FakeClock();
    let tenant = 'acme';
    const store = new MemoryRateLimitStore();
    const perTenant = rateLimit({
      algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 },
      key: () => `tenant:${tenant}`,
      store,
      clock,
    });
    await perTenant.execute(() => 'a');
    expect((await rejection(perTenant.execute(() => 'a'))).code).toBe('rate_limited');
    tenant = 'globex';
    await expect(perTenant.execute(() => 'g')).resolves.toBe('g');

    const named = rateLimit({
      algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 },
      store,
      clock,
      name: 'webhooks',
    });
    await named.execute(() => 'w');
    expect((await named.consume('webhooks')).allowed).toBe(false);
    expect((await named.consume('tenant:acme')).allowed).toBe(false);
  });

  it('consume returns the decision without throwing; acquire throws rate_limited; reset forgets', async () => {
    const clock = new FakeClock();
    const policy = rateLimit({
      algorithm: { type: 'sliding_window', limit: 2, windowMs: 1000 },
      clock,
      name: 'ai',
    });
    await expect(policy.consume('model:gpt')).resolves.toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetMs: 1000,
      retryAfterMs: 0,
    });
    clock.tick(100);
    await expect(policy.acquire('model:gpt')).resolves.toMatchObject({ allowed: true, remaining: 0 });
    await expect(policy.consume('model:gpt')).resolves.toEqual({
      allowed: false,
      limit: 2,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: 900,
    });
    const error = await rejection(policy.acquire('model:gpt'));
    expect(error.code).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(900);
    await policy.reset('model:gpt');
    await expect(policy.consume('model:gpt', 2)).resolves.toMatchObject({ allowed: true, remaining: 0 });
    const bad = await rejection(policy.consume('model:gpt', 3));
    expect(bad).toBeInstanceOf(RangeError);
  });

  it('works over an asynchronous store', async () => {
    const clock = new FakeClock();
    const store = new AsyncStore();
    const policy = new RateLimitPolicy({
      algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 },
      store,
      clock,
    });
    let calls = 0;
    await expect(policy.execute(() => ++calls)).resolves.toBe(1);
    const error = await rejection(policy.execute(() => ++calls));
    expect(error.code).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(1000);
    expect(calls).toBe(1);
    expect(store.calls).toBe(2);
    await policy.reset('rate-limit');
    await expect(policy.consume('rate-limit')).resolves.toMatchObject({ allowed: true });
  });

  it('a failing store rejects the call with its error and never calls fn', async () => {
    const failing: RateLimitStore = {
      consume: () => Promise.reject(new Error('redis down')),
      reset: () => undefined,
    };
    const policy = rateLimit({
      algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 },
      store: failing,
      clock: new FakeClock(),
    });
    let calls = 0;
    await expect(policy.execute(() => ++calls)).rejects.toThrow('redis down');
    expect(calls).toBe(0);
  });

  it('emits decisions and rejections only to listeners', async () => {
    const clock = new FakeClock();
    const policy = rateLimit({
      algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 },
      clock,
      name: 'gifts',
      key: 'k',
    });
    const decisions: unknown[] = [];
    const rejected: unknown[] = [];
    const sub = policy.onDecision((e) => decisions.push(e));
    policy.onRejected((e) => rejected.push(e));
    await policy.execute(() => 1);
    await rejection(policy.execute(() => 2));
    const deny = { allowed: false, limit: 1, remaining: 0, resetMs: 1000, retryAfterMs: 1000 };
    expect(decisions).toEqual([
      {
        name: 'gifts',
        key: 'k',
        cost: 1,
        decision: { allowed: true, limit: 1, remaining: 0, resetMs: 1000, retryAfterMs: 0 },
      },
      { name: 'gifts', key: 'k', cost: 1, decision: deny },
    ]);
    expect(rejected).toEqual([{ name: 'gifts', key: 'k', cost: 1, decision: deny }]);
    sub.dispose();
    await rejection(policy.execute(() => 3));
    expect(decisions).toHaveLength(2);
    expect(rejected).toHaveLength(2);
  });

  it('composes in a pipeline and its error serializes with the x-ratelimit details', async () => {
    const clock = new FakeClock();
    const limiter = rateLimit({ algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 }, clock });
    const composed = pipeline(limiter);
    await expect(composed.execute(() => 'ok')).resolves.toBe('ok');
    const error = await rejection(composed.execute(() => 'no'));
    expect(toProblem(error)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retry_after_ms: 1000,
      limit: 1,
      remaining: 0,
      reset_ms: 1000,
    });
    expect(
      rateLimitedError({ allowed: false, limit: 3, remaining: 0, resetMs: 5, retryAfterMs: 5 }, 'x').details,
    ).toEqual({ limit: 3, remaining: 0, reset_ms: 5 });
  });

  it('validates options at construction and names the option', () => {
    const fixed = { type: 'fixed_window', limit: 5, windowMs: 1000 } as const;
    expect(() => rateLimit({ algorithm: { ...fixed, limit: 0 } })).toThrow(RangeError);
    expect(() => rateLimit({ algorithm: { ...fixed, limit: 0 } })).toThrow(/limit/);
    expect(() => rateLimit({ algorithm: { ...fixed, windowMs: -1 } })).toThrow(/windowMs/);
    expect(() => rateLimit({ algorithm: { type: 'nope' } as never })).toThrow(/algorithm\.type/);
    expect(() => rateLimit({ algorithm: fixed, cost: 6 })).toThrow(/cost/);
    expect(() => rateLimit({ algorithm: fixed, key: '' })).toThrow(/key/);
    expect(() => rateLimit({ algorithm: fixed, store: {} as never })).toThrow(/store/);
    expect(() =>
      rateLimit({ algorithm: { type: 'token_bucket', capacity: 1, refillIntervalMs: 0 } }),
    ).toThrow(/refillIntervalMs/);
  });
});
