import { describe, expect, it } from 'vitest';
import { ConnectionSlots, type SlotWaiter } from './connection-slots.js';

/** A waiter that records when it starts; `live` can be switched off (its call aborted while it waits). */
function waiter(name: string, started: string[]): SlotWaiter & { live: boolean } {
  return { live: true, start: () => void started.push(name) };
}

describe('ConnectionSlots', () => {
  it('takes up to max slots at once, then queues; each release starts the next live waiter in order', () => {
    const started: string[] = [];
    const slots = new ConnectionSlots(2);
    expect(slots.acquire(waiter('a', started))).toBe(true);
    expect(slots.acquire(waiter('b', started))).toBe(true);
    const c = waiter('c', started);
    const d = waiter('d', started);
    const e = waiter('e', started);
    expect([slots.acquire(c), slots.acquire(d), slots.acquire(e)]).toEqual([false, false, false]);
    expect(slots.stats).toEqual({ busy: 2, waiting: 3 });
    d.live = false; // its client left while it waited
    slots.abandoned();
    expect(slots.stats).toEqual({ busy: 2, waiting: 2 });
    slots.release();
    expect(started).toEqual(['c']);
    slots.release(); // d is skipped: e takes the slot
    expect(started).toEqual(['c', 'e']);
    expect(slots.stats).toEqual({ busy: 2, waiting: 0 });
    slots.release();
    slots.release();
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
    expect(slots.acquire(waiter('f', started))).toBe(true);
  });

  it('a release with only dead waiters left frees the slot', () => {
    const started: string[] = [];
    const slots = new ConnectionSlots(1);
    slots.acquire(waiter('a', started));
    const dead = [waiter('b', started), waiter('c', started)];
    for (const w of dead) slots.acquire(w);
    for (const w of dead) {
      w.live = false;
      slots.abandoned();
    }
    slots.release();
    expect(started).toEqual([]);
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
  });

  it('serves 10 000 waiters in order through its compactions, and keeps none once served', () => {
    const started: string[] = [];
    const slots = new ConnectionSlots(1);
    slots.acquire(waiter('first', started));
    for (let i = 0; i < 10_000; i++) slots.acquire(waiter(String(i), started));
    for (let i = 0; i < 5_000; i++) slots.release();
    expect(started.length).toBe(5_000);
    expect(slots.stats).toEqual({ busy: 1, waiting: 5_000 });
    for (let i = 0; i < 5_001; i++) slots.release();
    expect(started).toEqual(Array.from({ length: 10_000 }, (_, i) => String(i)));
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
  });

  it('drains waiters that release inside their own start (a closed pool) without recursion', () => {
    const slots = new ConnectionSlots(2);
    let started = 0;
    const failing: SlotWaiter = {
      live: true,
      start: () => {
        started++;
        slots.release(); // undici called the handler's onResponseError from dispatch
      },
    };
    slots.acquire(waiter('a', []));
    slots.acquire(waiter('b', []));
    for (let i = 0; i < 200_000; i++) slots.acquire(failing);
    slots.release();
    expect(started).toBe(200_000);
    expect(slots.stats).toEqual({ busy: 1, waiting: 0 });
    slots.release();
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
  });

  it('drops abandoned waiters once they are 64 or more and half the queue, keeping the live ones in order', () => {
    const started: string[] = [];
    const slots = new ConnectionSlots(1);
    slots.acquire(waiter('on the wire', started));
    const waiters = Array.from({ length: 1_000 }, (_, i) => waiter(String(i), started));
    for (const w of waiters) slots.acquire(w);
    waiters.forEach((w, i) => {
      if (i % 10 === 0) return;
      w.live = false;
      slots.abandoned();
    });
    expect(slots.stats).toEqual({ busy: 1, waiting: 100 });
    for (let i = 0; i < 101; i++) slots.release();
    expect(started).toEqual(Array.from({ length: 100 }, (_, i) => String(i * 10)));
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
  });
});
