import { describe, expect, it } from 'vitest';
import {
  FixedWindow,
  SlidingWindow,
  TokenBucket,
  rateLimitAlgorithm,
  type RateLimitAlgorithm,
  type RateLimitDecision,
} from './algorithms.js';
import { optionsErrorOf } from '../../../test/support/options.js';

const MINUTE = 60_000;
/** 2026-01-01T00:00:00Z: a multiple of every window used here. */
const T0 = Date.UTC(2026, 0, 1);

/** Runs `algorithm` over a schedule of (offset ms, cost) keeping the state like a store would. */
function drive<S>(
  algorithm: RateLimitAlgorithm<S>,
  schedule: readonly (readonly [offsetMs: number, cost?: number])[],
): RateLimitDecision[] {
  let state: S | undefined;
  return schedule.map(([offset, cost = 1]) => {
    const { state: next, decision } = algorithm.step(state, T0 + offset, cost);
    if (decision.allowed) state = next;
    return decision;
  });
}

function allowed(remaining: number, resetMs: number, limit = 5): RateLimitDecision {
  return { allowed: true, limit, remaining, resetMs, retryAfterMs: 0 };
}

function denied(remaining: number, resetMs: number, retryAfterMs: number, limit = 5): RateLimitDecision {
  return { allowed: false, limit, remaining, resetMs, retryAfterMs };
}

describe('FixedWindow', () => {
  it('5 per minute: 5 in the last second of a window, the 6th waits for the boundary, 5 more right after', () => {
    const fixed = new FixedWindow({ limit: 5, windowMs: MINUTE });
    const decisions = drive(fixed, [
      [59_000],
      [59_200],
      [59_400],
      [59_600],
      [59_800],
      [59_900],
      [59_999],
      [60_000],
      [60_001],
      [60_002],
      [60_003],
      [60_004],
      [60_005],
    ]);
    expect(decisions).toEqual([
      allowed(4, 1000),
      allowed(3, 800),
      allowed(2, 600),
      allowed(1, 400),
      allowed(0, 200),
      denied(0, 100, 100),
      denied(0, 1, 1),
      // The inherent boundary burst: 10 allowed within 1.2 s.
      allowed(4, 60_000),
      allowed(3, 59_999),
      allowed(2, 59_998),
      allowed(1, 59_997),
      allowed(0, 59_996),
      denied(0, 59_995, 59_995),
    ]);
  });

  it('returns the input state unchanged when denied and keeps the state JSON-able', () => {
    const fixed = new FixedWindow({ limit: 2, windowMs: 1000 });
    const first = fixed.step(undefined, T0 + 10, 2);
    expect(first.state).toEqual({ windowStartMs: T0, count: 2 });
    const second = fixed.step(first.state, T0 + 20, 1);
    expect(second.decision.allowed).toBe(false);
    expect(second.state).toBe(first.state);
    expect(JSON.parse(JSON.stringify(first.state))).toEqual(first.state);
  });

  it('counts cost > 1 and denies a cost that does not fit what is left', () => {
    const fixed = new FixedWindow({ limit: 5, windowMs: 1000 });
    expect(
      drive(fixed, [
        [0, 3],
        [100, 3],
        [200, 2],
        [1000, 5],
      ]),
    ).toEqual([allowed(2, 1000), denied(2, 900, 900), allowed(0, 800), allowed(0, 1000)]);
  });

  it('treats a state of another shape as empty', () => {
    const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
    const foreign = { tokens: 0, updatedAtMs: T0 } as never;
    expect(fixed.step(foreign, T0, 1).decision).toEqual(allowed(0, 1000, 1));
  });
});

