import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { ConsecutiveWindow } from './breaker-windows.js';
import { circuitBreaker, type CircuitBreakerPolicy } from './circuit-breaker.js';
import type { Next, PolicyContext } from './types.js';

const T0 = Date.UTC(2026, 0, 1);

function unavailable(): BreakwaterError {
  return new BreakwaterError('upstream_unavailable');
}

async function fail(breaker: CircuitBreakerPolicy, signal?: AbortSignal): Promise<void> {
  await breaker.execute(() => Promise.reject(unavailable()), signal).catch(() => {});
}

/** A call that settles only when its signal aborts, rejecting with the signal's reason (as fetch does). */
function untilAborted(ctx: PolicyContext): Promise<never> {
  return new Promise<never>((_, reject) => {
    ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as unknown), { once: true });
  });
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

async function settled(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => value,
    (error: unknown) => error,
  );
}

describe('CircuitBreakerPolicy: caller aborts', () => {
  it('two caller aborts (a plain Error, a string) with ConsecutiveWindow(1) leave it closed', async () => {
    for (const isFailureResult of [undefined, () => false]) {
      const breaker = circuitBreaker({
        window: new ConsecutiveWindow(1),
        isFailureResult,
        clock: new FakeClock(),
      });
      const reasons: unknown[] = [new Error('user left'), 'stop'];
      for (const reason of reasons) {
        const controller = new AbortController();
        const call = settled(breaker.execute(untilAborted, controller.signal));
        controller.abort(reason);
        expect(await call).toBe(reason);
      }
      expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 0, failures: 0 } });
      // The same errors without an abort are dependency failures.
      await breaker.execute(() => Promise.reject(new Error('user left'))).catch(() => {});
      expect(breaker.state().state).toBe('open');
    }
  });

  it('a real dependency failure still counts when the caller passed a signal that did not abort', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), openDurationMs: 1000, clock });
    const controller = new AbortController();
    await fail(breaker, controller.signal);
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 1 });
    clock.tick(1000);
    await fail(breaker, controller.signal);
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 2 });
  });

  it('an aborted half-open trial frees its slot without reopening', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), openDurationMs: 1000, clock });
    const changes: string[] = [];
    breaker.onStateChange((e) => changes.push(`${e.to}:${e.reason}`));
    await fail(breaker);
    clock.tick(1000);
    const controller = new AbortController();
    const trial = settled(breaker.execute(untilAborted, controller.signal));
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1 });
    controller.abort(new Error('user left'));
    expect(await trial).toEqual(new Error('user left'));
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 0, trialsSince: null });
    await expect(breaker.execute(() => 'ok')).resolves.toBe('ok');
    expect(changes).toEqual([
      'open:consecutive_failures',
      'half-open:open_elapsed',
      'closed:trials_succeeded',
    ]);
  });

  it('reads ctx.signal at most once per call, and only when it needs it', async () => {
    const clock = new FakeClock();
    let reads = 0;
    const signal = new AbortController().signal;
    const ctx: PolicyContext = {
      get signal() {
        reads++;
        return signal;
      },
      attempt: 1,
      deadlineAt: Infinity,
    };
    const ok: Next<string> = { invoke: () => Promise.resolve('ok') };
    const broken: Next<string> = { invoke: () => Promise.reject(unavailable()) };
    const count = async (breaker: CircuitBreakerPolicy, next: Next<string>): Promise<number> => {
      reads = 0;
      await breaker.run(ctx, next, 0).catch(() => {});
      return reads;
    };
    const plain = circuitBreaker({ window: new ConsecutiveWindow(2), openDurationMs: 1000, clock });
    expect([await count(plain, ok), await count(plain, broken)]).toEqual([1, 1]);
    const judging = circuitBreaker({ window: new ConsecutiveWindow(1), isFailureResult: () => false, clock });
    expect([await count(judging, ok), await count(judging, broken)]).toEqual([0, 1]);
    await count(plain, broken); // opens it
    expect(await count(plain, ok)).toBe(0); // rejected
    clock.tick(1000);
    expect(await count(plain, broken)).toBe(1); // failed trial
    clock.tick(2000);
    expect(await count(plain, ok)).toBe(0); // successful trial
    expect(plain.state().state).toBe('closed');
  });
});

