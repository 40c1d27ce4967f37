import { describe, expect, it } from 'vitest';
import {
  constantBackoff,
  decorrelatedJitterBackoff,
  exponentialBackoff,
  linearBackoff,
  type Backoff,
  type RandomSource,
} from './backoff.js';

/** Returns the given numbers in turn, then repeats the last one. */
function fixed(...values: number[]): RandomSource {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
}

/** The first `n` delays, passing each one back as `previousMs` the way the retry policy does. */
function delays(backoff: Backoff, n: number): number[] {
  const out: number[] = [];
  let previous = 0;
  for (let retry = 1; retry <= n; retry++) {
    previous = backoff.next(retry, previous);
    out.push(previous);
  }
  return out;
}

describe('constantBackoff', () => {
  it('waits the same delay every time', () => {
    expect(delays(constantBackoff(250), 4)).toEqual([250, 250, 250, 250]);
    expect(delays(constantBackoff(0), 2)).toEqual([0, 0]);
  });

  it('names the option when it is invalid', () => {
    expect(() => constantBackoff(-1)).toThrow(RangeError);
    expect(() => constantBackoff(Number.NaN)).toThrow(/delayMs/);
  });
});

describe('linearBackoff', () => {
  it('grows by baseMs by default and by stepMs when given, capped by maxMs', () => {
    expect(delays(linearBackoff({ baseMs: 100 }), 4)).toEqual([100, 200, 300, 400]);
    expect(delays(linearBackoff({ baseMs: 100, stepMs: 50, maxMs: 180 }), 4)).toEqual([100, 150, 180, 180]);
    expect(delays(linearBackoff(), 3)).toEqual([100, 200, 300]);
  });

  it('names the option when it is invalid', () => {
    expect(() => linearBackoff({ stepMs: -5 })).toThrow(/stepMs/);
    expect(() => linearBackoff({ maxMs: Infinity })).toThrow(/maxMs/);
  });
});

describe('exponentialBackoff', () => {
  it('doubles from baseMs up to maxMs without jitter', () => {
    const backoff = exponentialBackoff({ baseMs: 100, maxMs: 1000, jitter: 'none' });
    expect(delays(backoff, 6)).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('uses full jitter by default: random(0, d)', () => {
    const backoff = exponentialBackoff({ baseMs: 100, maxMs: 1000, random: fixed(0.5) });
    expect(delays(backoff, 6)).toEqual([50, 100, 200, 400, 500, 500]);
    const varied = exponentialBackoff({ baseMs: 100, random: fixed(0, 0.999, 0.25) });
    expect(delays(varied, 3)).toEqual([0, 200, 100]);
  });

  it('equal jitter stays in [d/2, d)', () => {
    const backoff = exponentialBackoff({ baseMs: 100, maxMs: 1000, jitter: 'equal', random: fixed(0.5) });
    expect(delays(backoff, 5)).toEqual([75, 150, 300, 600, 750]);
    const low = exponentialBackoff({ baseMs: 100, jitter: 'equal', random: fixed(0) });
    expect(delays(low, 3)).toEqual([50, 100, 200]);
  });

  it('honours factor and never overflows to NaN or Infinity', () => {
    const backoff = exponentialBackoff({ baseMs: 10, factor: 3, maxMs: 5000, jitter: 'none' });
    expect(delays(backoff, 4)).toEqual([10, 30, 90, 270]);
    expect(backoff.next(5000, 0)).toBe(5000);
  });

  it('defaults to 200 ms × 2 up to 30 s', () => {
    const backoff = exponentialBackoff({ jitter: 'none' });
    expect(delays(backoff, 3)).toEqual([200, 400, 800]);
    expect(backoff.next(20, 0)).toBe(30_000);
  });

  it('is stateless: concurrent executions sharing it get the same schedule', () => {
    const backoff = exponentialBackoff({ baseMs: 100, jitter: 'none' });
    expect(backoff.next(3, 0)).toBe(400);
    expect(backoff.next(1, 0)).toBe(100);
    expect(backoff.next(3, 0)).toBe(400);
  });

  it('names the option when it is invalid', () => {
    expect(() => exponentialBackoff({ baseMs: 0 })).toThrow(/baseMs/);
    expect(() => exponentialBackoff({ factor: 0.5 })).toThrow(/factor/);
    expect(() => exponentialBackoff({ maxMs: -1 })).toThrow(/maxMs/);
    expect(() => exponentialBackoff({ jitter: 'half' as never })).toThrow(/jitter/);
  });
});

describe('decorrelatedJitterBackoff', () => {
  it('draws each delay from [base, previous × 3], capped (AWS formula)', () => {
    const backoff = decorrelatedJitterBackoff({
      baseMs: 100,
      maxMs: 1000,
      random: fixed(0.5, 0.5, 0.5, 0.999, 0),
    });
    // 100 + 0.5·(300−100) = 200; 100 + 0.5·(600−100) = 350; 100 + 0.5·(1050−100) = 575;
    // 100 + 0.999·(1725−100) → capped at 1000; 100 + 0·(…) = 100.
    expect(delays(backoff, 5)).toEqual([200, 350, 575, 1000, 100]);
  });

  it('starts from base when there is no previous delay and grows from a longer previous wait', () => {
    const backoff = decorrelatedJitterBackoff({ baseMs: 100, random: fixed(1 - 2 ** -53) });
    expect(backoff.next(1, 0)).toBe(300);
    expect(backoff.next(2, 5000)).toBe(15_000);
  });

  it('is stateless: the previous delay is the caller’s', () => {
    const backoff = decorrelatedJitterBackoff({ baseMs: 100, random: fixed(0.5) });
    expect(backoff.next(2, 200)).toBe(350);
    expect(backoff.next(2, 200)).toBe(350);
  });

  it('names the option when it is invalid', () => {
    expect(() => decorrelatedJitterBackoff({ baseMs: -1 })).toThrow(/baseMs/);
    expect(() => decorrelatedJitterBackoff({ maxMs: Number.NaN })).toThrow(/maxMs/);
  });
});
