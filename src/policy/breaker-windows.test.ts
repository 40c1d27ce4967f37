import { describe, expect, it } from 'vitest';
import { ConsecutiveWindow, CountWindow, TimeWindow, WINDOW_DEFAULTS } from './breaker-windows.js';
import { optionsErrorOf } from '../../test/support/options.js';

const T0 = Date.UTC(2026, 0, 1);

describe('ConsecutiveWindow', () => {
  it('opens at exactly the threshold and a success resets the run', () => {
    const w = new ConsecutiveWindow(3);
    w.recordFailure();
    w.recordFailure();
    expect(w.shouldOpen()).toBe(false);
    w.recordSuccess();
    expect(w.stats()).toEqual({ calls: 0, failures: 0, slow: 0 });
    w.recordFailure();
    w.recordFailure();
    expect(w.shouldOpen()).toBe(false);
    w.recordFailure();
    expect(w.shouldOpen()).toBe(true);
    expect(w.openReason).toBe('consecutive_failures');
    w.reset();
    expect(w.shouldOpen()).toBe(false);
  });

  it('defaults to 5 and validates the threshold', () => {
    expect(new ConsecutiveWindow().threshold).toBe(WINDOW_DEFAULTS.consecutiveFailures);
    expect(new ConsecutiveWindow({ threshold: 2 }).threshold).toBe(2);
    expect(() => new ConsecutiveWindow(0)).toThrow(/threshold/);
    expect(() => new ConsecutiveWindow(2.5)).toThrow(/threshold/);
  });
});

describe('CountWindow', () => {
  it('judges the failure rate over the last size calls once minimumCalls are held', () => {
    const w = new CountWindow({ size: 4, minimumCalls: 3, failureRateThreshold: 0.5 });
    w.recordFailure(0);
    w.recordFailure(0);
    expect(w.shouldOpen()).toBe(false); // 2 calls < minimumCalls
    w.recordSuccess(0);
    expect(w.shouldOpen()).toBe(true); // 2 of 3
    expect(w.openReason).toBe('failure_rate');
    w.recordSuccess(0);
    w.recordSuccess(0); // evicts the first failure: 1 of the last 4
    expect(w.stats()).toEqual({ calls: 4, failures: 1, slow: 0 });
    expect(w.shouldOpen()).toBe(false);
    w.recordFailure(0); // evicts the second failure
    expect(w.stats()).toEqual({ calls: 4, failures: 1, slow: 0 });
    w.recordFailure(0);
    expect(w.stats()).toEqual({ calls: 4, failures: 2, slow: 0 });
    expect(w.shouldOpen()).toBe(true);
    w.reset();
    expect(w.stats()).toEqual({ calls: 0, failures: 0, slow: 0 });
  });

  it('compares rates exactly: 3 of 10 meets a 0.3 threshold', () => {
    const w = new CountWindow({ size: 10, failureRateThreshold: 0.3 });
    for (let i = 0; i < 7; i++) w.recordSuccess(0);
    for (let i = 0; i < 2; i++) w.recordFailure(0);
    w.recordFailure(0);
    expect(w.shouldOpen()).toBe(true);
  });

  it('counts slow calls, evicts their flag, and opens on the slow-call rate', () => {
    const w = new CountWindow({
      size: 3,
      minimumCalls: 3,
      slowCallDurationMs: 100,
      slowCallRateThreshold: 0.6,
    });
    w.recordSuccess(100);
    w.recordFailure(500);
    w.recordSuccess(99);
    expect(w.stats()).toEqual({ calls: 3, failures: 1, slow: 2 });
    expect(w.shouldOpen()).toBe(true);
    expect(w.openReason).toBe('slow_call_rate');
    w.recordSuccess(1);
    expect(w.stats()).toEqual({ calls: 3, failures: 1, slow: 1 });
    expect(w.shouldOpen()).toBe(false);
    expect(w.slowCallDurationMs).toBe(100);
  });

  it('defaults minimumCalls to min(10, size) and validates options by name', () => {
    const small = new CountWindow({ size: 2 });
    small.recordFailure(0);
    expect(small.shouldOpen()).toBe(false);
    small.recordFailure(0);
    expect(small.shouldOpen()).toBe(true);
    expect(() => new CountWindow({ size: 0 })).toThrow(/size/);
    expect(() => new CountWindow({ size: 5, minimumCalls: 6 })).toThrow(/minimumCalls/);
    expect(() => new CountWindow({ size: 5, failureRateThreshold: 0 })).toThrow(/failureRateThreshold/);
    expect(() => new CountWindow({ size: 5, failureRateThreshold: 1.5 })).toThrow(/failureRateThreshold/);
    expect(() => new CountWindow({ size: 5, failureRateThreshold: false })).toThrow(/slowCallDurationMs/);
    expect(() => new CountWindow({ size: 5, slowCallRateThreshold: 0.5 })).toThrow(/slowCallDurationMs/);
    expect(() => new CountWindow({ size: 5, slowCallDurationMs: -1 })).toThrow(/slowCallDurationMs/);
    expect(() => new CountWindow({ size: 5, slowCallDurationMs: 10, slowCallRateThreshold: 2 })).toThrow(
      /slowCallRateThreshold/,
    );
  });
});

