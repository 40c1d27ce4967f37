import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, sleep, systemClock } from './clock.js';

const START = Date.UTC(2026, 0, 1);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('FakeClock', () => {
  it('starts at 2026-01-01T00:00:00Z or the given time and moves only when told', () => {
    expect(new FakeClock().now()).toBe(START);
    const clock = new FakeClock(1000);
    expect(clock.now()).toBe(1000);
    clock.tick(0);
    expect(clock.now()).toBe(1000);
    clock.tick(250);
    expect(clock.now()).toBe(1250);
  });

  it('fires timers by due time, and timers due at the same instant in the order they were set', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const at = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.setTimeout(at('a'), 10);
    clock.setTimeout(at('b'), 5);
    clock.setTimeout(at('c'), 10);
    clock.setTimeout(at('d'), 5);
    clock.setTimeout(at('e'), 0);
    clock.setTimeout(at('f'), -20); // negative counts as 0
    clock.setTimeout(at('g'), Number.NaN); // NaN counts as 0
    clock.setTimeout(at('h'), 10);
    expect(clock.pendingTimers()).toBe(8);
    clock.tick(10);
    expect(fired).toEqual(['e@0', 'f@0', 'g@0', 'b@5', 'd@5', 'a@10', 'c@10', 'h@10']);
    expect(clock.pendingTimers()).toBe(0);
    expect(clock.now()).toBe(10);
  });

  it('fires timers set by callbacks within the same tick, after those already due then', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push(`a@${clock.now()}`);
      clock.setTimeout(() => fired.push(`a0@${clock.now()}`), 0);
      clock.setTimeout(() => fired.push(`a5@${clock.now()}`), 5);
      clock.setTimeout(() => fired.push(`a50@${clock.now()}`), 50);
    }, 10);
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 10);
    clock.tick(20);
    expect(fired).toEqual(['a@10', 'b@10', 'a0@10', 'a5@15']);
    expect(clock.pendingTimers()).toBe(1);
    expect(clock.now()).toBe(20);
    clock.tick(40);
    expect(fired.at(-1)).toBe('a50@60');
  });

  it('clearTimeout removes exactly that timer; unknown or repeated handles are ignored', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const a = clock.setTimeout(() => fired.push('a'), 10);
    clock.setTimeout(() => fired.push('b'), 10);
    expect(clock.pendingTimers()).toBe(2);
    clock.clearTimeout(a);
    expect(clock.pendingTimers()).toBe(1);
    clock.clearTimeout(a);
    clock.clearTimeout(12345);
    clock.clearTimeout(undefined);
    expect(clock.pendingTimers()).toBe(1);
    clock.tick(10);
    expect(fired).toEqual(['b']);
  });

  it('does not fire a timer before its due time', () => {
    const clock = new FakeClock(0);
    let fired = 0;
    clock.setTimeout(() => fired++, 100);
    clock.tick(99);
    expect(fired).toBe(0);
    clock.tick(1);
    expect(fired).toBe(1);
  });

  it('refuses to move time backwards', () => {
    const clock = new FakeClock(0);
    expect(() => clock.tick(-1)).toThrow(RangeError);
    expect(() => clock.tick(Number.NaN)).toThrow(RangeError);
    expect(clock.now()).toBe(0);
  });

  it('tickAsync never moves time back past a tick made while promises settled', async () => {
    const clock = new FakeClock(1_000);
    const moving = clock.tickAsync(100);
    clock.tick(500);
    await moving;
    expect(clock.now()).toBe(1_500);
  });

  it('tickAsync rejects a negative step', async () => {
    const clock = new FakeClock(0);
    expect(await rejection(clock.tickAsync(-5))).toBeInstanceOf(RangeError);
    expect(clock.now()).toBe(0);
  });

  it('an infinite delay never fires', async () => {
    const clock = new FakeClock(0);
    let fired = 0;
    clock.setTimeout(() => fired++, Infinity);
    clock.tick(1e15);
    await clock.runAllAsync();
    expect(fired).toBe(0);
    expect(clock.now()).toBe(1e15);
    expect(clock.pendingTimers()).toBe(1);
  });

  describe('tick vs tickAsync with promise chains', () => {
    async function loop(clock: FakeClock, log: number[]): Promise<void> {
      for (let i = 0; i < 3; i++) {
        await sleep(clock, 10);
        await Promise.resolve();
        log.push(clock.now());
      }
    }

    it('tickAsync lets each continuation run before the next timer, at its own instant', async () => {
      const clock = new FakeClock(0);
      const log: number[] = [];
      const done = loop(clock, log);
      await clock.tickAsync(30);
      expect(log).toEqual([10, 20, 30]);
      expect(clock.pendingTimers()).toBe(0);
      await done;
    });

    it('tick fires synchronously, so a continuation sees the end time and its next timer is late', async () => {
      const clock = new FakeClock(0);
      const log: number[] = [];
      const done = loop(clock, log);
      clock.tick(30);
      expect(log).toEqual([]);
      await clock.tickAsync(0);
      expect(log).toEqual([30]);
      expect(clock.pendingTimers()).toBe(1);
      await clock.tickAsync(20);
      expect(log).toEqual([30, 40, 50]);
      await done;
    });
  });

  it('runAllAsync fires everything, including timers set by timers, and stops at the limit', async () => {
    const clock = new FakeClock(0);
    const log: number[] = [];
    const chain = (n: number): void => {
      log.push(clock.now());
      if (n > 0) clock.setTimeout(() => chain(n - 1), 100);
    };
    clock.setTimeout(() => chain(3), 50);
    await clock.runAllAsync();
    expect(log).toEqual([50, 150, 250, 350]);
    expect(clock.now()).toBe(350);

    clock.setTimeout(() => chain(10), 0);
    await clock.runAllAsync(2);
    expect(log).toEqual([50, 150, 250, 350, 350, 450]);
    expect(clock.pendingTimers()).toBe(1);
  });
});

