import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  ConsecutiveWindow,
  bulkhead,
  circuitBreaker,
  constantBackoff,
  fallback,
  isBreakwaterError,
  hedging,
  pipeline,
  rateLimit,
  retry,
  timeout,
  type Policy,
} from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';

const all = (clock: FakeClock): Record<string, Policy> => ({
  timeout: timeout({ timeoutMs: 100, clock }),
  cooperative: timeout({ timeoutMs: 100, strategy: 'cooperative', clock }),
  retry: retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }),
  breaker: circuitBreaker({ clock }),
  bulkhead: bulkhead({ maxConcurrent: 1, clock }),
  hedging: hedging({ delayMs: 1000, clock }),
  rateLimit: rateLimit({ algorithm: { type: 'fixed_window', limit: 1000, windowMs: 1000 }, clock }),
  fallback: fallback({ value: 'stand-in', shouldFallback: () => false, clock }),
  pipeline: pipeline(
    bulkhead({ maxConcurrent: 1, clock }),
    retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }),
    circuitBreaker({ clock }),
    timeout({ timeoutMs: 100, clock }),
  ),
});

describe('fn returning a non-promise thenable', () => {
  it('a thenable that resolves is adopted by every policy', async () => {
    const clock = new FakeClock();
    for (const [name, policy] of Object.entries(all(clock))) {
      const value = await policy.execute(
        () => ({ then: (resolve: (v: number) => void) => resolve(7) }) as never,
      );
      expect(value, name).toBe(7);
    }
  });

  it('a thenable that rejects, or whose then() throws, rejects with that error', async () => {
    const clock = new FakeClock();
    const boom = new TypeError('bad thenable');
    for (const [name, policy] of Object.entries(all(clock))) {
      const rejects = await policy
        .execute(() => ({ then: (_: unknown, reject: (e: unknown) => void) => reject(boom) }) as never)
        .catch((e: unknown) => e);
      expect(rejects, `${name} rejecting thenable`).toBe(boom);
      const throws = await policy
        .execute(
          () =>
            ({
              then: () => {
                throw boom;
              },
            }) as never,
        )
        .catch((e: unknown) => e);
      expect(throws, `${name} throwing then()`).toBe(boom);
    }
  });

  it('a thenable that resolves twice and then rejects settles once with the first value', async () => {
    const clock = new FakeClock();
    for (const [name, policy] of Object.entries(all(clock))) {
      const value = await policy.execute(
        () =>
          ({
            then: (resolve: (v: string) => void, reject: (e: unknown) => void) => {
              resolve('first');
              resolve('second');
              reject(new Error('late'));
            },
          }) as never,
      );
      expect(value, name).toBe('first');
    }
  });
});

describe('fn that throws synchronously', () => {
  it('the bulkhead frees its slot and the breaker counts the failure', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(2), clock });
    const policy = pipeline(guard, breaker);
    for (let i = 0; i < 2; i++) {
      await expect(
        policy.execute(() => {
          throw new BreakwaterError('upstream_unavailable');
        }),
      ).rejects.toMatchObject({ code: 'upstream_unavailable' });
    }
    expect(guard.state()).toMatchObject({ inUse: 0, queued: 0 });
    expect(breaker.state().state).toBe('open');
  });
});

describe('fn that never settles and ignores its signal', () => {
  it('aggressive: the caller gets timeout at the limit; the signal was aborted with that error', async () => {
    const clock = new FakeClock();
    let signal: AbortSignal | undefined;
    const result = timeout({ timeoutMs: 100, clock })
      .execute((ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      })
      .catch((e: unknown) => e);
    await clock.tickAsync(100);
    const error = (await result) as BreakwaterError;
    expect(error.code).toBe('timeout');
    expect(signal!.aborted).toBe(true);
    expect(signal!.reason).toBe(error);
  });

  it('aggressive: a rejection arriving after the timeout is not reported as unhandled', async () => {
    const clock = new FakeClock();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const result = timeout({ timeoutMs: 100, clock })
        .execute(
          () => new Promise<never>((_, reject) => clock.setTimeout(() => reject(new Error('late')), 200)),
        )
        .catch((e: BreakwaterError) => e.code);
      await clock.tickAsync(300);
      expect(await result).toBe('timeout');
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('cooperative: the caller waits for fn; a value returned after the limit is kept', async () => {
    const clock = new FakeClock();
    const result = timeout({ timeoutMs: 100, strategy: 'cooperative', clock }).execute(
      (ctx) =>
        new Promise<string>((resolve) => {
          ctx.signal.addEventListener('abort', () => clock.setTimeout(() => resolve('finished anyway'), 50));
        }),
    );
    await clock.tickAsync(200);
    await expect(result).resolves.toBe('finished anyway');
  });

  it('cooperative: a rejection after the limit becomes timeout with the cause kept', async () => {
    const clock = new FakeClock();
    const result = timeout({ timeoutMs: 100, strategy: 'cooperative', clock })
      .execute(
        (ctx) =>
          new Promise<never>((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(new Error('stopped')));
          }),
      )
      .catch((e: unknown) => e);
    await clock.tickAsync(100);
    const error = (await result) as BreakwaterError;
    expect(error.code).toBe('timeout');
    expect((error.cause as Error).message).toBe('stopped');
  });
});

describe('fn that fails instantly, forever', () => {
  it('retry with maxAttempts Infinity and a zero backoff still lets timers run, so a caller abort stops it', async () => {
    // Real system clock on purpose: the question is whether the loop ever yields to the event loop.
    const controller = new AbortController();
    let calls = 0;
    const result = retry({ maxAttempts: Infinity, backoff: constantBackoff(0) })
      .execute(() => {
        // Guard so a livelocked loop ends the test instead of freezing the worker.
        if (++calls >= 20_000) throw new TypeError('guard: the event loop never ran');
        return Promise.reject(new BreakwaterError('upstream_unavailable'));
      }, controller.signal)
      .catch((e: unknown) => e);
    setImmediate(() => controller.abort(new BreakwaterError('canceled')));
    const error = await result;
    expect(error).not.toBeInstanceOf(TypeError);
    expect(isBreakwaterError(error)).toBe(true);
  });
});

describe('a caller that aborted before the call', () => {
  it('the documented pipeline never calls fn (and spends no rate-limit quota) for an already-aborted signal', async () => {
    const clock = new FakeClock();
    const limiter = rateLimit({ algorithm: { type: 'fixed_window', limit: 1, windowMs: 1000 }, clock });
    const policy = pipeline(
      limiter,
      bulkhead({ maxConcurrent: 10, clock }),
      retry({ maxAttempts: 3, clock }),
      circuitBreaker({ clock }),
      timeout({ timeoutMs: 100, clock }),
    );
    const controller = new AbortController();
    const reason = new BreakwaterError('canceled', { source: 'caller' });
    controller.abort(reason);
    let calls = 0;
    const error = await policy
      .execute(() => {
        calls++; // e.g. a POST that ignores the signal
        return 'sent';
      }, controller.signal)
      .catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(calls).toBe(0);
    // The quota is still there for a caller that did not give up.
    await expect(policy.execute(() => 'ok')).resolves.toBe('ok');
  });
});
