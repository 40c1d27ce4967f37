import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock, neverAbortedSignal } from '../core/index.js';
import { constantBackoff, type Backoff } from './backoff.js';
import type { GiveUpEvent, RetryEvent } from './retry.js';
import { retry } from './retry.js';
import type { PolicyContext } from './types.js';

const START = Date.UTC(2026, 0, 1);

/** An error shaped like an HTTP client's: `status` and optional response headers. */
function httpError(status: number, headers?: Record<string, string>): Error {
  return Object.assign(new Error(`HTTP ${status}`), { status, headers });
}

/** A function that fails with `errors` in turn, then returns `value`; records each call's context and time. */
function flaky<T>(clock: FakeClock, errors: unknown[], value: T) {
  const calls: { ctx: PolicyContext; at: number }[] = [];
  const fn = (ctx: PolicyContext): Promise<T> => {
    calls.push({ ctx, at: clock.now() - START });
    const error = errors[calls.length - 1];
    return error === undefined ? Promise.resolve(value) : Promise.reject(error);
  };
  return { fn, calls };
}

describe('RetryPolicy', () => {
  it('maxAttempts counts the first call: 3 means one call and two retries, then the last error unchanged', async () => {
    const clock = new FakeClock();
    const errors = [httpError(503), httpError(503), httpError(503), httpError(503)];
    const { fn, calls } = flaky(clock, errors, 'ok');
    const policy = retry({ maxAttempts: 3, backoff: constantBackoff(100), clock, name: 'gifts' });
    const retries: RetryEvent[] = [];
    const giveUps: GiveUpEvent[] = [];
    policy.onRetry((e) => retries.push(e));
    policy.onGiveUp((e) => giveUps.push(e));
    const result = policy.execute(fn).catch((e: unknown) => e);
    await clock.tickAsync(1000);
    expect(await result).toBe(errors[2]);
    expect(calls.map((c) => c.at)).toEqual([0, 100, 200]);
    expect(calls.map((c) => c.ctx.attempt)).toEqual([1, 2, 3]);
    expect(retries).toEqual([
      { name: 'gifts', attempt: 1, nextAttempt: 2, delayMs: 100, error: errors[0] },
      { name: 'gifts', attempt: 2, nextAttempt: 3, delayMs: 100, error: errors[1] },
    ]);
    expect(giveUps).toEqual([{ name: 'gifts', attempts: 3, reason: 'exhausted', error: errors[2] }]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('asks shouldRetry exactly once per failure, so a predicate can keep a retry budget', async () => {
    const clock = new FakeClock();
    const errors = [httpError(503), httpError(503), httpError(503)];
    const { fn, calls } = flaky(clock, errors, 'ok');
    const asked: number[] = [];
    let budget = 1;
    const policy = retry({
      maxAttempts: 5,
      backoff: constantBackoff(10),
      clock,
      shouldRetry: (_error, attempt) => {
        asked.push(attempt);
        return budget-- > 0;
      },
    });
    const result = policy.execute(fn).catch((e: unknown) => e);
    await clock.tickAsync(10);
    expect(await result).toBe(errors[1]);
    expect(asked).toEqual([1, 2]);
    expect(calls).toHaveLength(2);
  });

  it('calls a 404 exactly once with maxAttempts 10', async () => {
    const clock = new FakeClock();
    const notFound = httpError(404);
    const { fn, calls } = flaky(clock, Array(10).fill(notFound), 'ok');
    const policy = retry({ maxAttempts: 10, backoff: constantBackoff(0), clock });
    const giveUps: GiveUpEvent[] = [];
    policy.onGiveUp((e) => giveUps.push(e));
    await expect(policy.execute(fn)).rejects.toBe(notFound);
    expect(calls).toHaveLength(1);
    expect(giveUps).toEqual([{ name: 'retry', attempts: 1, reason: 'not_retryable', error: notFound }]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('never retries a permanent 4xx even when shouldRetry says yes', async () => {
    const clock = new FakeClock();
    for (const status of [400, 401, 403, 404, 409, 422]) {
      const { fn, calls } = flaky(clock, [httpError(status), httpError(status)], 'ok');
      const policy = retry({ maxAttempts: 10, backoff: constantBackoff(0), clock, shouldRetry: () => true });
      await expect(policy.execute(fn)).rejects.toMatchObject({ status });
      expect(calls).toHaveLength(1);
    }
  });

  it.each([408, 425, 429, 500, 502, 503, 504])('retries HTTP %i', async (status) => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(status)], 'ok');
    const policy = retry({ backoff: constantBackoff(100), clock });
    const result = policy.execute(fn);
    await clock.tickAsync(100);
    await expect(result).resolves.toBe('ok');
    expect(calls.map((c) => c.at)).toEqual([0, 100]);
  });

  it('never retries our own rate_limited / spend_limited, nor fatal programming errors', async () => {
    const clock = new FakeClock();
    for (const error of [
      new BreakwaterError('rate_limited', { retryAfterMs: 10 }),
      new BreakwaterError('spend_limited'),
      new TypeError('x is not a function'),
    ]) {
      const { fn, calls } = flaky(clock, [error], 'ok');
      const policy = retry({ maxAttempts: 5, backoff: constantBackoff(0), clock, shouldRetry: () => true });
      await expect(policy.execute(fn)).rejects.toBe(error);
      expect(calls).toHaveLength(1);
    }
  });

  it('waits exactly Retry-After seconds when longer than the backoff', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(503, { 'Retry-After': '3' })], 'ok');
    const policy = retry({ backoff: constantBackoff(100), clock });
    const delays: number[] = [];
    policy.onRetry((e) => delays.push(e.delayMs));
    const result = policy.execute(fn);
    await clock.tickAsync(2999);
    expect(calls).toHaveLength(1);
    await clock.tickAsync(1);
    await expect(result).resolves.toBe('ok');
    expect(calls.map((c) => c.at)).toEqual([0, 3000]);
    expect(delays).toEqual([3000]);
  });

  it('waits until a Retry-After HTTP-date, read on the injected clock', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(
      clock,
      [httpError(429, { 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' })],
      'ok',
    );
    const policy = retry({ backoff: constantBackoff(100), clock });
    const result = policy.execute(fn);
    await clock.tickAsync(5000);
    await expect(result).resolves.toBe('ok');
    expect(calls.map((c) => c.at)).toEqual([0, 5000]);
  });

  it('keeps the backoff delay when it is longer than the hint, and caps any delay at maxDelayMs', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(503, { 'retry-after': '1' }), httpError(503)], 'ok');
    const policy = retry({ backoff: constantBackoff(10_000), maxDelayMs: 2000, clock });
    const result = policy.execute(fn);
    await clock.tickAsync(4000);
    await expect(result).resolves.toBe('ok');
    expect(calls.map((c) => c.at)).toEqual([0, 2000, 4000]);

    const clock2 = new FakeClock();
    const second = flaky(clock2, [httpError(503, { 'retry-after': '1' })], 'ok');
    const longer = retry({ backoff: constantBackoff(1500), clock: clock2 });
    const result2 = longer.execute(second.fn);
    await clock2.tickAsync(1500);
    await expect(result2).resolves.toBe('ok');
    expect(second.calls.map((c) => c.at)).toEqual([0, 1500]);
  });

  it("honours a BreakwaterError's retryAfterMs from an inner policy and rethrows it unchanged", async () => {
    const clock = new FakeClock();
    const busy = new BreakwaterError('bulkhead_full', { retryAfterMs: 2000 });
    const { fn, calls } = flaky(clock, [busy, busy], 'ok');
    const policy = retry({ maxAttempts: 2, backoff: constantBackoff(10), clock });
    const result = policy.execute(fn).catch((e: unknown) => e);
    await clock.tickAsync(2000);
    expect(await result).toBe(busy);
    expect(calls.map((c) => c.at)).toEqual([0, 2000]);
  });

  it('does not retry circuit_open by default (the breaker answers fast), but shouldRetry can opt in', async () => {
    const clock = new FakeClock();
    const open = new BreakwaterError('circuit_open', { retryAfterMs: 2000 });
    const first = flaky(clock, [open], 'ok');
    const giveUps: GiveUpEvent[] = [];
    const policy = retry({ maxAttempts: 3, backoff: constantBackoff(10), clock });
    policy.onGiveUp((e) => giveUps.push(e));
    await expect(policy.execute(first.fn)).rejects.toBe(open);
    expect(first.calls).toHaveLength(1);
    expect(giveUps.map((g) => g.reason)).toEqual(['not_retryable']);

    const second = flaky(clock, [open], 'ok');
    const optIn = retry({ maxAttempts: 3, backoff: constantBackoff(10), clock, shouldRetry: () => true });
    const result = optIn.execute(second.fn);
    await clock.tickAsync(2000);
    await expect(result).resolves.toBe('ok');
    expect(second.calls.map((c) => c.at)).toEqual([0, 2000]);
  });

  it('gives up at once when the retry hint alone exceeds maxDelayMs', async () => {
    const clock = new FakeClock();
    const error = httpError(503, { 'retry-after': '60' });
    const { fn, calls } = flaky(clock, [error], 'ok');
    const policy = retry({ maxAttempts: 5, backoff: constantBackoff(10), maxDelayMs: 5000, clock });
    const giveUps: GiveUpEvent[] = [];
    policy.onGiveUp((e) => giveUps.push(e));
    await expect(policy.execute(fn)).rejects.toBe(error);
    expect(calls).toHaveLength(1);
    expect(giveUps[0]!.reason).toBe('retry_after_too_long');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('never sleeps past the deadline: gives up at once when the wait would end after it', async () => {
    const clock = new FakeClock();
    const errors = [httpError(503), httpError(503), httpError(503)];
    const { fn, calls } = flaky(clock, errors, 'ok');
    const policy = retry({ maxAttempts: 5, backoff: constantBackoff(600), deadlineMarginMs: 0, clock });
    const giveUps: GiveUpEvent[] = [];
    policy.onGiveUp((e) => giveUps.push(e));
    let rejectedAt = -1;
    const result = Deadline.run(1000, () => policy.execute(fn), clock).catch((e: unknown) => {
      rejectedAt = clock.now() - START;
      return e;
    });
    await clock.tickAsync(5000);
    expect(await result).toBe(errors[1]);
    // 0 → wait 600 (ends at 600 < 1000) → 600 → a wait would end at 1200 > 1000: give up at 600.
    expect(calls.map((c) => c.at)).toEqual([0, 600]);
    expect(calls.map((c) => c.ctx.deadlineAt - START)).toEqual([1000, 1000]);
    expect(rejectedAt).toBe(600);
    expect(giveUps[0]).toMatchObject({ reason: 'deadline', attempts: 2 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('keeps deadlineMarginMs (default 50) before the deadline', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(503), httpError(503)], 'ok');
    const policy = retry({ backoff: constantBackoff(950), clock });
    const result = Deadline.run(1000, () => policy.execute(fn), clock).catch((e: unknown) => e);
    await clock.tickAsync(2000);
    expect(await result).toMatchObject({ status: 503 });
    expect(calls).toHaveLength(1);

    const ok = flaky(clock, [httpError(503)], 'ok');
    const start = clock.now() - START;
    const fits = Deadline.run(
      1000,
      () => retry({ backoff: constantBackoff(949), clock }).execute(ok.fn),
      clock,
    );
    await clock.tickAsync(949);
    await expect(fits).resolves.toBe('ok');
    expect(ok.calls.map((c) => c.at - start)).toEqual([0, 949]);
  });

  it('an abort during the wait rejects at once with the reason and leaves no timer or listener', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(503)], 'ok');
    const policy = retry({ backoff: constantBackoff(1000), clock });
    const giveUps: GiveUpEvent[] = [];
    policy.onGiveUp((e) => giveUps.push(e));
    const controller = new AbortController();
    const reason = new Error('caller left');
    const result = policy.execute(fn, controller.signal).catch((e: unknown) => e);
    await clock.tickAsync(100);
    expect(clock.pendingTimers()).toBe(1);
    controller.abort(reason);
    expect(await result).toBe(reason);
    expect(clock.now() - START).toBe(100);
    expect(calls).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(giveUps).toEqual([{ name: 'retry', attempts: 1, reason: 'aborted', error: reason }]);
  });

  it('does not retry once the signal has aborted', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const error = httpError(503);
    let calls = 0;
    const policy = retry({ backoff: constantBackoff(10), clock });
    const reasons: string[] = [];
    policy.onGiveUp((e) => reasons.push(e.reason));
    const result = policy.execute(() => {
      calls++;
      controller.abort();
      return Promise.reject(error);
    }, controller.signal);
    await expect(result).rejects.toBe(error);
    expect(calls).toBe(1);
    expect(reasons).toEqual(['aborted']);
  });

  it('passes every call the same signal object, its attempt number and the deadline', async () => {
    const clock = new FakeClock();
    const { fn, calls } = flaky(clock, [httpError(502), httpError(502)], 'ok');
    const policy = retry({ backoff: constantBackoff(5), clock });
    const controller = new AbortController();
    const result = policy.execute(fn, controller.signal);
    await clock.tickAsync(10);
    await expect(result).resolves.toBe('ok');
    expect(calls.map((c) => c.ctx.signal)).toEqual([controller.signal, controller.signal, controller.signal]);
    expect(calls.every((c) => c.ctx.signal === controller.signal)).toBe(true);
    expect(calls.map((c) => [c.ctx.attempt, c.ctx.deadlineAt])).toEqual([
      [1, Infinity],
      [2, Infinity],
      [3, Infinity],
    ]);
  });

  it('a first-call success reuses the context, sets no timer and builds no event unless listened', async () => {
    const clock = new FakeClock();
    const policy = retry({ clock });
    const ctx: PolicyContext = { signal: neverAbortedSignal, attempt: 1, deadlineAt: Infinity };
    let seen: PolicyContext | undefined;
    const value = await policy.run(
      ctx,
      {
        invoke: (c) => {
          seen = c;
          return Promise.resolve(7);
        },
      },
      0,
    );
    expect(value).toBe(7);
    expect(seen).toBe(ctx);
    expect(clock.pendingTimers()).toBe(0);
    const successes: unknown[] = [];
    policy.onSuccess((e) => successes.push(e));
    await policy.execute(() => 1);
    expect(successes).toEqual([{ name: 'retry', attempts: 1 }]);
  });

  it('numbers its own attempts from 1 under an outer attempt', async () => {
    const clock = new FakeClock();
    const policy = retry({ backoff: constantBackoff(0), clock });
    const attempts: number[] = [];
    const ctx: PolicyContext = { signal: neverAbortedSignal, attempt: 2, deadlineAt: Infinity };
    let n = 0;
    await policy.run(
      ctx,
      {
        invoke: (c) => {
          attempts.push(c.attempt);
          return ++n < 2 ? Promise.reject(httpError(503)) : Promise.resolve('ok');
        },
      },
      0,
    );
    expect(attempts).toEqual([1, 2]);
  });

  it('shouldRetry narrows the default and can widen it to an unknown-outcome write', async () => {
    const clock = new FakeClock();
    const narrow = flaky(clock, [httpError(503)], 'ok');
    const seen: [number, string][] = [];
    const never = retry({
      clock,
      backoff: constantBackoff(0),
      shouldRetry: (_e, attempt, c) => {
        seen.push([attempt, c.reason]);
        return false;
      },
    });
    await expect(never.execute(narrow.fn)).rejects.toMatchObject({ status: 503 });
    expect(narrow.calls).toHaveLength(1);
    expect(seen).toEqual([[1, 'http_503']]);

    // A 502 after a POST may have been processed: not retried by default ...
    const post = { classifyOptions: { method: 'POST' }, backoff: constantBackoff(0), clock };
    const unknown = flaky(clock, [httpError(502)], 'ok');
    await expect(retry(post).execute(unknown.fn)).rejects.toMatchObject({ status: 502 });
    expect(unknown.calls).toHaveLength(1);
    // ... unless the caller says the write is safe to repeat.
    const widened = flaky(clock, [httpError(502)], 'ok');
    await expect(retry({ ...post, shouldRetry: () => true }).execute(widened.fn)).resolves.toBe('ok');
    expect(widened.calls).toHaveLength(2);
    const keyed = flaky(clock, [httpError(502)], 'ok');
    const withKey = retry({ ...post, classifyOptions: { method: 'POST', idempotencyKey: true } });
    await expect(withKey.execute(keyed.fn)).resolves.toBe('ok');
  });

  it('retryOnResult retries a rejected value and returns the last one when attempts run out', async () => {
    const clock = new FakeClock();
    let n = 0;
    const policy = retry({
      maxAttempts: 3,
      backoff: constantBackoff(100),
      retryOnResult: (v) => (v as { status: number }).status >= 500,
      clock,
    });
    const retries: RetryEvent[] = [];
    const giveUps: GiveUpEvent[] = [];
    policy.onRetry((e) => retries.push(e));
    policy.onGiveUp((e) => giveUps.push(e));
    const result = policy.execute(() => ({ status: 503, n: ++n }));
    await clock.tickAsync(200);
    await expect(result).resolves.toEqual({ status: 503, n: 3 });
    expect(retries.map((e) => [e.attempt, e.error, e.result])).toEqual([
      [1, undefined, { status: 503, n: 1 }],
      [2, undefined, { status: 503, n: 2 }],
    ]);
    expect(giveUps).toEqual([
      { name: 'retry', attempts: 3, reason: 'exhausted', error: undefined, result: { status: 503, n: 3 } },
    ]);

    let m = 0;
    const recovers = retry({ backoff: constantBackoff(0), retryOnResult: (v) => v === 'busy', clock });
    await expect(recovers.execute(() => (++m < 2 ? 'busy' : 'done'))).resolves.toBe('done');
  });

  it('passes the delay actually waited back to the backoff as previousMs', async () => {
    const clock = new FakeClock();
    const args: [number, number][] = [];
    const backoff: Backoff = {
      next(retryNo, previousMs) {
        args.push([retryNo, previousMs]);
        return 100 * retryNo;
      },
    };
    const errors = [httpError(503), httpError(503, { 'retry-after': '1' }), httpError(503)];
    const { fn, calls } = flaky(clock, errors, 'ok');
    const result = retry({ maxAttempts: 4, backoff, clock }).execute(fn);
    await clock.tickAsync(5000);
    await expect(result).resolves.toBe('ok');
    expect(args).toEqual([
      [1, 0],
      [2, 100],
      [3, 1000],
    ]);
    expect(calls.map((c) => c.at)).toEqual([0, 100, 1100, 1400]);
  });

  it('with maxAttempts Infinity it retries until the deadline stops it', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const policy = retry({
      maxAttempts: Infinity,
      backoff: constantBackoff(100),
      deadlineMarginMs: 0,
      clock,
    });
    const result = Deadline.run(
      1000,
      () =>
        policy.execute(() => {
          calls++;
          return Promise.reject(httpError(503));
        }),
      clock,
    ).catch((e: unknown) => e);
    await clock.tickAsync(2000);
    expect(await result).toMatchObject({ status: 503 });
    expect(calls).toBe(10);
  });

  it('validates options at construction and names the option', () => {
    expect(() => retry({ maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => retry({ maxAttempts: 2.5 })).toThrow(RangeError);
    expect(() => retry({ maxDelayMs: -1 })).toThrow(/maxDelayMs/);
    expect(() => retry({ deadlineMarginMs: Number.NaN })).toThrow(/deadlineMarginMs/);
    expect(() => retry({ backoff: {} as Backoff })).toThrow(/backoff/);
    expect(() => retry({ shouldRetry: 'yes' as never })).toThrow(/shouldRetry/);
    expect(() => retry({ retryOnResult: 1 as never })).toThrow(/retryOnResult/);
    expect(retry(5).maxAttempts).toBe(5);
    expect(retry().maxAttempts).toBe(3);
  });
});
