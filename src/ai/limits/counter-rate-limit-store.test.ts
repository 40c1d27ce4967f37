import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import {
  FixedWindow,
  SlidingWindow,
  TokenBucket,
  rateLimit,
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitStore,
} from '../../policy/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { type Store } from '../../store/index.js';
import { counterRateLimitStore } from './counter-rate-limit-store.js';

const MINUTE_MS = 60_000;

describe('counterRateLimitStore over the SQLite store', () => {
  let clock: FakeClock;
  let store: Store;
  let limits: RateLimitStore;
  /** `clock.now()` at the start: 2026-01-01T00:00Z, a multiple of every window used here. */
  let t0: number;

  beforeEach(async () => {
    clock = new FakeClock();
    t0 = clock.now();
    store = await openSqliteStore({ path: ':memory:', clock });
    limits = counterRateLimitStore(store.counters);
  });

  afterEach(async () => {
    await store.close();
  });

  async function consumeMany(
    key: string,
    algorithm: RateLimitAlgorithm,
    n: number,
  ): Promise<RateLimitDecision[]> {
    return Promise.all(Array.from({ length: n }, () => limits.consume(key, algorithm, 1, clock.now())));
  }

  it('10 per 10 minutes, 10 requests at minute 9 and 10 at minute 11: fixed lets all 20 pass', async () => {
    const fixed = new FixedWindow({ limit: 10, windowMs: 10 * MINUTE_MS });
    clock.tick(9 * MINUTE_MS);
    const first = await consumeMany('ai:fixed', fixed, 10);
    expect(first.every((d) => d.allowed)).toBe(true);
    expect(first.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    clock.tick(2 * MINUTE_MS);
    const second = await consumeMany('ai:fixed', fixed, 10);
    expect(second.every((d) => d.allowed)).toBe(true);
    expect(await store.counters.get('ai:fixed')).toEqual({ windowStartMs: t0 + 10 * MINUTE_MS, count: 10 });
  });

  it('the same with sliding refuses the second 10 until minute 19', async () => {
    const sliding = new SlidingWindow({ limit: 10, windowMs: 10 * MINUTE_MS });
    clock.tick(9 * MINUTE_MS);
    const first = await consumeMany('ai:sliding', sliding, 10);
    expect(first.every((d) => d.allowed)).toBe(true);
    clock.tick(2 * MINUTE_MS);
    const second = await consumeMany('ai:sliding', sliding, 10);
    expect(second).toEqual(
      Array.from({ length: 10 }, () => ({
        allowed: false,
        limit: 10,
        remaining: 0,
        resetMs: 8 * MINUTE_MS,
        retryAfterMs: 8 * MINUTE_MS,
      })),
    );
    // The refused requests counted nothing: at minute 19 the window is empty again.
    expect(await store.counters.get('ai:sliding')).toEqual({
      timestamps: Array.from({ length: 10 }, () => t0 + 9 * MINUTE_MS),
    });
    clock.tick(8 * MINUTE_MS);
    expect(await store.counters.get('ai:sliding')).toBeUndefined();
    expect((await consumeMany('ai:sliding', sliding, 10)).every((d) => d.allowed)).toBe(true);
  });

  it.each([
    ['fixed window', new FixedWindow({ limit: 20, windowMs: MINUTE_MS })],
    ['sliding window', new SlidingWindow({ limit: 20, windowMs: MINUTE_MS })],
    ['token bucket', new TokenBucket({ capacity: 20, refillIntervalMs: MINUTE_MS })],
  ])('200 concurrent consumes of a limit of 20 (%s): exactly 20 allowed', async (_, algorithm) => {
    const decisions = await consumeMany('ai:burst', algorithm as RateLimitAlgorithm, 200);
    const allowed = decisions.filter((d) => d.allowed);
    expect(allowed).toHaveLength(20);
    expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i),
    );
    expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.retryAfterMs > 0)).toBe(
      true,
    );
  });

  it('an allowed request stores the state until resetMs; a refused one writes nothing and keeps the expiry', async () => {
    const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
    clock.tick(200);
    expect(await limits.consume('k', fixed, 1, clock.now())).toEqual({
      allowed: true,
      limit: 1,
      remaining: 0,
      resetMs: 800,
      retryAfterMs: 0,
    });
    clock.tick(500);
    expect(await limits.consume('k', fixed, 1, clock.now())).toMatchObject({
      allowed: false,
      retryAfterMs: 300,
    });
    expect(await store.counters.get('k')).toEqual({ windowStartMs: t0, count: 1 });
    clock.tick(299);
    expect(await store.counters.get('k')).toEqual({ windowStartMs: t0, count: 1 });
    clock.tick(1);
    expect(await store.counters.get('k')).toBeUndefined();
    expect(await store.counters.prune()).toBe(1);
  });

  it('reset forgets the key; a bad cost rejects with a RangeError and counts nothing', async () => {
    const fixed = new FixedWindow({ limit: 2, windowMs: MINUTE_MS });
    await consumeMany('k', fixed, 2);
    expect((await limits.consume('k', fixed, 1, clock.now())).allowed).toBe(false);
    await limits.reset('k');
    expect(await store.counters.get('k')).toBeUndefined();
    await expect(limits.consume('k', fixed, 3, clock.now())).rejects.toBeInstanceOf(RangeError);
    await expect(limits.consume('k', fixed, 0.5, clock.now())).rejects.toBeInstanceOf(RangeError);
    expect(await store.counters.get('k')).toBeUndefined();
    expect(await limits.consume('k', fixed, 2, clock.now())).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('two stores on one file (two gateways) draw on one limit through their policies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-ai-limits-'));
    const path = join(dir, 'store.db');
    const stores = [
      await openSqliteStore({ path, clock, watchMs: 0 }),
      await openSqliteStore({ path, clock, watchMs: 0 }),
    ];
    try {
      const options = { algorithm: { type: 'fixed_window', limit: 3, windowMs: MINUTE_MS } as const, clock };
      const [a, b] = stores.map((s) =>
        rateLimit({ ...options, name: 'ai:model:gpt', store: counterRateLimitStore(s.counters) }),
      );
      expect(await a!.execute(async () => 'a1')).toBe('a1');
      expect(await b!.execute(async () => 'b1')).toBe('b1');
      expect(await a!.execute(async () => 'a2')).toBe('a2');
      const refused = await b!.execute(async () => 'b2').catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(BreakwaterError);
      expect(refused).toMatchObject({ code: 'rate_limited', retryAfterMs: MINUTE_MS });
      expect(await stores[0]!.counters.get('ai:model:gpt')).toEqual({ windowStartMs: t0, count: 3 });
    } finally {
      for (const s of stores) await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
