import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import {
  FixedWindow,
  SlidingWindow,
  TokenBucket,
  type RateLimitAlgorithm,
  type RateLimitDecision,
} from './algorithms.js';
import type { RateLimitStore } from './store.js';

/**
 * The RateLimitStore contract suite (docs/policies.md#rate-limiters; docs/architecture.md#contract-suites:
 * the same limiter tests pass on memory, SQLite, PostgreSQL and Redis): every rule of store.ts and of the
 * algorithms' contract as a store sees it, with exact values on a FakeClock.
 */

/** How the suite reaches one backend. */
export interface RateLimitStoreBackend {
  /** A store on fresh, empty storage (a store with its own clock reads `clock`); called once per test. */
  open(clock: FakeClock): RateLimitStore | Promise<RateLimitStore>;
  /** Another store on the storage the last `open` made: another instance (its own connection). */
  another?(clock: FakeClock): Promise<RateLimitStore>;
  /** Runs after each test: close stores, drop storage. */
  close?(): Promise<void>;
}

const MINUTE_MS = 60_000;

/** A tiny deterministic generator (LCG), so a failing sequence can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The algorithm's own `step`, threading the state as every store must (a denied step changes nothing). */
function reference(algorithm: RateLimitAlgorithm): (nowMs: number, cost: number) => RateLimitDecision {
  let state: unknown;
  return (nowMs, cost) => {
    const { state: next, decision } = algorithm.step(state, nowMs, cost);
    if (decision.allowed) state = next;
    return decision;
  };
}

