import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from './clock.js';
import { rejectSoon } from './promises.js';
import { TimerQueue, type TimerEntry } from './timer-queue.js';

class Entry implements TimerEntry {
  dueAt = 0;
  prevTimer: TimerEntry | undefined = undefined;
  nextTimer: TimerEntry | undefined = undefined;
  queued = false;
  constructor(
    readonly name: string,
    private readonly fired: string[],
    private readonly clock: FakeClock,
    private readonly start: number,
  ) {}
  onTimer(): void {
    this.fired.push(`${this.name}@${this.clock.now() - this.start}`);
  }
}

function setup() {
  const clock = new FakeClock();
  const start = clock.now();
  const fired: string[] = [];
  const queue = new TimerQueue(clock);
  const entry = (name: string) => new Entry(name, fired, clock, start);
  return { clock, start, fired, queue, entry };
}

describe('TimerQueue', () => {
  it('fires entries in due order at their exact times from one clock timer', () => {
    const { clock, start, fired, queue, entry } = setup();
    queue.add(entry('a'), start + 300);
    queue.add(entry('b'), start + 100);
    queue.add(entry('c'), start + 200);
    queue.add(entry('d'), start + 200);
    expect(clock.pendingTimers()).toBe(1);
    expect(queue.size).toBe(4);
    clock.tick(1000);
    expect(fired).toEqual(['b@100', 'c@200', 'd@200', 'a@300']);
    expect(queue.size).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('removing entries never touches the clock; the armed timer re-arms for the new head when it fires', () => {
    const { clock, start, fired, queue, entry } = setup();
    const a = entry('a');
    const b = entry('b');
    queue.add(a, start + 100);
    queue.add(b, start + 500);
    const setTimeout = vi.spyOn(clock, 'setTimeout');
    const clearTimeout = vi.spyOn(clock, 'clearTimeout');
    queue.remove(a);
    queue.remove(a); // idempotent
    expect(setTimeout).not.toHaveBeenCalled();
    expect(clearTimeout).not.toHaveBeenCalled();
    clock.tick(100); // the early timer fires, finds nothing due, re-arms for b
    expect(fired).toEqual([]);
    expect(setTimeout).toHaveBeenCalledTimes(1);
    clock.tick(400);
    expect(fired).toEqual(['b@500']);
  });

  it('an earlier entry re-arms the clock timer; an empty queue lets its timer lapse', () => {
    const { clock, start, fired, queue, entry } = setup();
    const late = entry('late');
    queue.add(late, start + 1000);
    queue.add(entry('early'), start + 10);
    expect(clock.pendingTimers()).toBe(1);
    clock.tick(10);
    expect(fired).toEqual(['early@10']);
    queue.remove(late);
    expect(clock.pendingTimers()).toBe(1);
    clock.tick(990);
    expect(fired).toEqual(['early@10']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('an entry added by a callback is scheduled too', () => {
    const { clock, start, fired, queue, entry } = setup();
    const second = entry('second');
    const first = entry('first');
    first.onTimer = () => {
      fired.push(`first@${clock.now() - start}`);
      queue.add(second, clock.now() + 50);
    };
    queue.add(first, start + 100);
    clock.tick(200);
    expect(fired).toEqual(['first@100', 'second@150']);
  });

  it('keeps its system timer referenced only while entries wait', () => {
    const handles: { refed: boolean }[] = [];
    const clock = {
      now: () => 0,
      setTimeout: () => {
        const handle = {
          refed: true,
          ref() {
            handle.refed = true;
          },
          unref() {
            handle.refed = false;
          },
        };
        handles.push(handle);
        return handle;
      },
      clearTimeout: () => undefined,
    };
    const queue = new TimerQueue(clock);
    const noop = { dueAt: 0, prevTimer: undefined, nextTimer: undefined, queued: false, onTimer() {} };
    queue.add(noop, 100);
    expect(handles.map((h) => h.refed)).toEqual([true]);
    queue.remove(noop);
    expect(handles.map((h) => h.refed)).toEqual([false]);
    queue.add(noop, 100);
    expect(handles.map((h) => h.refed)).toEqual([true]);
  });
});

describe('rejectSoon', () => {
  it('rejects with the given value one microtask later, without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const error = new Error('boom');
      const order: string[] = [];
      const p = rejectSoon(error).catch((e: unknown) => {
        order.push('rejected');
        return e;
      });
      order.push('sync');
      expect(await p).toBe(error);
      expect(order).toEqual(['sync', 'rejected']);
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