describe('CircuitBreakerPolicy: hung half-open trials', () => {
  it('a call at halfOpenMaxWaitMs (default: the open period) reopens it; the late result is ignored', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      name: 'gift-service',
      window: new ConsecutiveWindow(1),
      openDurationMs: 10_000,
      openBackoff: { multiplier: 2, maxMs: 60_000 },
      clock,
    });
    const changes: string[] = [];
    breaker.onStateChange((e) => changes.push(`${e.from}>${e.to}:${e.reason}@${e.at - T0}`));
    await fail(breaker);
    clock.tick(10_000);
    const hung = deferred<string>();
    const first = breaker.execute(() => hung.promise);
    expect(breaker.state()).toMatchObject({
      state: 'half-open',
      trialsInFlight: 1,
      trialsSince: T0 + 10_000,
      halfOpenMaxWaitMs: 10_000,
    });

    clock.tick(9_999);
    let calls = 0;
    const early = (await settled(breaker.execute(() => calls++))) as BreakwaterError;
    expect(early).toMatchObject({ code: 'circuit_open', retryAfterMs: 20_000 });
    expect(early.details).toEqual({ circuit_state: 'half-open' });

    clock.tick(1);
    const late = (await settled(breaker.execute(() => calls++))) as BreakwaterError;
    expect(late).toMatchObject({ code: 'circuit_open', retryAfterMs: 20_000 });
    expect(late.details).toEqual({ circuit_state: 'open' });
    expect(calls).toBe(0);
    expect(breaker.state()).toMatchObject({
      state: 'open',
      openedAt: T0 + 20_000,
      halfOpenAt: T0 + 40_000,
      openDurationMs: 20_000,
      consecutiveOpens: 2,
      trialsInFlight: 0,
      trialsSince: null,
      halfOpenMaxWaitMs: 20_000,
    });

    // Next half-open period: the hung trial's late success neither closes it nor counts as a trial.
    clock.tick(20_000);
    const next = deferred<string>();
    const second = breaker.execute(() => next.promise);
    hung.resolve('late');
    await expect(first).resolves.toBe('late');
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1, trialSuccesses: 0 });
    next.resolve('ok');
    await expect(second).resolves.toBe('ok');
    expect(breaker.state().state).toBe('closed');
    expect(changes).toEqual([
      'closed>open:consecutive_failures@0',
      'open>half-open:open_elapsed@10000',
      'half-open>open:trial_timeout@20000',
      'open>half-open:open_elapsed@40000',
      'half-open>closed:trials_succeeded@40000',
    ]);
  });

  it('with several slots, waits only while all are taken, from the first trial of the batch', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(1),
      openDurationMs: 1000,
      permittedCalls: 2,
      halfOpenMaxWaitMs: 500,
      clock,
    });
    await fail(breaker);
    clock.tick(1000);
    const first = deferred<string>();
    void breaker.execute(() => first.promise);
    clock.tick(600); // one slot still free: no verdict yet
    const second = breaker.execute(() => 'quick');
    await expect(second).resolves.toBe('quick');
    const third = breaker.execute(() => new Promise<never>(() => {}));
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 2, trialsSince: T0 + 1000 });
    // The third trial is new, but the batch started with the first one 600 ms ago.
    const rejected = (await settled(breaker.execute(() => 'x'))) as BreakwaterError;
    expect(rejected).toMatchObject({ code: 'circuit_open', retryAfterMs: 1000 });
    expect(breaker.state()).toMatchObject({ state: 'open', openedAt: T0 + 1600, halfOpenAt: T0 + 2600 });
    first.resolve('late');
    void third;
    await Promise.resolve();
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 2, halfOpenMaxWaitMs: 500 });
  });

  it('validates halfOpenMaxWaitMs, naming it; reports it in state()', () => {
    for (const bad of [0, -1, Infinity, Number.NaN, '500' as never]) {
      expect(() => circuitBreaker({ halfOpenMaxWaitMs: bad })).toThrow(/halfOpenMaxWaitMs/);
      expect(() => circuitBreaker({ halfOpenMaxWaitMs: bad })).toThrow(RangeError);
    }
    const clock = new FakeClock();
    expect(circuitBreaker({ clock }).state()).toMatchObject({ halfOpenMaxWaitMs: null, trialsSince: null });
    const fixed = circuitBreaker({ halfOpenMaxWaitMs: 250, clock });
    expect(fixed.halfOpenMaxWaitMs).toBe(250);
    expect(fixed.state().halfOpenMaxWaitMs).toBe(250);
    const snapshot = { ...fixed.snapshot(), state: 'half-open' as const, openedAt: T0, halfOpenAt: T0 };
    expect(() => fixed.restore({ ...snapshot, openDurationMs: 0, consecutiveOpens: 1 })).toThrow(
      /snapshot\.openDurationMs/,
    );
  });
});
