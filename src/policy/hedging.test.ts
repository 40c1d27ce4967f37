import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock, neverAbortedSignal } from '../core/index.js';
import { hedging, type HedgeEvent } from './hedging.js';
import type { PolicyContext } from './types.js';

const START = Date.UTC(2026, 0, 1);

function httpError(status: number): Error {
  return Object.assign(new Error(`HTTP ${status}`), { status });
}

interface Plan {
  /** Ms until the call settles; `undefined` never settles on its own (only rejects when its signal aborts). */
  afterMs?: number;
  value?: string;
  error?: unknown;
}

/** A function whose call `n` follows `plans[n - 1]`; records each call's context and start time. */
function scripted(clock: FakeClock, plans: Plan[]) {
  const calls: { ctx: PolicyContext; at: number }[] = [];
  const fn = (ctx: PolicyContext): Promise<string> => {
    calls.push({ ctx, at: clock.now() - START });
    const plan = plans[ctx.attempt - 1]!;
    return new Promise<string>((resolve, reject) => {
      const handle =
        plan.afterMs === undefined
          ? undefined
          : clock.setTimeout(() => {
              if (plan.error !== undefined) reject(plan.error);
              else resolve(plan.value!);
            }, plan.afterMs);
      ctx.signal.addEventListener('abort', () => {
        if (handle !== undefined) clock.clearTimeout(handle);
        reject(ctx.signal.reason);
      });
    });
  };
  return { fn, calls };
}

/** Awaits `promise`, noting when (ms since START) it settled. */
function timed<T>(clock: FakeClock, promise: Promise<T>) {
  const out: { at: number; value?: T; error?: unknown } = { at: -1 };
  const done = promise.then(
    (value) => Object.assign(out, { at: clock.now() - START, value }),
    (error: unknown) => Object.assign(out, { at: clock.now() - START, error }),
  );
  return { out, done };
}

