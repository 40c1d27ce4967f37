import { describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';
import {
  MemoryRateLimitStore,
  TokenBucket,
  pipeline,
  rateLimit,
  retry,
  toProblem,
  type Clock,
  type RateLimitDecision,
} from '../../src/entries/index.js';

/** A clock that can be set anywhere, backwards included (NTP step, another instance's skewed clock). */
class ManualClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  setTimeout(): unknown {
    throw new Error('not used');
  }
  clearTimeout(): void {}
}

const T0 = Date.UTC(2026, 0, 1); // a multiple of every window below

async function attempt(policy: ReturnType<typeof rateLimit>): Promise<string> {
  return policy.execute(() => 'ok').catch((e: BreakwaterError) => `${e.code}:${e.retryAfterMs}`);
}

describe('fixed window through the policy', () => {
  it('the boundary burst is exactly 2 × limit within 2 ms, and retry_after_ms counts to the boundary', async () => {
    const clock = new FakeClock(T0 + 59_999);
    const policy = rateLimit({ algorithm: { type: 'fixed_window', limit: 3, windowMs: 60_000 }, clock });
    const before = [
      await attempt(policy),
      await attempt(policy),
      await attempt(policy),
      await attempt(policy),
    ];
    expect(before).toEqual(['ok', 'ok', 'ok', 'rate_limited:1']);
    clock.tick(1);
    const after = [
      await attempt(policy),
      await attempt(policy),
      await attempt(policy),
      await attempt(policy),
    ];
    expect(after).toEqual(['ok', 'ok', 'ok', 'rate_limited:60000']);
  });
});

describe('sliding window through the policy', () => {
  it('admits again exactly when the oldest request leaves: not 1 ms before', async () => {
    const clock = new FakeClock(T0);
    const policy = rateLimit({ algorithm: { type: 'sliding_window', limit: 2, windowMs: 1000 }, clock });
    expect(await attempt(policy)).toBe('ok');
    clock.tick(300);
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('rate_limited:700');
    clock.tick(699);
    expect(await attempt(policy)).toBe('rate_limited:1');
    clock.tick(1);
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('rate_limited:300');
    clock.tick(300);
    expect(await attempt(policy)).toBe('ok');
  });
});

describe('token bucket', () => {
  it('fractional refill: 0.3 tokens per second means the next token after exactly 3334 ms', async () => {
    const clock = new FakeClock(T0);
    const policy = rateLimit({
      algorithm: { type: 'token_bucket', capacity: 1, refillTokens: 0.3, refillIntervalMs: 1000 },
      clock,
    });
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('rate_limited:3334');
    clock.tick(3333);
    expect(await attempt(policy)).toBe('rate_limited:1');
    clock.tick(1);
    expect(await attempt(policy)).toBe('ok');
  });

  it('cost > 1 (fractional) takes that many tokens; a cost above capacity is refused at construction', async () => {
    const clock = new FakeClock(T0);
    const policy = rateLimit({
      algorithm: { type: 'token_bucket', capacity: 5, refillTokens: 1, refillIntervalMs: 1000 },
      cost: 2.5,
      clock,
    });
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('rate_limited:2500');
    expect(() =>
      rateLimit({ algorithm: { type: 'token_bucket', capacity: 5, refillIntervalMs: 1000 }, cost: 5.5 }),
    ).toThrow(/cost/);
    expect(() =>
      rateLimit({ algorithm: { type: 'fixed_window', limit: 5, windowMs: 1000 }, cost: 1.5 }),
    ).toThrow(/cost/);
  });

  it('a clock that stepped back: retryAfterMs is when the request is really allowed', () => {
    const bucket = new TokenBucket({ capacity: 2, refillTokens: 1, refillIntervalMs: 1000 });
    const full = bucket.step(undefined, T0 + 10_000, 2);
    expect(full.decision.allowed).toBe(true);
    // The clock steps back 5 s (or a second instance's clock is 5 s behind).
    const denied = bucket.step(full.state, T0 + 5_000, 1).decision;
    expect(denied.allowed).toBe(false);
    // Honour the hint: it must be allowed then, and not before.
    const at = T0 + 5_000 + denied.retryAfterMs;
    expect(bucket.step(full.state, at - 1, 1).decision.allowed).toBe(false);
    expect(bucket.step(full.state, at, 1).decision.allowed).toBe(true);
    expect(denied.retryAfterMs).toBe(6_000);
  });

  it('a clock that stepped back does not let the memory store forget a live bucket (no over-admission)', async () => {
    const clock = new ManualClock(T0 + 10_000);
    const policy = rateLimit({
      algorithm: { type: 'token_bucket', capacity: 2, refillTokens: 1, refillIntervalMs: 1000 },
      clock,
    });
    expect(await attempt(policy)).toBe('ok'); // 1 token left as of 10 000
    clock.t = T0 + 5_000;
    expect(await attempt(policy)).toBe('ok'); // 0 left as of 10 000
    clock.t = T0 + 7_000;
    // Still before the bucket's last update (10 000): no token has been added since.
    expect(await attempt(policy)).toMatch(/^rate_limited:/);
  });
});