describe('SlidingWindow', () => {
  it('5 per minute: each decision exact, retryAfterMs counting down to when the oldest request leaves', () => {
    const sliding = new SlidingWindow({ limit: 5, windowMs: MINUTE });
    const decisions = drive(sliding, [
      [0],
      [10_000],
      [20_000],
      [30_000],
      [40_000],
      [50_000], // window holds 0, 10, 20, 30, 40 s: wait for 0 s to leave at 60 s
      [55_000],
      [59_999],
      [60_000], // 0 s has left
      [65_000], // 10 s leaves at 70 s
      [69_999],
      [70_000],
      [70_001], // 20 s leaves at 80 s
    ]);
    expect(decisions).toEqual([
      allowed(4, 60_000),
      allowed(3, 60_000),
      allowed(2, 60_000),
      allowed(1, 60_000),
      allowed(0, 60_000),
      denied(0, 50_000, 10_000),
      denied(0, 45_000, 5_000),
      denied(0, 40_001, 1),
      allowed(0, 60_000),
      denied(0, 55_000, 5_000),
      denied(0, 50_001, 1),
      allowed(0, 60_000),
      denied(0, 59_999, 9_999),
    ]);
  });

  it('has no boundary burst: 5 at the end of a minute leave no room at the start of the next', () => {
    const sliding = new SlidingWindow({ limit: 5, windowMs: MINUTE });
    const decisions = drive(sliding, [[59_000], [59_200], [59_400], [59_600], [59_800], [60_000], [60_001]]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
    expect(decisions[5]).toEqual(denied(0, 59_800, 59_000));
  });

  it('never allows more than limit in any trailing window over a long irregular schedule', () => {
    const limit = 5;
    const windowMs = 1000;
    const sliding = new SlidingWindow({ limit, windowMs });
    // A deterministic pseudo-random walk (LCG) with gaps of 0..399 ms.
    let seed = 42;
    let t = 0;
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      t += seed % 400;
      times.push(t);
    }
    let state = undefined as Parameters<SlidingWindow['step']>[0];
    const admitted: number[] = [];
    for (const at of times) {
      const { state: next, decision } = sliding.step(state, at, 1);
      // Reference: count admitted requests in (at - windowMs, at].
      const inWindow = admitted.filter((a) => a > at - windowMs).length;
      expect(decision.allowed).toBe(inWindow < limit);
      if (decision.allowed) {
        state = next;
        admitted.push(at);
      } else {
        // Exactly when the oldest request in the window leaves it.
        const oldest = admitted.filter((a) => a > at - windowMs)[0]!;
        expect(decision.retryAfterMs).toBe(oldest + windowMs - at);
      }
      expect(state!.timestamps.length).toBeLessThanOrEqual(limit);
    }
    // Every trailing window over the whole schedule holds at most `limit`.
    for (const end of admitted) {
      expect(admitted.filter((a) => a > end - windowMs && a <= end).length).toBeLessThanOrEqual(limit);
    }
    expect(admitted.length).toBeGreaterThan(100);
  });

  it('with cost > 1 waits until enough of the oldest requests leave', () => {
    const sliding = new SlidingWindow({ limit: 5, windowMs: MINUTE });
    expect(drive(sliding, [[0], [10_000], [20_000], [30_000, 3], [40_000, 2], [60_000, 3]])).toEqual([
      allowed(4, 60_000),
      allowed(3, 60_000),
      allowed(2, 60_000),
      denied(2, 50_000, 30_000), // 3 more need 1 to leave: the one at 0 s, at 60 s
      allowed(0, 60_000),
      denied(1, 40_000, 20_000), // at 60 s the window holds 10, 20, 40, 40: 3 more need 10 and 20 to leave
    ]);
  });

  it('updates its log in place: the state returned is the one given; a denial keeps every counted entry', () => {
    const sliding = new SlidingWindow({ limit: 3, windowMs: 1000 });
    const first = sliding.step(undefined, T0, 1);
    const second = sliding.step(first.state, T0 + 500, 1);
    expect(second.state).toBe(first.state);
    // T0 has left the window (T0 + 1000 − 1000 = T0: out); T0 + 1000 counts twice (cost 2).
    const third = sliding.step(second.state, T0 + 1000, 2);
    expect(third.state).toBe(first.state);
    expect(third.state).toEqual({ timestamps: [T0 + 500, T0 + 1000, T0 + 1000] });
    const refused = sliding.step(third.state, T0 + 1001, 1);
    expect(refused.decision).toEqual(denied(0, 999, 499, 3));
    expect(refused.state).toEqual({ timestamps: [T0 + 500, T0 + 1000, T0 + 1000] });
    // An earlier time than the last counted one (a clock that stepped back) still lands in order.
    const back = sliding.step({ timestamps: [T0 + 10, T0 + 30] }, T0 + 20, 1);
    expect(back.state).toEqual({ timestamps: [T0 + 10, T0 + 20, T0 + 30] });
  });

  it('keeps at most limit timestamps in its state, and trims a log left by a higher limit', () => {
    const sliding = new SlidingWindow({ limit: 2, windowMs: 1000 });
    const old = { timestamps: [T0, T0 + 1, T0 + 2, T0 + 3] };
    const { decision } = sliding.step(old, T0 + 10, 1);
    expect(decision).toEqual(denied(0, 993, 992, 2));
    const later = sliding.step(old, T0 + 1002, 1);
    expect(later.decision).toEqual(allowed(0, 1000, 2));
    expect(later.state).toEqual({ timestamps: [T0 + 3, T0 + 1002] });
  });
});

