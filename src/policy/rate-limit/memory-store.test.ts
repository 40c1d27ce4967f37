import { describe, expect, it } from 'vitest';
import { FixedWindow, SlidingWindow, TokenBucket } from './algorithms.js';
import { MemoryRateLimitStore } from './memory-store.js';

const T0 = Date.UTC(2026, 0, 1);

describe('MemoryRateLimitStore', () => {
  it('answers synchronously and counts only allowed requests', () => {
    const store = new MemoryRateLimitStore();
    const bucket = new TokenBucket({ capacity: 2, refillTokens: 1, refillIntervalMs: 1000 });
    const first = store.consume('k', bucket, 1, T0);
    expect(first).not.toBeInstanceOf(Promise);
    expect(first).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.consume('k', bucket, 1, T0)).toMatchObject({ allowed: true, remaining: 0 });
    // Denied ten times: none of them takes a token, so one token is back after exactly 1000 ms.
    for (let i = 0; i < 10; i++) {
      expect(store.consume('k', bucket, 1, T0 + i * 50)).toMatchObject({
        allowed: false,
        retryAfterMs: 1000 - i * 50,
      });
    }
    expect(store.consume('k', bucket, 1, T0 + 1000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('keeps keys apart and forgets a key on reset', () => {
    const store = new MemoryRateLimitStore();
    const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
    expect(store.consume('a', fixed, 1, T0).allowed).toBe(true);
    expect(store.consume('b', fixed, 1, T0).allowed).toBe(true);
    expect(store.consume('a', fixed, 1, T0).allowed).toBe(false);
    store.reset('a');
    expect(store.consume('a', fixed, 1, T0).allowed).toBe(true);
    expect(store.consume('b', fixed, 1, T0).allowed).toBe(false);
  });

  it('treats an expired entry as empty even before it is swept', () => {
    const store = new MemoryRateLimitStore({ sweepEvery: 1_000_000 });
    const sliding = new SlidingWindow({ limit: 1, windowMs: 1000 });
    expect(store.consume('k', sliding, 1, T0).allowed).toBe(true);
    expect(store.consume('k', sliding, 1, T0 + 999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(store.consume('k', sliding, 1, T0 + 1000)).toMatchObject({ allowed: true, resetMs: 1000 });
    expect(store.size).toBe(1);
  });

  it('sweep removes exactly the entries whose state has fully reset', () => {
    const store = new MemoryRateLimitStore({ sweepEvery: 1_000_000 });
    const fixed = new FixedWindow({ limit: 5, windowMs: 1000 });
    const bucket = new TokenBucket({ capacity: 4, refillTokens: 1, refillIntervalMs: 1000 });
    store.consume('window', fixed, 1, T0 + 400); // resets at T0 + 1000
    store.consume('bucket', bucket, 2, T0); // full again at T0 + 2000
    expect(store.sweep(T0 + 999)).toBe(0);
    expect(store.sweep(T0 + 1000)).toBe(1);
    expect(store.size).toBe(1);
    expect(store.sweep(T0 + 1999)).toBe(0);
    expect(store.sweep(T0 + 2000)).toBe(1);
    expect(store.size).toBe(0);
  });

  it('a stream of distinct keys does not grow memory without bound', () => {
    const store = new MemoryRateLimitStore({ sweepEvery: 4, sweepBatch: 8 });
    const fixed = new FixedWindow({ limit: 10, windowMs: 1000 });
    let maxSize = 0;
    // 20 000 one-off keys over 20 s: about 1000 are live at any time.
    for (let i = 0; i < 20_000; i++) {
      store.consume(`client-${i}`, fixed, 1, T0 + i);
      maxSize = Math.max(maxSize, store.size);
    }
    expect(maxSize).toBeLessThan(2100);
    expect(store.size).toBeLessThan(2100);
  });

  it('validates its options', () => {
    expect(() => new MemoryRateLimitStore({ sweepEvery: 0 })).toThrow(/sweepEvery/);
    expect(() => new MemoryRateLimitStore({ sweepBatch: 1.5 })).toThrow(/sweepBatch/);
  });
});