describe('fixed and sliding windows with a clock that steps back', () => {
  it('fixed window keeps counting in the later window and never admits more than limit in it', async () => {
    const clock = new ManualClock(T0 + 1000);
    const policy = rateLimit({ algorithm: { type: 'fixed_window', limit: 2, windowMs: 1000 }, clock });
    expect(await attempt(policy)).toBe('ok');
    expect(await attempt(policy)).toBe('ok');
    clock.t = T0 + 999; // back into the previous window
    expect(await attempt(policy)).toBe('rate_limited:1001');
    clock.t = T0 + 2000;
    expect(await attempt(policy)).toBe('ok');
  });

  it('sliding window counts future timestamps and its hint is exact', async () => {
    const clock = new ManualClock(T0 + 5000);
    const policy = rateLimit({ algorithm: { type: 'sliding_window', limit: 1, windowMs: 1000 }, clock });
    expect(await attempt(policy)).toBe('ok');
    clock.t = T0 + 4500;
    expect(await attempt(policy)).toBe('rate_limited:1500');
    clock.t = T0 + 6000;
    expect(await attempt(policy)).toBe('ok');
  });
});

describe('memory store with many keys', () => {
  it('memory stays bounded by the keys with live state, not every key ever seen', () => {
    const store = new MemoryRateLimitStore();
    const algorithm = new TokenBucket({ capacity: 1, refillIntervalMs: 1000 });
    let max = 0;
    let allowed = 0;
    // 200 000 distinct keys, one per ms: at most ~1000 have live state at any time.
    for (let i = 0; i < 200_000; i++) {
      const decision: RateLimitDecision = store.consume(`user-${i}`, algorithm, 1, T0 + i);
      if (decision.allowed) allowed++;
      if (store.size > max) max = store.size;
    }
    expect(allowed).toBe(200_000);
    expect(max).toBeLessThanOrEqual(3000);
    expect(store.sweep(T0 + 200_000 + 1000)).toBeGreaterThan(0);
    expect(store.size).toBe(0);
  });
});

describe('rate_limited is never retried and serializes with its hint', () => {
  it('retry outside a rate limiter gives up at once', async () => {
    const clock = new FakeClock(T0);
    const limiter = rateLimit({ algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 }, clock });
    const policy = pipeline(retry({ maxAttempts: 5, clock }), limiter);
    let calls = 0;
    await policy.execute(() => ++calls);
    const error = (await policy.execute(() => ++calls).catch((e: unknown) => e)) as BreakwaterError;
    expect(calls).toBe(1);
    expect(toProblem(error)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retry_after_ms: 1000,
      retryable: true,
    });
  });
});
