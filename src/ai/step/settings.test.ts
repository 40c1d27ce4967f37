import { describe, expect, it } from 'vitest';
import { backoffFor, resolveSettings } from './settings.js';

const defaults = { timeoutMs: 60_000, maxAttempts: 3, retryDelayMs: 500, backoff: 'exponential' as const };

describe('step settings', () => {
  it('the step wins over the headers, the headers over the gateway', () => {
    expect(resolveSettings({}, {}, defaults)).toEqual(defaults);
    expect(resolveSettings({}, { maxAttempts: 5, backoff: 'linear' }, defaults)).toEqual({
      ...defaults,
      maxAttempts: 5,
      backoff: 'linear',
    });
    expect(
      resolveSettings({ timeoutMs: 1000, maxAttempts: 1 }, { timeoutMs: 9000, maxAttempts: 5 }, defaults),
    ).toEqual({
      ...defaults,
      timeoutMs: 1000,
      maxAttempts: 1,
    });
  });

  it('schedules: constant, linear and exponential, capped, with equal jitter in [d/2, d]', () => {
    const waits = (backoff: 'constant' | 'linear' | 'exponential', random: number) => {
      const b = backoffFor({ ...defaults, retryDelayMs: 1000, backoff }, 5000, () => random);
      return [1, 2, 3, 4].map((n) => b.next(n, 0));
    };
    expect(waits('constant', 0)).toEqual([500, 500, 500, 500]);
    expect(waits('linear', 0)).toEqual([500, 1000, 1500, 2000]);
    expect(waits('exponential', 0)).toEqual([500, 1000, 2000, 2500]);
    expect(waits('exponential', 0.999999)).toEqual([1000, 2000, 4000, 5000]);
    expect(waits('linear', 0.5)).toEqual([750, 1500, 2250, 3000]);
    expect(backoffFor({ ...defaults, retryDelayMs: 0 }, 5000, () => 0.5).next(3, 0)).toBe(0);
  });
});