describe('TimeWindow', () => {
  it('expires a bucket exactly windowMs after the start of the bucket it was recorded in', () => {
    const w = new TimeWindow({ windowMs: 10_000, bucketMs: 1000, minimumCalls: 1 });
    w.recordFailure(0, T0 + 300);
    w.recordSuccess(0, T0 + 1500);
    expect(w.stats(T0 + 9_999)).toEqual({ calls: 2, failures: 1, slow: 0 });
    expect(w.stats(T0 + 10_000)).toEqual({ calls: 1, failures: 0, slow: 0 });
    expect(w.shouldOpen(T0 + 10_999)).toBe(false);
    expect(w.stats(T0 + 11_000)).toEqual({ calls: 0, failures: 0, slow: 0 });
  });

  it('opens on the failure rate within the window once minimumCalls are held', () => {
    const w = new TimeWindow({ windowMs: 5000, minimumCalls: 4, failureRateThreshold: 0.5 });
    expect(w.bucketMs).toBe(1000);
    w.recordFailure(0, T0);
    w.recordFailure(0, T0 + 1000);
    w.recordSuccess(0, T0 + 2000);
    expect(w.shouldOpen(T0 + 2000)).toBe(false);
    w.recordSuccess(0, T0 + 4999);
    expect(w.shouldOpen(T0 + 4999)).toBe(true);
    // The first failure leaves at T0 + 5000: 3 calls < minimumCalls.
    expect(w.shouldOpen(T0 + 5000)).toBe(false);
  });

  it('opens on the slow-call rate and forgets everything after a long quiet spell', () => {
    const w = new TimeWindow({
      windowMs: 2000,
      bucketMs: 500,
      minimumCalls: 2,
      failureRateThreshold: false,
      slowCallDurationMs: 250,
    });
    w.recordSuccess(250, T0);
    w.recordSuccess(300, T0 + 100);
    expect(w.shouldOpen(T0 + 100)).toBe(true);
    expect(w.openReason).toBe('slow_call_rate');
    expect(w.stats(T0 + 60_000)).toEqual({ calls: 0, failures: 0, slow: 0 });
    w.recordSuccess(10, T0 + 60_000);
    w.recordFailure(10, T0 + 60_001);
    expect(w.stats(T0 + 60_001)).toEqual({ calls: 2, failures: 1, slow: 0 });
    expect(w.shouldOpen(T0 + 60_001)).toBe(false);
  });

  it('records into the newest bucket when the clock steps back', () => {
    const w = new TimeWindow({ windowMs: 3000, minimumCalls: 1 });
    w.recordFailure(0, T0 + 2000);
    w.recordFailure(0, T0 + 500);
    expect(w.stats(T0 + 2000)).toEqual({ calls: 2, failures: 2, slow: 0 });
    expect(w.stats(T0 + 5000)).toEqual({ calls: 0, failures: 0, slow: 0 });
    w.recordSuccess(0, T0 + 5000);
    w.reset();
    expect(w.stats(T0 + 5000)).toEqual({ calls: 0, failures: 0, slow: 0 });
  });

  it('validates options by name', () => {
    expect(() => new TimeWindow({ windowMs: 0 })).toThrow(/windowMs/);
    expect(() => new TimeWindow({ windowMs: 10_000, bucketMs: 3000 })).toThrow(/bucketMs/);
    expect(() => new TimeWindow({ windowMs: 10_000, minimumCalls: 0 })).toThrow(/minimumCalls/);
    expect(new TimeWindow({ windowMs: 400 }).bucketMs).toBe(400);
  });
});