export function rateLimitStoreContract(name: string, backend: RateLimitStoreBackend): void {
  describe(`RateLimitStore contract: ${name}`, () => {
    let clock: FakeClock;
    let store: RateLimitStore;
    /** 2026-01-01T00:00Z: a multiple of every window used here. */
    let t0: number;

    beforeEach(async () => {
      clock = new FakeClock();
      t0 = clock.now();
      store = await backend.open(clock);
    });

    afterEach(async () => {
      await backend.close?.();
    });

    /** One decision at `clock.now()` (or `nowMs`), as a promise whatever the store answers. */
    const consume = async (
      key: string,
      algorithm: RateLimitAlgorithm,
      cost = 1,
      nowMs = clock.now(),
      on: RateLimitStore = store,
    ): Promise<RateLimitDecision> => on.consume(key, algorithm, cost, nowMs);

    const at = (ms: number) => clock.tick(t0 + ms - clock.now());

    it('fixed window: exact decisions within a window, at its end and in the next', async () => {
      const fixed = new FixedWindow({ limit: 3, windowMs: 1000 });
      at(200);
      expect(await consume('k', fixed)).toEqual(decision(true, 3, 2, 800, 0));
      expect(await consume('k', fixed, 2)).toEqual(decision(true, 3, 0, 800, 0));
      expect(await consume('k', fixed)).toEqual(decision(false, 3, 0, 800, 800));
      at(999);
      expect(await consume('k', fixed)).toEqual(decision(false, 3, 0, 1, 1));
      at(1000);
      expect(await consume('k', fixed, 3)).toEqual(decision(true, 3, 0, 1000, 0));
    });

    it('sliding window: exact decisions, retry when enough of the oldest leave', async () => {
      const sliding = new SlidingWindow({ limit: 3, windowMs: 1000 });
      expect(await consume('k', sliding)).toEqual(decision(true, 3, 2, 1000, 0));
      at(100);
      expect(await consume('k', sliding, 2)).toEqual(decision(true, 3, 0, 1000, 0));
      at(500);
      expect(await consume('k', sliding)).toEqual(decision(false, 3, 0, 600, 500));
      expect(await consume('k', sliding, 3)).toEqual(decision(false, 3, 0, 600, 600));
      at(1000); // the request at 0 has left the window
      expect(await consume('k', sliding)).toEqual(decision(true, 3, 0, 1000, 0));
      expect(await consume('k', sliding)).toEqual(decision(false, 3, 0, 1000, 100));
    });

    it('token bucket: exact decisions; denied requests take no tokens', async () => {
      const bucket = new TokenBucket({ capacity: 2, refillTokens: 1, refillIntervalMs: 1000 });
      expect(await consume('k', bucket)).toEqual(decision(true, 2, 1, 1000, 0));
      expect(await consume('k', bucket)).toEqual(decision(true, 2, 0, 2000, 0));
      at(250);
      expect(await consume('k', bucket)).toEqual(decision(false, 2, 0, 1750, 750));
      at(500);
      for (let i = 0; i < 3; i++) {
        expect(await consume('k', bucket)).toEqual(decision(false, 2, 0, 1500, 500));
      }
      expect(await consume('k', bucket, 2)).toEqual(decision(false, 2, 0, 1500, 1500));
      at(1000);
      expect(await consume('k', bucket)).toEqual(decision(true, 2, 0, 2000, 0));
    });

    it('another instance whose clock is behind: the window and the bucket never move backwards', async () => {
      const fixed = new FixedWindow({ limit: 2, windowMs: 1000 });
      const bucket = new TokenBucket({ capacity: 2, refillTokens: 1, refillIntervalMs: 1000 });
      at(1000);
      expect(await consume('f', fixed)).toEqual(decision(true, 2, 1, 1000, 0));
      expect(await consume('f', fixed, 1, t0 + 990)).toEqual(decision(true, 2, 0, 1010, 0));
      expect(await consume('f', fixed, 1, t0 + 990)).toEqual(decision(false, 2, 0, 1010, 1010));
      expect(await consume('b', bucket)).toEqual(decision(true, 2, 1, 1000, 0));
      expect(await consume('b', bucket, 1, t0 + 900)).toEqual(decision(true, 2, 0, 2100, 0));
      expect(await consume('b', bucket, 1, t0 + 900)).toEqual(decision(false, 2, 0, 2100, 1100));
    });

    it('decides exactly as the algorithms step, over long irregular sequences', async () => {
      const algorithms: [string, RateLimitAlgorithm, number[]][] = [
        ['fixed', new FixedWindow({ limit: 7, windowMs: 1000 }), [1, 1, 2, 3]],
        ['sliding', new SlidingWindow({ limit: 5, windowMs: 1000 }), [1, 1, 2, 5]],
        ['bucket', new TokenBucket({ capacity: 3, refillTokens: 1, refillIntervalMs: 400 }), [1, 2, 3]],
        [
          'fractional',
          new TokenBucket({ capacity: 5, refillTokens: 1.5, refillIntervalMs: 700 }),
          [0.7, 1, 2.5, 0.1, 5],
        ],
      ];
      for (const [key, algorithm, costs] of algorithms) {
        const next = random(7);
        const expected = reference(algorithm);
        const got: RateLimitDecision[] = [];
        const want: RateLimitDecision[] = [];
        for (let i = 0; i < 150; i++) {
          clock.tick(Math.floor(next() * 300));
          const cost = costs[Math.floor(next() * costs.length)]!;
          want.push(expected(clock.now(), cost));
          got.push(await consume(key, algorithm, cost));
        }
        expect(got).toEqual(want);
        expect(got.filter((d) => d.allowed).length).toBeGreaterThan(20);
        expect(got.filter((d) => !d.allowed).length).toBeGreaterThan(20);
      }
    });

    it('10 per 10 minutes, 10 at minute 9 and 10 at minute 11: fixed lets all 20 pass', async () => {
      const fixed = new FixedWindow({ limit: 10, windowMs: 10 * MINUTE_MS });
      at(9 * MINUTE_MS);
      const first = await Promise.all(Array.from({ length: 10 }, () => consume('k', fixed)));
      expect(first.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(first.every((d) => d.allowed && d.resetMs === MINUTE_MS)).toBe(true);
      at(11 * MINUTE_MS);
      const second = await Promise.all(Array.from({ length: 10 }, () => consume('k', fixed)));
      expect(second.every((d) => d.allowed && d.resetMs === 9 * MINUTE_MS)).toBe(true);
    });

    it('the same with sliding refuses the second 10 until minute 19', async () => {
      const sliding = new SlidingWindow({ limit: 10, windowMs: 10 * MINUTE_MS });
      at(9 * MINUTE_MS);
      const first = await Promise.all(Array.from({ length: 10 }, () => consume('k', sliding)));
      expect(first.every((d) => d.allowed)).toBe(true);
      at(11 * MINUTE_MS);
      const second = await Promise.all(Array.from({ length: 10 }, () => consume('k', sliding)));
      expect(second).toEqual(
        Array.from({ length: 10 }, () => decision(false, 10, 0, 8 * MINUTE_MS, 8 * MINUTE_MS)),
      );
      at(19 * MINUTE_MS - 1);
      expect(await consume('k', sliding)).toEqual(decision(false, 10, 0, 1, 1));
      at(19 * MINUTE_MS);
      const third = await Promise.all(Array.from({ length: 10 }, () => consume('k', sliding)));
      expect(third.every((d) => d.allowed && d.resetMs === 10 * MINUTE_MS)).toBe(true);
    });

    it('200 concurrent requests on a limit of 20: exactly 20 allowed, for each algorithm', async () => {
      const algorithms: [string, RateLimitAlgorithm][] = [
        ['fixed', new FixedWindow({ limit: 20, windowMs: MINUTE_MS })],
        ['sliding', new SlidingWindow({ limit: 20, windowMs: MINUTE_MS })],
        ['bucket', new TokenBucket({ capacity: 20, refillTokens: 20, refillIntervalMs: 60 * MINUTE_MS })],
      ];
      for (const [key, algorithm] of algorithms) {
        const decisions = await Promise.all(Array.from({ length: 200 }, () => consume(key, algorithm)));
        const allowed = decisions.filter((d) => d.allowed);
        expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 20 }, (_, i) => i),
        );
        expect(decisions.filter((d) => !d.allowed && d.remaining === 0 && d.retryAfterMs > 0)).toHaveLength(
          180,
        );
      }
    });

    it('two instances sharing one limit: 100 concurrent requests on each, exactly 20 allowed', async (ctx) => {
      if (backend.another === undefined) ctx.skip();
      const other = await backend.another!(clock);
      const sliding = new SlidingWindow({ limit: 20, windowMs: MINUTE_MS });
      const decisions = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          consume('shared', sliding, 1, clock.now(), i % 2 ? other : store),
        ),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
      expect(await consume('shared', sliding, 1, clock.now(), other)).toEqual(
        decision(false, 20, 0, MINUTE_MS, MINUTE_MS),
      );
    });

    it('keys are independent, and reset forgets a key', async () => {
      const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
      expect((await consume('a', fixed)).allowed).toBe(true);
      expect((await consume('b', fixed)).allowed).toBe(true);
      expect((await consume('a', fixed)).allowed).toBe(false);
      await store.reset('a');
      expect(await consume('a', fixed)).toEqual(decision(true, 1, 0, 1000, 0));
      expect((await consume('b', fixed)).allowed).toBe(false);
      await store.reset('never-used');
    });

    it("a state of another algorithm's shape is treated as none", async () => {
      const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
      expect((await consume('k', fixed)).allowed).toBe(true);
      expect(await consume('k', new SlidingWindow({ limit: 1, windowMs: 1000 }))).toEqual(
        decision(true, 1, 0, 1000, 0),
      );
      expect(await consume('k', new TokenBucket({ capacity: 1, refillIntervalMs: 1000 }))).toEqual(
        decision(true, 1, 0, 1000, 0),
      );
      expect(await consume('k', fixed)).toEqual(decision(true, 1, 0, 1000, 0));
    });

    it('rejects an invalid cost with a RangeError and counts nothing', async () => {
      const fixed = new FixedWindow({ limit: 2, windowMs: 1000 });
      const bucket = new TokenBucket({ capacity: 2, refillIntervalMs: 1000 });
      await expect(consume('k', fixed, 0)).rejects.toThrow(RangeError);
      await expect(consume('k', fixed, 1.5)).rejects.toThrow(RangeError);
      await expect(consume('k', fixed, 3)).rejects.toThrow(RangeError);
      await expect(consume('b', bucket, 2.5)).rejects.toThrow(RangeError);
      expect(await consume('k', fixed, 2)).toEqual(decision(true, 2, 0, 1000, 0));
      expect(await consume('b', bucket, 0.5)).toEqual(decision(true, 2, 1, 250, 0));
    });
  });
}

function decision(
  allowed: boolean,
  limit: number,
  remaining: number,
  resetMs: number,
  retryAfterMs: number,
): RateLimitDecision {
  return { allowed, limit, remaining, resetMs, retryAfterMs };
}
