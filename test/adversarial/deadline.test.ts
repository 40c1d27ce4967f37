import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  Deadline,
  bulkhead,
  constantBackoff,
  hedging,
  pipeline,
  retry,
  sleep,
  timeout,
  type GiveUpReason,
  type PolicyContext,
} from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';

const code = (e: unknown): string => (e as BreakwaterError).code;

describe('deadline propagation through every policy', () => {
  it('retry never starts a wait that would end past deadline − margin', async () => {
    const clock = new FakeClock();
    const policy = retry({ maxAttempts: 10, backoff: constantBackoff(400), clock });
    const reasons: GiveUpReason[] = [];
    policy.onGiveUp((e) => reasons.push(e.reason));
    const startedAt: number[] = [];
    const t0 = clock.now();
    const result = Deadline.run(
      1000,
      () =>
        policy.execute(() => {
          startedAt.push(clock.now() - t0);
          throw new BreakwaterError('upstream_unavailable');
        }),
      clock,
    ).catch(code);
    await clock.tickAsync(2000);
    expect(await result).toBe('upstream_unavailable');
    // Waits end at 400 and 800; one ending at 1200 (>= 950) is never started.
    expect(startedAt).toEqual([0, 400, 800]);
    expect(reasons).toEqual(['deadline']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('bulkhead never keeps a call queued past the deadline (queueTimeoutMs longer)', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 5, queueTimeoutMs: 10_000, clock });
    let release!: () => void;
    const holder = guard.execute(() => new Promise<void>((r) => (release = r)));
    const t0 = clock.now();
    let rejectedAt = -1;
    const queued = Deadline.run(300, () => guard.execute(() => 'never'), clock).catch((e: unknown) => {
      rejectedAt = clock.now() - t0;
      return e as BreakwaterError;
    });
    expect(guard.state().queued).toBe(1);
    await clock.tickAsync(299);
    expect(rejectedAt).toBe(-1);
    await clock.tickAsync(1);
    const error = (await queued) as BreakwaterError;
    expect(rejectedAt).toBe(300);
    expect(error.code).toBe('deadline_exceeded');
    expect(error.details).toMatchObject({ waited_ms: 300 });
    expect(guard.state()).toMatchObject({ inUse: 1, queued: 0 });
    release();
    await holder;
    expect(clock.pendingTimers()).toBe(0);
  });

  it('bulkhead rejects at once when the deadline already passed and every slot is busy', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 5, clock });
    let release!: () => void;
    const holder = guard.execute(() => new Promise<void>((r) => (release = r)));
    const error = await Deadline.run(0, () => guard.execute(() => 'never'), clock).catch((e: unknown) => e);
    expect(code(error)).toBe('deadline_exceeded');
    expect(guard.state().queued).toBe(0);
    release();
    await holder;
  });

  it('hedging never starts a hedge at or after the deadline', async () => {
    const clock = new FakeClock();
    const policy = hedging({ maxHedgedAttempts: 5, delayMs: 100, clock });
    const launched: number[] = [];
    const t0 = clock.now();
    const result = Deadline.run(
      250,
      () =>
        policy.execute(async (ctx: PolicyContext) => {
          launched.push(clock.now() - t0);
          await sleep(clock, 1000);
          return ctx.attempt;
        }),
      clock,
    );
    await clock.tickAsync(2000);
    expect(await result).toBe(1);
    expect(launched).toEqual([0, 100, 200]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('timeout fires at deadline − margin with deadline_exceeded', async () => {
    const clock = new FakeClock();
    const limit = timeout({ timeoutMs: 5000, deadlineMarginMs: 50, clock });
    const events: unknown[] = [];
    limit.onTimeout((e) => events.push(e));
    const t0 = clock.now();
    let at = -1;
    const result = Deadline.run(1000, () => limit.execute(() => new Promise<never>(() => {})), clock).catch(
      (e: unknown) => {
        at = clock.now() - t0;
        return e as BreakwaterError;
      },
    );
    await clock.tickAsync(949);
    expect(at).toBe(-1);
    await clock.tickAsync(1);
    const error = (await result) as BreakwaterError;
    expect(at).toBe(950);
    expect(error.code).toBe('deadline_exceeded');
    expect(error.status).toBe(504);
    expect(error.details).toEqual({ timeout_ms: 950 });
    expect(events).toEqual([{ name: 'timeout', code: 'deadline_exceeded', afterMs: 950 }]);
  });

  it('timeout with no time left rejects with deadline_exceeded without calling fn', async () => {
    const clock = new FakeClock();
    let called = false;
    const error = await Deadline.run(
      40,
      () =>
        timeout({ timeoutMs: 5000, clock }).execute(() => {
          called = true;
        }),
      clock,
    ).catch((e: unknown) => e);
    expect(code(error)).toBe('deadline_exceeded');
    expect(called).toBe(false);
  });

  it('Deadline.run nested inside a policy callback shortens the inner timeout', async () => {
    const clock = new FakeClock();
    const outer = timeout({ timeoutMs: 10_000, name: 'outer', clock });
    const inner = timeout({ timeoutMs: 5000, name: 'inner', clock });
    const t0 = clock.now();
    let at = -1;
    const result = outer
      .execute(() => Deadline.run(200, () => inner.execute(() => new Promise<never>(() => {})), clock))
      .catch((e: unknown) => {
        at = clock.now() - t0;
        return e as BreakwaterError;
      });
    await clock.tickAsync(300);
    const error = (await result) as BreakwaterError;
    expect(at).toBe(150);
    expect(error.code).toBe('deadline_exceeded');
    expect(error.source).toBe('inner');
    await clock.tickAsync(10_000);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a longer Deadline.run nested inside a shorter one keeps the shorter one', async () => {
    const clock = new FakeClock();
    const inner = timeout({ timeoutMs: 5000, clock });
    const policy = pipeline(retry({ maxAttempts: 1, clock }));
    const t0 = clock.now();
    let at = -1;
    const result = Deadline.run(
      1000,
      () =>
        policy.execute(() =>
          Deadline.run(60_000, () => inner.execute(() => new Promise<never>(() => {})), clock),
        ),
      clock,
    ).catch((e: unknown) => {
      at = clock.now() - t0;
      return code(e);
    });
    await clock.tickAsync(2000);
    expect(await result).toBe('deadline_exceeded');
    expect(at).toBe(950);
  });

  it('pipeline(bulkhead, retry, timeout) under a deadline: every attempt cut by the deadline, not past it', async () => {
    const clock = new FakeClock();
    const policy = pipeline(
      bulkhead({ maxConcurrent: 1, clock }),
      retry({ maxAttempts: 5, backoff: constantBackoff(100), clock }),
      timeout({ timeoutMs: 400, clock }),
    );
    const starts: number[] = [];
    const t0 = clock.now();
    let at = -1;
    const result = Deadline.run(
      1000,
      () =>
        policy.execute(() => {
          starts.push(clock.now() - t0);
          return new Promise<never>(() => {});
        }),
      clock,
    ).catch((e: unknown) => {
      at = clock.now() - t0;
      return code(e);
    });
    await clock.tickAsync(3000);
    // 0–400 timeout, wait to 500, 500–900 timeout, next wait would end at 1000 >= 950: give up.
    expect(starts).toEqual([0, 500]);
    expect(await result).toBe('timeout');
    expect(at).toBe(900);
  });
});