describe('HedgingPolicy', () => {
  it('starts a hedge after delayMs when the primary is slow; the hedge wins and the primary is aborted', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [{}, { afterMs: 100, value: 'hedge' }]);
    const policy = hedging({ delayMs: 500, clock, name: 'gifts' });
    const events: HedgeEvent[] = [];
    policy.onHedge((e) => events.push(e));
    const caller = new AbortController();
    const { out, done } = timed(clock, policy.execute(fn, caller.signal));
    await clock.tickAsync(599);
    expect(calls.map((c) => c.at)).toEqual([0, 500]);
    expect(out.at).toBe(-1);
    await clock.tickAsync(1);
    await done;
    expect(out).toEqual({ at: 600, value: 'hedge' });
    const primary = calls[0]!.ctx.signal;
    expect(primary.aborted).toBe(true);
    expect(primary.reason).toBeInstanceOf(BreakwaterError);
    expect((primary.reason as BreakwaterError).code).toBe('canceled');
    expect(calls[1]!.ctx.signal.aborted).toBe(false);
    expect(calls.map((c) => c.ctx.attempt)).toEqual([1, 2]);
    expect(primary).not.toBe(caller.signal);
    expect(events).toEqual([{ name: 'gifts', attempt: 2, trigger: 'delay', elapsedMs: 500 }]);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('a fast primary wins alone: no hedge, no timer left', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [{ afterMs: 200, value: 'primary' }]);
    const policy = hedging({ delayMs: 500, clock });
    const { out, done } = timed(clock, policy.execute(fn));
    await clock.tickAsync(200);
    await done;
    expect(out).toEqual({ at: 200, value: 'primary' });
    expect(calls).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(neverAbortedSignal, 'abort')).toHaveLength(0);
  });

  it('the primary still wins if it answers before a started hedge', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [
      { afterMs: 700, value: 'primary' },
      { afterMs: 1000, value: 'hedge' },
    ]);
    const { out, done } = timed(clock, hedging({ delayMs: 500, clock }).execute(fn));
    await clock.tickAsync(700);
    await done;
    expect(out).toEqual({ at: 700, value: 'primary' });
    expect(calls[1]!.ctx.signal.aborted).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('starts hedges delayMs apart up to maxHedgedAttempts', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [{}, {}, { afterMs: 300, value: 'third' }]);
    const { out, done } = timed(clock, hedging({ delayMs: 500, maxHedgedAttempts: 2, clock }).execute(fn));
    await clock.tickAsync(5000);
    await done;
    expect(calls.map((c) => c.at)).toEqual([0, 500, 1000]);
    expect(out).toEqual({ at: 1300, value: 'third' });
    expect(calls.map((c) => c.ctx.signal.aborted)).toEqual([true, true, false]);
  });

  it('a retryable failure of the primary starts the hedge at once', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [
      { afterMs: 100, error: httpError(503) },
      { afterMs: 100, value: 'hedge' },
    ]);
    const policy = hedging({ delayMs: 500, clock });
    const events: HedgeEvent[] = [];
    policy.onHedge((e) => events.push(e));
    const { out, done } = timed(clock, policy.execute(fn));
    await clock.tickAsync(1000);
    await done;
    expect(calls.map((c) => c.at)).toEqual([0, 100]);
    expect(out).toEqual({ at: 200, value: 'hedge' });
    expect(events).toEqual([{ name: 'hedging', attempt: 2, trigger: 'failure', elapsedMs: 100 }]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a non-retryable failure (404) fails at once with that error, without a hedge', async () => {
    const clock = new FakeClock();
    const notFound = httpError(404);
    const { fn, calls } = scripted(clock, [{ afterMs: 100, error: notFound }]);
    const { out, done } = timed(clock, hedging({ delayMs: 500, clock }).execute(fn));
    await clock.tickAsync(100);
    await done;
    expect(out).toEqual({ at: 100, error: notFound });
    expect(calls).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a non-retryable failure of a hedge ends the execution and aborts the primary', async () => {
    const clock = new FakeClock();
    const bug = new TypeError('bad');
    const { fn, calls } = scripted(clock, [{}, { afterMs: 10, error: bug }]);
    const { out, done } = timed(clock, hedging({ delayMs: 500, clock }).execute(fn));
    await clock.tickAsync(510);
    await done;
    expect(out).toEqual({ at: 510, error: bug });
    expect(calls[0]!.ctx.signal.aborted).toBe(true);
  });

  it('when every call fails it rejects with the last failure to arrive, unchanged', async () => {
    const clock = new FakeClock();
    const first = httpError(503);
    const second = new BreakwaterError('timeout');
    const { fn, calls } = scripted(clock, [
      { afterMs: 900, error: first },
      { afterMs: 100, error: second },
    ]);
    const { out, done } = timed(clock, hedging({ delayMs: 500, clock }).execute(fn));
    await clock.tickAsync(1000);
    await done;
    // Hedge fails at 600 (primary still running), primary fails at 900: the primary's failure is the last.
    expect(calls.map((c) => c.at)).toEqual([0, 500]);
    expect(out).toEqual({ at: 900, error: first });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('shouldHedge replaces the default filter for transient failures, but never hedges a 404', async () => {
    const clock = new FakeClock();
    const open = new BreakwaterError('circuit_open', { retryAfterMs: 1000 });
    const { fn, calls } = scripted(clock, [
      { afterMs: 10, error: open },
      { afterMs: 10, value: 'hedge' },
    ]);
    const seen: [number, string][] = [];
    const policy = hedging({
      delayMs: 500,
      clock,
      shouldHedge: (_e, attempt, c) => {
        seen.push([attempt, c.reason]);
        return true;
      },
    });
    const { out, done } = timed(clock, policy.execute(fn));
    await clock.tickAsync(100);
    await done;
    expect(out).toEqual({ at: 20, value: 'hedge' });
    expect(calls).toHaveLength(2);
    expect(seen).toEqual([[1, 'circuit_open']]);

    const notFound = httpError(404);
    const second = scripted(clock, [{ afterMs: 10, error: notFound }]);
    const asked: number[] = [];
    const strict = hedging({ delayMs: 500, clock, shouldHedge: (_e, attempt) => asked.push(attempt) > 0 });
    const rejected = timed(clock, strict.execute(second.fn));
    await clock.tickAsync(100);
    await rejected.done;
    expect(rejected.out.error).toBe(notFound);
    expect(second.calls).toHaveLength(1);
    expect(asked).toEqual([]);
  });

  it('a throwing shouldHedge ends the execution with its error and aborts the calls still running', async () => {
    const clock = new FakeClock();
    const parent = new AbortController();
    const { fn, calls } = scripted(clock, [{ afterMs: 10, error: httpError(503) }, {}]);
    const bug = new Error('predicate bug');
    const policy = hedging({
      delayMs: 5,
      clock,
      shouldHedge: () => {
        throw bug;
      },
    });
    const { out, done } = timed(clock, policy.execute(fn, parent.signal));
    await clock.tickAsync(100);
    await done;
    expect(out).toEqual({ at: 10, error: bug });
    expect(calls).toHaveLength(2);
    expect(calls[1]!.ctx.signal.aborted).toBe(true);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("the caller's abort rejects at once with its reason, aborts every call and leaves nothing behind", async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [{}, {}]);
    const caller = new AbortController();
    const reason = new Error('caller left');
    const { out, done } = timed(clock, hedging({ delayMs: 500, clock }).execute(fn, caller.signal));
    await clock.tickAsync(600);
    caller.abort(reason);
    await done;
    expect(out).toEqual({ at: 600, error: reason });
    expect(calls.map((c) => c.ctx.signal.reason)).toEqual([reason, reason]);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('an already aborted signal rejects without calling', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    caller.abort(new Error('gone'));
    let calls = 0;
    await expect(hedging({ clock }).execute(() => ++calls, caller.signal)).rejects.toThrow('gone');
    expect(calls).toBe(0);
  });

  it('starts no hedge that would begin at or after the deadline', async () => {
    const clock = new FakeClock();
    const { fn, calls } = scripted(clock, [{ afterMs: 800, value: 'primary' }]);
    const policy = hedging({ delayMs: 500, clock });
    const result = Deadline.run(400, () => policy.execute(fn), clock);
    expect(clock.pendingTimers()).toBe(1); // the primary's own timer only
    await clock.tickAsync(800);
    await expect(result).resolves.toBe('primary');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.ctx.deadlineAt - START).toBe(400);
  });

  it('a synchronous throw from the call is a failure like any other', async () => {
    const clock = new FakeClock();
    const error = httpError(400);
    const policy = hedging({ clock });
    await expect(
      policy.execute(() => {
        throw error;
      }),
    ).rejects.toBe(error);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('validates options at construction and names the option', () => {
    expect(() => hedging({ maxHedgedAttempts: 0 })).toThrow(/maxHedgedAttempts/);
    expect(() => hedging({ maxHedgedAttempts: 1.5 })).toThrow(RangeError);
    expect(() => hedging({ delayMs: -1 })).toThrow(/delayMs/);
    expect(() => hedging({ delayMs: Infinity })).toThrow(/delayMs/);
    expect(() => hedging({ shouldHedge: true as never })).toThrow(/shouldHedge/);
    expect(hedging().delayMs).toBe(2000);
    expect(hedging().maxHedgedAttempts).toBe(1);
  });
});
