import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  constantBackoff,
  hedging,
  pipeline,
  retry,
  sleep,
  timeout,
  type PolicyContext,
} from '../../src/entries/index.js';
import { FakeClock, faultInjection } from '../../src/entries/testing.js';
import { neverAbortedSignal } from '../../src/core/index.js';

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

describe('timeout inside a retry loop with one long-lived parent signal', () => {
  it('15 hanging attempts (aggressive): no listener left on the parent, no timer left', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const policy = pipeline(
      retry({ maxAttempts: 15, backoff: constantBackoff(10), clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    const hang = faultInjection({ hang: { rate: 1 }, clock });
    let calls = 0;
    const result = policy
      .execute((ctx) => {
        calls++;
        return hang.execute(() => 'never', ctx.signal);
      }, parent.signal)
      .then(
        () => 'resolved',
        (e: unknown) => e,
      );
    await clock.tickAsync(15 * 110 + 1000);
    const error = (await result) as BreakwaterError;
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('timeout');
    expect(calls).toBe(15);
    expect(listeners(parent.signal)).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('15 attempts whose fn ignores the signal and never settles: same', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const policy = pipeline(
      retry({ maxAttempts: 15, backoff: constantBackoff(10), clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    let calls = 0;
    const result = policy
      .execute((ctx) => {
        calls++;
        void ctx.signal; // reads it, ignores it
        return new Promise<string>(() => {});
      }, parent.signal)
      .then(
        () => 'resolved',
        (e: unknown) => (e as BreakwaterError).code,
      );
    await clock.tickAsync(15 * 110 + 1000);
    expect(await result).toBe('timeout');
    expect(calls).toBe(15);
    expect(listeners(parent.signal)).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('15 attempts failing transiently fast, each reading the signal: same', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const policy = pipeline(
      retry({ maxAttempts: 15, backoff: constantBackoff(10), clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    let calls = 0;
    const result = policy
      .execute((ctx) => {
        calls++;
        ctx.signal.addEventListener('abort', () => {}, { once: true });
        throw new BreakwaterError('upstream_unavailable');
      }, parent.signal)
      .then(
        () => 'resolved',
        (e: unknown) => (e as BreakwaterError).code,
      );
    await clock.tickAsync(15 * 10 + 200);
    expect(await result).toBe('upstream_unavailable');
    expect(calls).toBe(15);
    expect(listeners(parent.signal)).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('fn touching ctx.signal after its call completed', () => {
  it('reading ctx.signal after a successful timed call leaves no listener on the caller signal', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    let saved: PolicyContext | undefined;
    const value = await timeout({ timeoutMs: 100, clock }).execute((ctx) => {
      saved = ctx;
      return 'ok';
    }, parent.signal);
    expect(value).toBe('ok');
    // A late reader (a stream that outlives the call, a logger) touches the signal afterwards.
    const late = saved!.signal;
    expect(late.aborted).toBe(false);
    expect(listeners(parent.signal)).toBe(0);
    await clock.tickAsync(200);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('reading ctx.signal after a failed timed call leaves no listener on the caller signal', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    let saved: PolicyContext | undefined;
    await expect(
      timeout({ timeoutMs: 100, clock }).execute((ctx) => {
        saved = ctx;
        throw new Error('boom');
      }, parent.signal),
    ).rejects.toThrow('boom');
    void saved!.signal;
    expect(listeners(parent.signal)).toBe(0);
  });

  it('the same late read repeated in a 15-attempt retry loop leaves no listener', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const contexts: PolicyContext[] = [];
    const policy = pipeline(
      retry({ maxAttempts: 15, backoff: constantBackoff(0), clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    await expect(
      policy.execute((ctx) => {
        contexts.push(ctx);
        throw new BreakwaterError('upstream_unavailable');
      }, parent.signal),
    ).rejects.toMatchObject({ code: 'upstream_unavailable' });
    for (const ctx of contexts) void ctx.signal;
    expect(contexts).toHaveLength(15);
    expect(listeners(parent.signal)).toBe(0);
  });
});

describe('calls made without a caller signal', () => {
  it('timed calls that read ctx.signal add no listener to the shared never-aborted signal', async () => {
    const clock = new FakeClock();
    const limit = timeout({ timeoutMs: 100, clock });
    // 11 concurrent calls: one more than Node's EventTarget warning threshold.
    const base = listeners(neverAbortedSignal);
    const calls = Array.from({ length: 11 }, () => limit.execute((ctx) => sleep(clock, 10, ctx.signal)));
    // A listener there can never fire; 11 of them make Node print "MaxListenersExceededWarning: Possible
    // EventTarget memory leak detected" under ordinary load.
    const during = listeners(neverAbortedSignal) - base;
    await clock.tickAsync(200);
    await Promise.all(calls);
    expect(during).toBe(0);
    expect(listeners(neverAbortedSignal) - base).toBe(0);
  });

  it('hedged calls add no listener to the shared never-aborted signal', async () => {
    const clock = new FakeClock();
    const policy = hedging({ delayMs: 50, clock });
    const base = listeners(neverAbortedSignal);
    const calls = Array.from({ length: 11 }, () => policy.execute((ctx) => sleep(clock, 10, ctx.signal)));
    const during = listeners(neverAbortedSignal) - base;
    await clock.tickAsync(200);
    await Promise.all(calls);
    expect(during).toBe(0);
    expect(listeners(neverAbortedSignal) - base).toBe(0);
  });
});

describe('more waits without a caller signal', () => {
  it('retry backoff waits add no listener to the shared never-aborted signal', async () => {
    const clock = new FakeClock();
    const policy = retry({ maxAttempts: 2, backoff: constantBackoff(100), clock });
    const base = listeners(neverAbortedSignal);
    let n = 0;
    const calls = Array.from({ length: 11 }, () =>
      policy.execute(() => {
        if (++n <= 11) throw new BreakwaterError('upstream_unavailable');
        return 'ok';
      }),
    );
    await clock.tickAsync(0);
    const during = listeners(neverAbortedSignal) - base;
    await clock.tickAsync(200);
    await Promise.all(calls);
    expect(during).toBe(0);
    expect(listeners(neverAbortedSignal) - base).toBe(0);
  });

  it('injected latency adds no listener to the shared never-aborted signal', async () => {
    const clock = new FakeClock();
    const chaos = faultInjection({ latency: { rate: 1, ms: 100 }, clock });
    const base = listeners(neverAbortedSignal);
    const calls = Array.from({ length: 11 }, () => chaos.execute(() => 'ok'));
    const during = listeners(neverAbortedSignal) - base;
    await clock.tickAsync(200);
    await Promise.all(calls);
    expect(during).toBe(0);
  });
});

describe('hedging with a caller signal', () => {
  it('caller abort mid-flight: rejects with the reason, every call aborted, nothing left behind', async () => {
    const clock = new FakeClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 10, clock });
    const parent = new AbortController();
    const seen: unknown[] = [];
    const result = policy
      .execute(
        (ctx) =>
          new Promise<never>((_, reject) =>
            ctx.signal.addEventListener('abort', () => {
              seen.push(ctx.signal.reason);
              reject(ctx.signal.reason);
            }),
          ),
        parent.signal,
      )
      .catch((e: unknown) => e);
    await clock.tickAsync(25); // primary + 2 hedges running
    const reason = new BreakwaterError('canceled', { source: 'caller' });
    parent.abort(reason);
    expect(await result).toBe(reason);
    await clock.tickAsync(0);
    expect(seen).toEqual([reason, reason, reason]);
    expect(listeners(parent.signal)).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });
});