describe('TokenBucket', () => {
  it('starts full, refills continuously with exact fractions and never above capacity', () => {
    const bucket = new TokenBucket({ capacity: 10, refillTokens: 1, refillIntervalMs: 1000 });
    const decisions = drive(bucket, [
      [0, 4],
      [0, 6],
      [500], // 0.5 tokens
      [1000], // 1 token
      [1250, 2], // 0.25 tokens
      [3000, 2], // 2 tokens
      [3_600_000, 10], // an hour later: full (10), not 3597
      [3_600_000],
    ]);
    expect(decisions).toEqual([
      allowed(6, 4000, 10),
      allowed(0, 10_000, 10),
      denied(0, 9500, 500, 10),
      allowed(0, 10_000, 10),
      denied(0, 9750, 1750, 10),
      allowed(0, 10_000, 10),
      allowed(0, 10_000, 10),
      denied(0, 10_000, 1000, 10),
    ]);
  });

  it('rounds a fractional wait up to whole ms and allows exactly then', () => {
    const bucket = new TokenBucket({ capacity: 10, refillTokens: 3, refillIntervalMs: 1000 });
    const empty = bucket.step(undefined, T0, 10).state;
    expect(empty).toEqual({ tokens: 0, updatedAtMs: T0 });
    // 100 ms → 0.3 tokens; 0.7 more take 233.33 ms → 234.
    const at100 = bucket.step(empty, T0 + 100, 1);
    expect(at100.decision).toEqual(denied(0, 3234, 234, 10));
    expect(at100.state).toBe(empty);
    expect(bucket.step(empty, T0 + 333, 1).decision).toEqual(denied(0, 3001, 1, 10));
    const at334 = bucket.step(empty, T0 + 334, 1);
    expect(at334.decision).toEqual(allowed(0, 3333, 10));
    expect(at334.state.tokens).toBeCloseTo(0.002, 12);
  });

  it('handles float noise so a retry at exactly retryAfterMs is allowed', () => {
    const bucket = new TokenBucket({ capacity: 1, refillTokens: 0.1, refillIntervalMs: 100 });
    let state = bucket.step(undefined, T0, 1).state;
    for (let i = 0; i < 50; i++) {
      const now = T0 + (i + 1) * 1000;
      const early = bucket.step(state, now - 1, 1);
      expect(early.decision.allowed).toBe(false);
      expect(early.decision.retryAfterMs).toBe(1);
      const onTime = bucket.step(state, now, 1);
      expect(onTime.decision.allowed).toBe(true);
      state = onTime.state;
    }
  });

  it('defaults refillTokens to capacity and reports whole tokens as remaining', () => {
    const bucket = new TokenBucket({ capacity: 4, refillIntervalMs: 1000 });
    expect(bucket.config).toEqual({
      type: 'token_bucket',
      capacity: 4,
      refillTokens: 4,
      refillIntervalMs: 1000,
    });
    expect(
      drive(bucket, [
        [0, 2.5],
        [0, 1],
        [125, 0.5],
      ]),
    ).toEqual([allowed(1, 625, 4), allowed(0, 875, 4), allowed(0, 875, 4)]);
  });

  it('does not refill when another clock is behind the stored update', () => {
    const bucket = new TokenBucket({ capacity: 2, refillTokens: 1, refillIntervalMs: 1000 });
    const state = { tokens: 1, updatedAtMs: T0 + 5000 };
    const { state: next, decision } = bucket.step(state, T0 + 4000, 1);
    // The caller's clock is 1000 ms behind the bucket's: the reset is 2000 ms of refill after that lag.
    expect(decision).toEqual(allowed(0, 3000, 2));
    expect(next).toEqual({ tokens: 0, updatedAtMs: T0 + 5000 });
  });
});