describe('sleep', () => {
  it('resolves after exactly ms and leaves no timer and no listener', async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    let resolvedAt: number | undefined;
    const done = sleep(clock, 100, controller.signal).then(() => (resolvedAt = clock.now()));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(1);
    await clock.tickAsync(99);
    expect(resolvedAt).toBeUndefined();
    await clock.tickAsync(1);
    await done;
    expect(resolvedAt).toBe(100);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('rejects with the abort reason, clears its timer and leaves no listener', async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const done = sleep(clock, 100, controller.signal);
    await clock.tickAsync(40);
    const reason = new Error('stop');
    controller.abort(reason);
    expect(await rejection(done)).toBe(reason);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects at once for an already-aborted signal, without setting a timer or listener', async () => {
    const clock = new FakeClock(0);
    const signal = AbortSignal.abort('gone');
    const done = sleep(clock, 100, signal);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(await rejection(done)).toBe('gone');
  });

  it('works without a signal, and sleep(0) resolves at the same instant', async () => {
    const clock = new FakeClock(0);
    let done = false;
    void sleep(clock, 0).then(() => (done = true));
    await clock.tickAsync(0);
    expect(done).toBe(true);
    expect(clock.now()).toBe(0);
  });
});

describe('systemClock (with vitest fake timers standing in for Node timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires after the delay, and not before', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    let fired = 0;
    systemClock.setTimeout(() => fired++, 50);
    vi.advanceTimersByTime(49);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);
    const handle = systemClock.setTimeout(() => fired++, -10);
    systemClock.clearTimeout(handle);
    vi.advanceTimersByTime(10);
    expect(fired).toBe(1);
  });

  it('never fires an infinite delay (Node would fire it after 1 ms)', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    let fired = 0;
    systemClock.setTimeout(() => fired++, Infinity);
    vi.advanceTimersByTime(10 * 2_147_483_647);
    expect(fired).toBe(0);
  });

  it('fires a delay longer than 2^31-1 ms on time, and can clear it after it re-armed', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const long = 2_147_483_647 + 1000;
    let fired = 0;
    systemClock.setTimeout(() => fired++, long);
    vi.advanceTimersByTime(long - 1);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);

    const handle = systemClock.setTimeout(() => fired++, long);
    vi.advanceTimersByTime(2_147_483_647 + 1);
    systemClock.clearTimeout(handle);
    vi.advanceTimersByTime(5000);
    expect(fired).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
