import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, toProblem } from '../core/index.js';
import { ConsecutiveWindow, CountWindow, TimeWindow } from './breaker-windows.js';
import { circuitBreaker, type CircuitBreakerPolicy } from './circuit-breaker.js';
import type { CircuitStateChange } from './circuit-breaker-types.js';

const T0 = Date.UTC(2026, 0, 1);

function unavailable(): BreakwaterError {
  return new BreakwaterError('upstream_unavailable');
}

function httpError(status: number): Error & { status: number } {
  return Object.assign(new Error(`HTTP ${status}`), { status });
}

/** Runs `n` calls that fail with a transient error, swallowing the rejections. */
async function fail(breaker: CircuitBreakerPolicy, n = 1): Promise<void> {
  for (let i = 0; i < n; i++) await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
}

/** A call that resolves with `value` after `ms` on `clock`. */
function after<T>(clock: FakeClock, ms: number, value: T): () => Promise<T> {
  return () => new Promise<T>((resolve) => clock.setTimeout(() => resolve(value), ms));
}

async function rejection(promise: Promise<unknown>): Promise<BreakwaterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BreakwaterError);
  return error as BreakwaterError;
}

describe('CircuitBreakerPolicy: half-open', () => {
  it('admits one trial of three, rejects two at once; a failed trial arms one open period', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      name: 'gift-service',
      window: new ConsecutiveWindow(2),
      openDurationMs: 10_000,
      openBackoff: { multiplier: 2, maxMs: 60_000 },
      clock,
    });
    const changes: CircuitStateChange[] = [];
    breaker.onStateChange((e) => changes.push(e));
    await fail(breaker, 2);
    clock.tick(10_000);

    let calls = 0;
    let failTrial!: (error: unknown) => void;
    const fn = (): Promise<string> => {
      calls++;
      return new Promise<string>((_, reject) => (failTrial = reject));
    };
    const first = breaker.execute(fn);
    const second = breaker.execute(fn);
    const third = breaker.execute(fn);
    expect(calls).toBe(1);
    // Settled while the trial is still pending: nothing was awaited before rejecting.
    const [r2, r3] = await Promise.allSettled([second, third]);
    for (const r of [r2, r3]) {
      const error = (r as PromiseRejectedResult).reason as BreakwaterError;
      expect(error).toBeInstanceOf(BreakwaterError);
      expect(error.code).toBe('circuit_open');
      // The open period the breaker would get if the trial failed: 10 s × 2.
      expect(error.retryAfterMs).toBe(20_000);
      expect(toProblem(error).retry_after_ms).toBe(20_000);
      expect(error.details).toEqual({ circuit_state: 'half-open' });
    }
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1 });

    failTrial(unavailable());
    expect((await rejection(first)).code).toBe('upstream_unavailable');
    expect(calls).toBe(1);
    expect(changes.map((c) => [c.from, c.to, c.reason, c.at - T0])).toEqual([
      ['closed', 'open', 'consecutive_failures', 0],
      ['open', 'half-open', 'open_elapsed', 10_000],
      ['half-open', 'open', 'trial_failed', 10_000],
    ]);
    expect(breaker.state()).toMatchObject({
      state: 'open',
      openedAt: T0 + 10_000,
      halfOpenAt: T0 + 30_000,
      retryAfterMs: 20_000,
      openDurationMs: 20_000,
      consecutiveOpens: 2,
    });
    clock.tick(19_999);
    expect(breaker.state().state).toBe('open');
    expect((await rejection(breaker.execute(fn))).retryAfterMs).toBe(1);
    clock.tick(1);
    expect(breaker.state().state).toBe('half-open');
    expect(changes.filter((c) => c.to === 'open')).toHaveLength(2);
    expect(changes.at(-1)).toEqual({
      name: 'gift-service',
      from: 'open',
      to: 'half-open',
      reason: 'open_elapsed',
      at: T0 + 30_000,
    });
  });

  it('closes after successesToClose trial successes, permittedCalls at a time', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), permittedCalls: 2, clock });
    await fail(breaker);
    clock.tick(30_000);
    const a = breaker.execute(after(clock, 10, 'a'));
    const b = breaker.execute(after(clock, 20, 'b'));
    expect((await rejection(breaker.execute(() => 'c'))).retryAfterMs).toBe(30_000);
    await clock.tickAsync(10);
    await expect(a).resolves.toBe('a');
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1, trialSuccesses: 1 });
    await clock.tickAsync(10);
    await expect(b).resolves.toBe('b');
    expect(breaker.state()).toMatchObject({ state: 'closed', consecutiveOpens: 0, openedAt: null });
  });

  it('a trial slower than slowCallDurationMs reopens it', async () => {
    const clock = new FakeClock();
    const window = new CountWindow({ size: 1, slowCallDurationMs: 100, slowCallRateThreshold: 1 });
    const breaker = circuitBreaker({ window, openDurationMs: 1000, clock });
    const changes: string[] = [];
    breaker.onStateChange((e) => changes.push(`${e.to}:${e.reason}`));
    const slow = breaker.execute(after(clock, 100, 'slow'));
    await clock.tickAsync(100);
    await expect(slow).resolves.toBe('slow');
    clock.tick(1000);
    const trial = breaker.execute(after(clock, 150, 'still slow'));
    await clock.tickAsync(150);
    await expect(trial).resolves.toBe('still slow');
    expect(changes).toEqual(['open:slow_call_rate', 'half-open:open_elapsed', 'open:trial_slow']);
  });

  it('ignores results of calls admitted before a transition', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), openDurationMs: 1000, clock });
    const old = breaker
      .execute(() => new Promise<never>((_, reject) => clock.setTimeout(() => reject(unavailable()), 1500)))
      .catch((e: unknown) => e);
    await fail(breaker);
    await clock.tickAsync(1000);
    const trial = breaker.execute(after(clock, 1000, 'ok'));
    await clock.tickAsync(500);
    expect(await old).toBeInstanceOf(BreakwaterError); // failed while a newer trial runs: not its verdict
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1 });
    await clock.tickAsync(500);
    await expect(trial).resolves.toBe('ok');
    expect(breaker.state().state).toBe('closed');
  });

  it('a trial whose error is not counted, or whose predicate throws, frees its slot', async () => {
    const clock = new FakeClock();
    let explode = false;
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(1),
      clock,
      isFailure: (e) => {
        if (explode) throw new TypeError('predicate bug');
        return !(e instanceof Error && e.message === 'HTTP 404');
      },
    });
    await fail(breaker);
    clock.tick(30_000);
    const notFound = httpError(404);
    expect(await breaker.execute(() => Promise.reject(notFound)).catch((e: unknown) => e)).toBe(notFound);
    explode = true;
    const bug = await breaker.execute(() => Promise.reject(unavailable())).catch((e: unknown) => e);
    expect((bug as Error).message).toBe('predicate bug');
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 0 });
    await expect(breaker.execute(() => 'ok')).resolves.toBe('ok');
    expect(breaker.state().state).toBe('closed');
  });
});

