import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  ConsecutiveWindow,
  circuitBreaker,
  sleep,
  toProblem,
  type CircuitBreakerPolicy,
  type CircuitStateChange,
} from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';

const fail = (): never => {
  throw new BreakwaterError('upstream_unavailable');
};

async function trip(breaker: CircuitBreakerPolicy, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await breaker.execute(fail).catch(() => undefined);
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('circuit breaker under concurrency', () => {
  it('a success of a call started before the breaker opened does not close or count', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(3), openDurationMs: 1000, clock });
    const slow = deferred<string>();
    const early = breaker.execute(() => slow.promise);
    await trip(breaker, 3);
    expect(breaker.state().state).toBe('open');
    slow.resolve('late');
    await expect(early).resolves.toBe('late');
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 1 });
  });

  it('a failure of a call started before reset() is not counted after it', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), openDurationMs: 1000, clock });
    const slow = deferred<string>();
    const early = breaker.execute(() => slow.promise).catch((e: BreakwaterError) => e.code);
    breaker.reset();
    slow.reject(new BreakwaterError('upstream_unavailable'));
    expect(await early).toBe('upstream_unavailable');
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 0, failures: 0, slow: 0 } });
  });

  it('reset() during a half-open trial: the trial result is ignored and the next call is admitted', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), openDurationMs: 1000, clock });
    await trip(breaker, 1);
    clock.tick(1000);
    const trial = deferred<string>();
    const running = breaker.execute(() => trial.promise).catch((e: BreakwaterError) => e.code);
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 1 });
    breaker.reset();
    trial.reject(new BreakwaterError('upstream_unavailable'));
    expect(await running).toBe('upstream_unavailable');
    expect(breaker.state()).toMatchObject({ state: 'closed', trialsInFlight: 0, consecutiveOpens: 0 });
    await expect(breaker.execute(() => 'next')).resolves.toBe('next');
  });

  it('isolate() then reset(): isolated rejects without a retry hint; reset closes and admits', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ name: 'gift-service', openDurationMs: 1000, clock });
    const changes: CircuitStateChange[] = [];
    breaker.onStateChange((e) => changes.push(e));
    const inflight = deferred<string>();
    const running = breaker.execute(() => inflight.promise);
    breaker.isolate();
    breaker.isolate(); // idempotent
    const error = (await breaker.execute(() => 'x').catch((e: unknown) => e)) as BreakwaterError;
    expect(error.code).toBe('circuit_open');
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.details).toEqual({ circuit_state: 'isolated' });
    expect(toProblem(error)).toMatchObject({ status: 503, retry_after_ms: null, circuit_state: 'isolated' });
    clock.tick(1_000_000);
    expect(breaker.state().state).toBe('isolated');
    inflight.resolve('done');
    await running;
    breaker.reset();
    expect(breaker.state()).toMatchObject({ state: 'closed', openedAt: null, consecutiveOpens: 0 });
    await expect(breaker.execute(() => 'ok')).resolves.toBe('ok');
    expect(changes.map((c) => `${c.from}>${c.to}:${c.reason}`)).toEqual([
      'closed>isolated:isolated',
      'isolated>closed:reset',
    ]);
  });

  it('half-open with permittedCalls 3 and 10 concurrent calls: 3 trials, 7 fast rejections, then closed', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(1),
      openDurationMs: 5000,
      permittedCalls: 3,
      clock,
    });
    await trip(breaker, 1);
    clock.tick(5000);
    let started = 0;
    const calls = Array.from({ length: 10 }, () =>
      breaker
        .execute(async () => {
          started++;
          await sleep(clock, 10);
          return 'ok';
        })
        .catch((e: BreakwaterError) => `${e.code}:${e.retryAfterMs}:${String(e.details?.circuit_state)}`),
    );
    expect(started).toBe(3);
    expect(breaker.state()).toMatchObject({ state: 'half-open', trialsInFlight: 3 });
    await clock.tickAsync(10);
    const results = await Promise.all(calls);
    expect(results.filter((r) => r === 'ok')).toHaveLength(3);
    expect(results.filter((r) => r === 'circuit_open:5000:half-open')).toHaveLength(7);
    expect(breaker.state()).toMatchObject({ state: 'closed', trialsInFlight: 0, trialSuccesses: 0 });
  });

  it('half-open with permittedCalls 3: one failing trial reopens once; the other two results are ignored', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      window: new ConsecutiveWindow(1),
      openDurationMs: 1000,
      openBackoff: { multiplier: 2, maxMs: 10_000 },
      permittedCalls: 3,
      clock,
    });
    const changes: string[] = [];
    breaker.onStateChange((e) => changes.push(`${e.from}>${e.to}`));
    await trip(breaker, 1);
    clock.tick(1000);
    const trials = [deferred<string>(), deferred<string>(), deferred<string>()];
    const running = trials.map((d) => breaker.execute(() => d.promise).catch(() => 'failed'));
    trials[0]!.reject(new BreakwaterError('upstream_unavailable'));
    await running[0];
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 2, openDurationMs: 2000 });
    trials[1]!.reject(new BreakwaterError('upstream_unavailable'));
    trials[2]!.resolve('ok');
    await Promise.all(running);
    expect(breaker.state()).toMatchObject({ state: 'open', consecutiveOpens: 2, trialsInFlight: 0 });
    expect(changes).toEqual(['closed>open', 'open>half-open', 'half-open>open']);
  });

  it('open-state retry_after_ms is exact to the ms and the message says the dependency name', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      name: 'gift-service',
      window: new ConsecutiveWindow(1),
      openDurationMs: 20_000,
      clock,
    });
    await trip(breaker, 1);
    const hint = async (): Promise<number | undefined> =>
      ((await breaker.execute(() => 1).catch((e: unknown) => e)) as BreakwaterError).retryAfterMs;
    expect(await hint()).toBe(20_000);
    clock.tick(1);
    expect(await hint()).toBe(19_999);
    clock.tick(19_998);
    expect(await hint()).toBe(1);
    expect(breaker.state().retryAfterMs).toBe(1);
    const error = (await breaker.execute(() => 1).catch((e: unknown) => e)) as BreakwaterError;
    expect(error.message).toBe(
      'gift-service is temporarily unavailable after repeated failures; try again in about 1 second.',
    );
    clock.tick(1);
    await expect(breaker.execute(() => 'trial')).resolves.toBe('trial');
  });

  it('snapshot/restore round trip through JSON keeps the absolute reopen time', async () => {
    const clock = new FakeClock();
    const options = {
      window: new ConsecutiveWindow(1),
      openDurationMs: 10_000,
      openBackoff: { multiplier: 3, maxMs: 100_000 },
      clock,
    };
    const a = circuitBreaker(options);
    await trip(a, 1);
    clock.tick(10_000);
    await a.execute(fail).catch(() => undefined); // failed trial: second open, 30 s
    clock.tick(4000);
    const snap = JSON.parse(JSON.stringify(a.snapshot()));
    expect(snap).toMatchObject({ version: 1, state: 'open', consecutiveOpens: 2, openDurationMs: 30_000 });

    const b = circuitBreaker({ ...options, window: new ConsecutiveWindow(1) });
    b.restore(snap);
    const err = (await b.execute(() => 1).catch((e: unknown) => e)) as BreakwaterError;
    expect(err.retryAfterMs).toBe(26_000);
    expect(b.snapshot()).toEqual({ ...a.snapshot() });
    clock.tick(26_000);
    await b.execute(fail).catch(() => undefined); // failed trial: third open, 90 s
    expect(b.state()).toMatchObject({ state: 'open', consecutiveOpens: 3, openDurationMs: 90_000 });

    // A snapshot of an isolated breaker restores to isolated; a closed one to closed.
    a.isolate();
    const c = circuitBreaker({ clock });
    c.restore(JSON.parse(JSON.stringify(a.snapshot())));
    expect(c.state().state).toBe('isolated');
    c.restore(JSON.parse(JSON.stringify(circuitBreaker({ clock }).snapshot())));
    expect(c.state()).toMatchObject({ state: 'closed', consecutiveOpens: 0, openedAt: null });
  });

  it('restore() rejects a malformed snapshot and leaves the breaker unchanged', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(1), clock });
    await trip(breaker, 1);
    const before = breaker.snapshot();
    expect(() => breaker.restore({ ...before, state: 'opened' as never })).toThrow(RangeError);
    expect(() => breaker.restore({ ...before, halfOpenAt: Number.NaN })).toThrow(/halfOpenAt/);
    expect(() => breaker.restore(null as never)).toThrow(RangeError);
    expect(breaker.snapshot()).toEqual(before);
  });
});
