import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import type { AiStep, StepContext } from '../types.js';
import { backoffFor, resolveSettings, retryPolicyFor } from './settings.js';

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

  it("makes a step's policy once for its settings without headers; settings chosen by headers get a fresh one", () => {
    const ctx = (): StepContext =>
      ({
        defaults,
        maxRetryDelayMs: 5000,
        random: () => 0.5,
        clock: new FakeClock(),
      }) as unknown as StepContext;
    const a = ctx();
    const step: AiStep = { name: 'main', provider: 'sim', model: 'm' };
    const plain = resolveSettings(step, {}, defaults);
    const first = retryPolicyFor(step, plain, a);
    expect(retryPolicyFor(step, resolveSettings(step, {}, defaults), a)).toBe(first);
    const headers = resolveSettings(step, { maxAttempts: 5 }, defaults);
    const fresh = retryPolicyFor(step, headers, a);
    expect(fresh).not.toBe(first);
    expect(retryPolicyFor(step, headers, a)).not.toBe(fresh);
    expect(retryPolicyFor(step, plain, a)).toBe(first);
    // Another gateway, or another step, has its own.
    expect(retryPolicyFor(step, plain, ctx())).not.toBe(first);
    expect(retryPolicyFor({ ...step }, plain, a)).not.toBe(first);
  });
});