describe('window options are reported all at once, naming the window', () => {
  it('CountWindow: every bad option, then the rules across options', () => {
    const e = optionsErrorOf(
      () =>
        new CountWindow({ size: 1.5, failureRateThreshold: 2, slowCallRateThreshold: 0, minimumCalls: 0 }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'CountWindow']);
    expect(e.problems).toEqual([
      { option: 'size', rule: 'an integer >= 1', value: 1.5 },
      { option: 'failureRateThreshold', rule: 'a fraction in (0, 1] or false', value: 2 },
      { option: 'slowCallRateThreshold', rule: 'a fraction in (0, 1]', value: 0 },
      { option: 'minimumCalls', rule: 'an integer >= 1', value: 0 },
      {
        option: 'slowCallDurationMs',
        rule: 'set with failureRateThreshold false or a slowCallRateThreshold',
        value: undefined,
      },
    ]);
    expect(e.message).toBe(
      'CountWindow: size must be an integer >= 1, got 1.5; failureRateThreshold must be a fraction in ' +
        '(0, 1] or false, got 2; slowCallRateThreshold must be a fraction in (0, 1], got 0; minimumCalls ' +
        'must be an integer >= 1, got 0; slowCallDurationMs must be set with failureRateThreshold false or ' +
        'a slowCallRateThreshold, got undefined',
    );
    expect(optionsErrorOf(() => new CountWindow({ size: 5, minimumCalls: 6 })).message).toBe(
      'CountWindow: minimumCalls must be an integer in [1, 5], got 6',
    );
  });

  it('TimeWindow: the default bucket must divide windowMs too', () => {
    const e = optionsErrorOf(
      () => new TimeWindow({ windowMs: 1500, slowCallDurationMs: 0, minimumCalls: 2.5 }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'TimeWindow']);
    expect(e.message).toBe(
      'TimeWindow: slowCallDurationMs must be a finite number > 0, got 0; minimumCalls must be an integer ' +
        '>= 1, got 2.5; bucketMs must be an integer > 0 that divides windowMs (1500), got 1000',
    );
    expect(optionsErrorOf(() => new TimeWindow({ windowMs: 0, bucketMs: -1 })).problems).toEqual([
      { option: 'windowMs', rule: 'an integer >= 1', value: 0 },
      { option: 'bucketMs', rule: 'an integer > 0', value: -1 },
    ]);
    expect(new TimeWindow({ windowMs: 1500, bucketMs: 500 }).bucketMs).toBe(500);
  });

  it('ConsecutiveWindow: a number or an options object', () => {
    expect(optionsErrorOf(() => new ConsecutiveWindow({ threshold: '3' as never })).message).toBe(
      "ConsecutiveWindow: threshold must be an integer >= 1, got '3'",
    );
    expect(optionsErrorOf(() => new ConsecutiveWindow(0)).problems).toEqual([
      { option: 'threshold', rule: 'an integer >= 1', value: 0 },
    ]);
  });
});
