import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, retryAfterHeader } from '../core/index.js';
import { ConsecutiveWindow, CountWindow, type BreakerWindow } from './breaker-windows.js';
import { circuitBreaker, isDependencyFailure, type CircuitBreakerPolicy } from './circuit-breaker.js';
import type { CircuitBreakerSnapshot } from './circuit-breaker-types.js';
import { pipeline } from './pipeline.js';

const T0 = Date.UTC(2026, 0, 1);

async function fail(breaker: CircuitBreakerPolicy, n = 1): Promise<void> {
  for (let i = 0; i < n; i++) {
    await breaker.execute(() => Promise.reject(new BreakwaterError('upstream_unavailable'))).catch(() => {});
  }
}

async function rejection(promise: Promise<unknown>): Promise<BreakwaterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BreakwaterError);
  expect((error as BreakwaterError).code).toBe('circuit_open');
  return error as BreakwaterError;
}

describe('CircuitBreakerPolicy: rejections', () => {
  it('rejects in every non-closed state with a BreakwaterError naming the dependency', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      name: 'gift-service',
      window: new ConsecutiveWindow(1),
      openDurationMs: 20_000,
      clock,
    });
    await fail(breaker);
    const open = await rejection(breaker.execute(() => 'x'));
    expect(open).toMatchObject({
      status: 503,
      kind: 'transient',
      source: 'gift-service',
      retryAfterMs: 20_000,
    });
    expect(open.message).toBe(
      'gift-service is temporarily unavailable after repeated failures; try again in about 20 seconds.',
    );
    expect(retryAfterHeader(open)).toBe('20');
    expect(open.details).toEqual({ circuit_state: 'open' });

    clock.tick(20_000);
    const trial = breaker.execute(() => new Promise<never>(() => {}));
    const halfOpen = await rejection(breaker.execute(() => 'x'));
    expect(halfOpen).toMatchObject({ retryAfterMs: 20_000, details: { circuit_state: 'half-open' } });
    void trial;

    breaker.isolate();
    const isolated = await rejection(breaker.execute(() => 'x'));
    expect(isolated.retryAfterMs).toBeUndefined();
    expect(isolated.details).toEqual({ circuit_state: 'isolated' });
    expect(isolated.message).toBe('gift-service is temporarily unavailable: it was isolated by an operator.');
  });

  it('uses the generic sentence without a name; builds rejections without a stack by default', async () => {
    const clock = new FakeClock();
    const cheap = circuitBreaker({ window: new ConsecutiveWindow(1), clock });
    const full = circuitBreaker({ window: new ConsecutiveWindow(1), clock, captureRejectionStack: true });
    await fail(cheap);
    await fail(full);
    const limit = Error.stackTraceLimit;
    const a = await rejection(cheap.execute(() => 'x'));
    expect(Error.stackTraceLimit).toBe(limit);
    expect(a.source).toBe('circuit-breaker');
    expect(a.message).toBe(
      'The service is temporarily unavailable after repeated failures; try again in about 30 seconds.',
    );
    expect(a.stack).toBe(`BreakwaterError: ${a.message}`);
    const b = await rejection(full.execute(() => 'x'));
    expect(b.stack).toContain('\n    at ');
  });

  it('works inside a pipeline and emits rejected, success and failure events', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ name: 'commerce', window: new ConsecutiveWindow(2), clock });
    const seen: unknown[] = [];
    breaker.onSuccess((e) => seen.push(['success', e]));
    breaker.onFailure((e) => seen.push(['failure', e.state, (e.error as BreakwaterError).code]));
    const off = breaker.onRejected((e) => seen.push(['rejected', e]));
    const p = pipeline(breaker);
    await expect(p.execute(() => 1)).resolves.toBe(1);
    await fail(breaker, 2);
    await rejection(p.execute(() => 2));
    off.dispose();
    await rejection(p.execute(() => 3));
    expect(seen).toEqual([
      ['success', { name: 'commerce', state: 'closed', durationMs: undefined }],
      ['failure', 'closed', 'upstream_unavailable'],
      ['failure', 'closed', 'upstream_unavailable'],
      ['rejected', { name: 'commerce', state: 'open', retryAfterMs: 30_000 }],
    ]);
  });
});