describe('CircuitBreakerPolicy: opening', () => {
  it('opens at exactly the Nth consecutive failure; a success resets the run', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(3), clock });
    await fail(breaker, 2);
    await breaker.execute(() => 'ok');
    await fail(breaker, 2);
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 2, failures: 2, slow: 0 } });
    await fail(breaker);
    expect(breaker.state()).toMatchObject({ state: 'open', openedAt: T0, halfOpenAt: T0 + 30_000 });
    let calls = 0;
    const error = await rejection(breaker.execute(() => calls++));
    expect(calls).toBe(0);
    expect(error.retryAfterMs).toBe(30_000);
  });

  it('opens on the failure rate of a count window only once minimumCalls are held', async () => {
    const clock = new FakeClock();
    const window = new CountWindow({ size: 10, minimumCalls: 5, failureRateThreshold: 0.5 });
    const breaker = circuitBreaker({ window, clock });
    const reasons: string[] = [];
    breaker.onStateChange((e) => reasons.push(e.reason));
    await fail(breaker, 4);
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 4, failures: 4 } });
    await breaker.execute(() => 'ok');
    expect(breaker.state()).toMatchObject({ state: 'open', window: { calls: 5, failures: 4 } });
    expect(reasons).toEqual(['failure_rate']);
  });

  it('forgets failures older than a time window, to the bucket', async () => {
    const clock = new FakeClock();
    const window = new TimeWindow({ windowMs: 10_000, bucketMs: 1000, minimumCalls: 3 });
    const breaker = circuitBreaker({ window, clock });
    await fail(breaker, 2);
    clock.tick(10_000);
    await fail(breaker);
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 1, failures: 1 } });
    clock.tick(9_999);
    await fail(breaker);
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 2, failures: 2 } });
    await fail(breaker);
    expect(breaker.state()).toMatchObject({ state: 'open', openedAt: T0 + 19_999 });
  });

  it('opens on the slow-call rate; slow values are still returned', async () => {
    const clock = new FakeClock();
    const window = new CountWindow({
      size: 4,
      minimumCalls: 4,
      failureRateThreshold: false,
      slowCallDurationMs: 1000,
      slowCallRateThreshold: 0.5,
    });
    const breaker = circuitBreaker({ window, clock });
    const durations: (number | undefined)[] = [];
    breaker.onSuccess((e) => durations.push(e.durationMs));
    for (const ms of [1000, 10, 999]) {
      const call = breaker.execute(after(clock, ms, ms));
      await clock.tickAsync(ms);
      await expect(call).resolves.toBe(ms);
    }
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 3, failures: 0, slow: 1 } });
    const last = breaker.execute(after(clock, 1500, 'late'));
    await clock.tickAsync(1500);
    await expect(last).resolves.toBe('late');
    expect(breaker.state()).toMatchObject({ state: 'open', window: { calls: 4, slow: 2 } });
    expect(durations).toEqual([1000, 10, 999, 1500]);
  });

  it('grows the open period by the backoff on each reopen and resets it when it closes', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(1),
      openDurationMs: 1000,
      openBackoff: { multiplier: 2, maxMs: 5000 },
      clock,
    });
    const periods: number[] = [];
    breaker.onStateChange((e) => {
      if (e.to === 'open') periods.push(breaker.state().openDurationMs!);
    });
    await fail(breaker);
    for (let i = 0; i < 4; i++) {
      clock.tick(breaker.state().retryAfterMs!);
      await fail(breaker);
    }
    expect(periods).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(breaker.state().consecutiveOpens).toBe(5);
    clock.tick(5000);
    await breaker.execute(() => 'ok');
    expect(breaker.state()).toMatchObject({ state: 'closed', consecutiveOpens: 0 });
    await fail(breaker);
    expect(breaker.state()).toMatchObject({ state: 'open', openDurationMs: 1000, consecutiveOpens: 1 });
  });

  it('never counts a 404, a bug, a cancel or our own limits; rethrows them unchanged', async () => {
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(2), clock: new FakeClock() });
    const errors: unknown[] = [
      httpError(404),
      httpError(400),
      new TypeError('bug'),
      new DOMException('aborted', 'AbortError'),
      new BreakwaterError('canceled'),
      new BreakwaterError('rate_limited'),
      new BreakwaterError('spend_limited'),
      new BreakwaterError('bulkhead_full'),
      new BreakwaterError('deadline_exceeded'),
    ];
    for (const error of [...errors, ...errors]) {
      expect(await breaker.execute(() => Promise.reject(error)).catch((e: unknown) => e)).toBe(error);
    }
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 0, failures: 0 } });
    await breaker.execute(() => Promise.reject(httpError(503))).catch(() => {});
    await breaker.execute(() => Promise.reject(new BreakwaterError('timeout'))).catch(() => {});
    expect(breaker.state().state).toBe('open');
  });

  it('isFailure and isFailureResult override what counts', async () => {
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(2),
      isFailure: (e) => e instanceof Error && e.message === 'HTTP 404',
      isFailureResult: (v) => (v as { ok: boolean }).ok === false,
      clock: new FakeClock(),
    });
    const failures: unknown[] = [];
    breaker.onFailure((e) => failures.push(e.error));
    await breaker.execute(() => Promise.reject(httpError(503))).catch(() => {});
    await expect(breaker.execute(() => ({ ok: false }))).resolves.toEqual({ ok: false });
    expect(breaker.state().state).toBe('closed');
    await breaker.execute(() => Promise.reject(httpError(404))).catch(() => {});
    expect(breaker.state().state).toBe('open');
    expect(failures).toEqual([{ ok: false }, httpError(404)]);
  });
});