describe('rateLimitAlgorithm and validation', () => {
  it('builds each algorithm from its plain config', () => {
    expect(rateLimitAlgorithm({ type: 'fixed_window', limit: 5, windowMs: 1000 })).toBeInstanceOf(
      FixedWindow,
    );
    expect(rateLimitAlgorithm({ type: 'sliding_window', limit: 5, windowMs: 1000 })).toBeInstanceOf(
      SlidingWindow,
    );
    expect(rateLimitAlgorithm({ type: 'token_bucket', capacity: 5, refillIntervalMs: 1000 })).toBeInstanceOf(
      TokenBucket,
    );
  });

  it('names the bad option', () => {
    expect(() => rateLimitAlgorithm({ type: 'leaky' } as never)).toThrow(/algorithm\.type/);
    expect(() => new FixedWindow({ limit: 0, windowMs: 1000 })).toThrow(RangeError);
    expect(() => new FixedWindow({ limit: 0, windowMs: 1000 })).toThrow(/limit/);
    expect(() => new SlidingWindow({ limit: 2.5, windowMs: 1000 })).toThrow(/limit/);
    expect(() => new SlidingWindow({ limit: 2, windowMs: 0 })).toThrow(/windowMs/);
    expect(() => new TokenBucket({ capacity: -1, refillIntervalMs: 1000 })).toThrow(/capacity/);
    expect(() => new TokenBucket({ capacity: 1, refillTokens: 0, refillIntervalMs: 1000 })).toThrow(
      /refillTokens/,
    );
    expect(() => new TokenBucket({ capacity: 1, refillIntervalMs: Infinity })).toThrow(/refillIntervalMs/);
  });

  it('reports every bad option at once, naming the algorithm', () => {
    const fixed = optionsErrorOf(() => new FixedWindow({ limit: 0, windowMs: 2.5 }));
    expect([fixed.code, fixed.owner, fixed.problems]).toEqual([
      'invalid_options',
      'FixedWindow',
      [
        { option: 'limit', rule: 'an integer >= 1', value: 0 },
        { option: 'windowMs', rule: 'an integer >= 1', value: 2.5 },
      ],
    ]);
    expect(fixed.message).toBe(
      'FixedWindow: limit must be an integer >= 1, got 0; windowMs must be an integer >= 1, got 2.5',
    );
    expect(optionsErrorOf(() => new SlidingWindow({ limit: '5' as never, windowMs: -1 })).message).toBe(
      "SlidingWindow: limit must be an integer >= 1, got '5'; windowMs must be an integer >= 1, got -1",
    );
    const bucket = optionsErrorOf(
      () => new TokenBucket({ capacity: 0, refillTokens: -1, refillIntervalMs: Infinity }),
    );
    expect([bucket.owner, bucket.problems.map((p) => p.option)]).toEqual([
      'TokenBucket',
      ['capacity', 'refillTokens', 'refillIntervalMs'],
    ]);
    expect(bucket.message).toBe(
      'TokenBucket: capacity must be a finite number > 0, got 0; refillTokens must be a finite number > 0, ' +
        'got -1; refillIntervalMs must be a finite number > 0, got Infinity',
    );
    expect(new TokenBucket({ capacity: 3, refillIntervalMs: 1000 }).refillTokens).toBe(3);
  });

  it('rejects a cost that could never pass or is not a count', () => {
    const fixed = new FixedWindow({ limit: 5, windowMs: 1000 });
    expect(() => fixed.step(undefined, T0, 6)).toThrow(/cost must be an integer from 1 to limit \(5\)/);
    expect(() => fixed.step(undefined, T0, 0)).toThrow(RangeError);
    expect(() => new SlidingWindow({ limit: 5, windowMs: 1000 }).step(undefined, T0, 1.5)).toThrow(/cost/);
    const bucket = new TokenBucket({ capacity: 2, refillIntervalMs: 1000 });
    expect(() => bucket.step(undefined, T0, 2.5)).toThrow(/cost must be a number > 0 and <= capacity/);
    expect(() => bucket.step(undefined, T0, Number.NaN)).toThrow(/cost/);
  });
});