describe('CircuitBreakerPolicy: manual control and events', () => {
  it('lists the exact transitions of a full cycle', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ name: 'gift-service', window: new ConsecutiveWindow(2), clock });
    const changes: unknown[] = [];
    breaker.onStateChange((e) => changes.push(e));
    await fail(breaker, 2);
    clock.tick(45_000); // noticed late: the event still says when the open period ended
    await breaker.execute(() => 'ok');
    breaker.isolate();
    breaker.isolate();
    breaker.reset();
    breaker.reset();
    const e = (from: string, to: string, reason: string, at: number) => ({
      name: 'gift-service',
      from,
      to,
      reason,
      at: T0 + at,
    });
    expect(changes).toEqual([
      e('closed', 'open', 'consecutive_failures', 0),
      e('open', 'half-open', 'open_elapsed', 30_000),
      e('half-open', 'closed', 'trials_succeeded', 45_000),
      e('closed', 'isolated', 'isolated', 45_000),
      e('isolated', 'closed', 'reset', 45_000),
    ]);
  });

  it('isolate holds it open until reset; reset clears the window', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ window: new ConsecutiveWindow(3), clock });
    await fail(breaker, 2);
    breaker.isolate();
    clock.tick(24 * 3600_000);
    let calls = 0;
    await rejection(breaker.execute(() => calls++));
    expect(calls).toBe(0);
    expect(breaker.state()).toMatchObject({ state: 'isolated', openedAt: T0, retryAfterMs: null });
    breaker.reset();
    expect(breaker.state()).toMatchObject({ state: 'closed', window: { calls: 0, failures: 0 } });
    await expect(breaker.execute(() => calls++)).resolves.toBe(0);
    await fail(breaker, 2);
    expect(breaker.state().state).toBe('closed');
  });

  it('snapshot/restore keeps the remaining open time across breakers', async () => {
    const clock = new FakeClock();
    const a = circuitBreaker({ name: 'gift-service', window: new ConsecutiveWindow(1), clock });
    await fail(a);
    clock.tick(10_000);
    const snapshot = JSON.parse(JSON.stringify(a.snapshot())) as CircuitBreakerSnapshot;
    expect(snapshot).toEqual({
      version: 1,
      name: 'gift-service',
      state: 'open',
      openedAt: T0,
      halfOpenAt: T0 + 30_000,
      openDurationMs: 30_000,
      consecutiveOpens: 1,
      takenAt: T0 + 10_000,
    });
    clock.tick(5_000);
    const b = circuitBreaker({ name: 'gift-service', window: new ConsecutiveWindow(1), clock });
    const changes: string[] = [];
    b.onStateChange((e) => changes.push(`${e.from}>${e.to}:${e.reason}@${e.at - T0}`));
    b.restore(snapshot);
    expect((await rejection(b.execute(() => 'x'))).retryAfterMs).toBe(15_000);
    clock.tick(14_999);
    expect(b.state().state).toBe('open');
    clock.tick(1);
    expect(b.state()).toMatchObject({ state: 'half-open', consecutiveOpens: 1 });
    expect(changes).toEqual(['closed>open:restored@15000', 'open>half-open:open_elapsed@30000']);

    b.restore({ ...snapshot, state: 'closed', openedAt: null, halfOpenAt: null, openDurationMs: null });
    expect(b.state()).toMatchObject({ state: 'closed', consecutiveOpens: 0, openedAt: null });
  });

  it('restore rejects a malformed snapshot, naming the field, and leaves the breaker as it was', () => {
    const breaker = circuitBreaker({ clock: new FakeClock() });
    const good = breaker.snapshot();
    expect(() => breaker.restore({ ...good, state: 'ajar' as never })).toThrow(/snapshot\.state/);
    expect(() => breaker.restore({ ...good, version: 2 as never })).toThrow(/snapshot\.version/);
    expect(() => breaker.restore({ ...good, state: 'open' })).toThrow(/snapshot\.openedAt/);
    expect(() =>
      breaker.restore({ ...good, state: 'open', openedAt: T0, halfOpenAt: T0 + 1, openDurationMs: 1 }),
    ).toThrow(/snapshot\.consecutiveOpens/);
    expect(breaker.state().state).toBe('closed');
  });
});

describe('CircuitBreakerPolicy: options', () => {
  it('validates options at construction, naming the option', () => {
    const bad: [Parameters<typeof circuitBreaker>[0], RegExp][] = [
      [{ openDurationMs: 0 }, /openDurationMs/],
      [{ openDurationMs: Infinity }, /openDurationMs/],
      [{ openBackoff: { multiplier: 0.5, maxMs: 60_000 } }, /openBackoff\.multiplier/],
      [{ openBackoff: { maxMs: 1000 } }, /openBackoff\.maxMs/],
      [{ permittedCalls: 0 }, /permittedCalls/],
      [{ permittedCalls: 1.5 }, /permittedCalls/],
      [{ successesToClose: 0 }, /successesToClose/],
      [{ isFailure: 'yes' as never }, /isFailure/],
      [{ isFailureResult: 1 as never }, /isFailureResult/],
      [{ window: {} as BreakerWindow }, /window/],
    ];
    for (const [options, message] of bad) expect(() => circuitBreaker(options)).toThrow(message);
    expect(() => circuitBreaker({ openDurationMs: -1 })).toThrow(RangeError);
    expect(circuitBreaker({ permittedCalls: 3 }).successesToClose).toBe(3);
    expect(circuitBreaker().state()).toMatchObject({
      name: 'circuit-breaker',
      state: 'closed',
      openedAt: null,
      halfOpenAt: null,
      retryAfterMs: null,
      openDurationMs: null,
      consecutiveOpens: 0,
      window: { calls: 0, failures: 0, slow: 0 },
    });
  });

  it('isDependencyFailure counts transient dependency failures only', () => {
    expect(isDependencyFailure(new BreakwaterError('timeout'))).toBe(true);
    expect(isDependencyFailure(Object.assign(new Error('x'), { status: 502 }))).toBe(true);
    expect(isDependencyFailure(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isDependencyFailure(Object.assign(new Error('x'), { status: 404 }))).toBe(false);
    expect(isDependencyFailure(new BreakwaterError('bulkhead_full'))).toBe(false);
    expect(isDependencyFailure(new RangeError('bug'))).toBe(false);
  });

  it('a count window with slow-call detection reports durations in failure events', async () => {
    const clock = new FakeClock();
    const window = new CountWindow({ size: 2, slowCallDurationMs: 50 });
    const breaker = circuitBreaker({ window, clock });
    const durations: (number | undefined)[] = [];
    breaker.onFailure((e) => durations.push(e.durationMs));
    const call = breaker
      .execute(
        () =>
          new Promise((_, reject) =>
            clock.setTimeout(() => reject(new BreakwaterError('upstream_unavailable')), 70),
          ),
      )
      .catch(() => {});
    await clock.tickAsync(70);
    await call;
    expect(durations).toEqual([70]);
  });
});
