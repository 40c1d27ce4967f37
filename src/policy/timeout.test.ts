import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock } from '../core/index.js';
import { timeout } from './timeout.js';

function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

describe('TimeoutPolicy', () => {
  it('rejects with timeout at exactly timeoutMs in aggressive mode and aborts the signal', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 1000, clock });
    let seen: AbortSignal | undefined;
    const result = policy.execute((ctx) => {
      seen = ctx.signal;
      return never<string>();
    });
    const settled = result.catch((e: unknown) => e);
    await clock.tickAsync(999);
    expect(seen!.aborted).toBe(false);
    await clock.tickAsync(1);
    const error = (await settled) as BreakwaterError;
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('timeout');
    expect(error.status).toBe(504);
    expect(error.details).toEqual({ timeout_ms: 1000 });
    expect(seen!.aborted).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('returns the value when fn resolves in time; its shared timer then lapses without firing anything', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 1000, clock });
    const events: unknown[] = [];
    policy.onTimeout((e) => events.push(e));
    await expect(policy.execute(() => 42)).resolves.toBe(42);
    await expect(policy.execute(() => 43)).resolves.toBe(43);
    // One clock timer serves every call in flight; removing a finished call does not touch the clock.
    expect(clock.pendingTimers()).toBe(1);
    expect(policy.timers.size).toBe(0);
    await clock.tickAsync(1000);
    expect(clock.pendingTimers()).toBe(0);
    expect(events).toEqual([]);
  });

  it('with the system clock, an idle policy leaves no timer that keeps the process alive', async () => {
    const policy = timeout({ timeoutMs: 60_000 });
    const refTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = refTimers();
    let during = 0;
    await policy.execute(() => {
      during = refTimers();
      return 'ok';
    });
    expect(during).toBe(before + 1);
    expect(refTimers()).toBe(before);
  });

  it('calls with different limits each fire at their own time from one shared timer', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const policy = timeout({ timeoutMs: 1000, clock });
    const firedAt: number[] = [];
    const record = (p: Promise<unknown>): Promise<void> =>
      p.then(
        () => undefined,
        () => {
          firedAt.push(clock.now() - start);
        },
      );
    const a = record(policy.execute(() => never<void>()));
    await clock.tickAsync(300);
    const b = record(Deadline.run(500, () => policy.execute(() => never<void>()), clock)); // 450 ms left
    await clock.tickAsync(100);
    const c = record(policy.execute(() => never<void>()));
    await clock.tickAsync(2000);
    await Promise.all([a, b, c]);
    expect(firedAt).toEqual([750, 1000, 1400]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('cooperative mode waits for fn and turns its abort rejection into timeout', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 500, strategy: 'cooperative', clock });
    const result = policy
      .execute(
        (ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () =>
              clock.setTimeout(() => reject(new Error('stopped')), 20),
            );
          }),
      )
      .catch((e: unknown) => e);
    await clock.tickAsync(500);
    await clock.tickAsync(20);
    const error = (await result) as BreakwaterError;
    expect(error.code).toBe('timeout');
    expect((error.cause as Error).message).toBe('stopped');
    expect(clock.now() - Date.UTC(2026, 0, 1)).toBe(520);
  });

  it('cooperative mode keeps a value returned after the limit', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 100, strategy: 'cooperative', clock });
    const result = policy.execute(
      () => new Promise<string>((resolve) => clock.setTimeout(() => resolve('late'), 150)),
    );
    await clock.tickAsync(150);
    await expect(result).resolves.toBe('late');
  });

  it('an inner 4 s timeout under an outer 1 s deadline fires at 1 s minus the margin with deadline_exceeded', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const policy = timeout({ timeoutMs: 4000, clock });
    let firedAt = 0;
    const result = Deadline.run(1000, () => policy.execute(() => never<void>()), clock).catch(
      (e: unknown) => {
        firedAt = clock.now() - start;
        return e;
      },
    );
    await clock.tickAsync(4000);
    const error = (await result) as BreakwaterError;
    expect(error.code).toBe('deadline_exceeded');
    expect(firedAt).toBe(950);
  });

  it('fails fast without calling fn when no useful time is left', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 4000, deadlineMarginMs: 50, clock });
    let calls = 0;
    const error = await Deadline.run(
      40,
      () =>
        policy.execute(() => {
          calls++;
        }),
      clock,
    ).catch((e: unknown) => e);
    expect((error as BreakwaterError).code).toBe('deadline_exceeded');
    expect(calls).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('propagates the parent signal lazily and detaches from it afterwards', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 1000, clock });
    const parent = new AbortController();
    let inner: AbortSignal | undefined;
    const result = policy
      .execute((ctx) => {
        inner = ctx.signal;
        return new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      }, parent.signal)
      .catch((e: unknown) => e);
    parent.abort(new Error('caller left'));
    expect(((await result) as Error).message).toBe('caller left');
    expect(inner!.aborted).toBe(true);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    expect(policy.timers.size).toBe(0);
  });

  it('emits a timeout event and validates options at construction', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 10, clock, name: 'gift-service' });
    const events: unknown[] = [];
    policy.onTimeout((e) => events.push(e));
    const result = policy.execute(() => never<void>()).catch(() => undefined);
    await clock.tickAsync(10);
    await result;
    expect(events).toEqual([{ name: 'gift-service', code: 'timeout', afterMs: 10 }]);
    expect(() => timeout({ timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => timeout({ timeoutMs: 5, deadlineMarginMs: -1 })).toThrow(/deadlineMarginMs/);
  });
});

describe('TimeoutPolicy and the caller signal', () => {
  it('aggressive: a caller abort answers at once with its reason even when fn ignores its signal', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 4000, clock });
    const events: unknown[] = [];
    policy.onTimeout((e) => events.push(e));
    const caller = new AbortController();
    const result = policy.execute(() => never<void>(), caller.signal).catch((e: unknown) => e);
    await clock.tickAsync(100);
    caller.abort(new Error('user closed the tab'));
    expect(((await result) as Error).message).toBe('user closed the tab');
    expect(clock.now() - Date.UTC(2026, 0, 1)).toBe(100);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    expect(policy.timers.size).toBe(0);
    await clock.tickAsync(4000);
    expect(events).toEqual([]);
  });

  it('cooperative: a caller abort reaches fn through its signal and fn decides', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 4000, strategy: 'cooperative', clock });
    const caller = new AbortController();
    const result = policy
      .execute(
        (ctx) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))),
          ),
        caller.signal,
      )
      .catch((e: unknown) => e);
    caller.abort(new Error('gone'));
    expect(((await result) as Error).message).toBe('stopped');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
