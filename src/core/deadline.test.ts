import { describe, expect, it } from 'vitest';
import { FakeClock, sleep } from './clock.js';
import { Deadline, deadlineExceeded } from './deadline.js';
import { BreakwaterError } from './errors.js';

const START = Date.UTC(2026, 0, 1);

function caught(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('Deadline outside any scope', () => {
  it('has no deadline: Infinity remaining, no absolute time, check passes', () => {
    expect(Deadline.remaining()).toBe(Infinity);
    expect(Deadline.at()).toBeUndefined();
    expect(caught(() => Deadline.check())).toBeUndefined();
    expect(caught(() => Deadline.check(1_000_000))).toBeUndefined();
  });
});

describe('Deadline.run', () => {
  it('sets remaining() and at() exactly on the given clock', () => {
    const clock = new FakeClock();
    Deadline.run(
      1000,
      () => {
        expect(Deadline.at()).toBe(START + 1000);
        expect(Deadline.remaining()).toBe(1000);
        clock.tick(250);
        expect(Deadline.remaining()).toBe(750);
        clock.tick(750);
        expect(Deadline.remaining()).toBe(0);
        clock.tick(5000);
        expect(Deadline.remaining()).toBe(0);
      },
      clock,
    );
    expect(Deadline.remaining()).toBe(Infinity);
  });

  it('returns what fn returns', () => {
    const clock = new FakeClock();
    expect(Deadline.run(10, () => 'value', clock)).toBe('value');
  });

  it('a larger inner deadline keeps the outer one', () => {
    const clock = new FakeClock();
    Deadline.run(
      1000,
      () => {
        Deadline.run(
          5000,
          () => {
            expect(Deadline.at()).toBe(START + 1000);
            expect(Deadline.remaining()).toBe(1000);
          },
          clock,
        );
        clock.tick(400);
        Deadline.run(600, () => expect(Deadline.at()).toBe(START + 1000), clock); // equal: outer kept
      },
      clock,
    );
  });

  it('a smaller inner deadline wins, and only inside its scope', () => {
    const clock = new FakeClock();
    Deadline.run(
      1000,
      () => {
        Deadline.run(
          200,
          () => {
            expect(Deadline.at()).toBe(START + 200);
            expect(Deadline.remaining()).toBe(200);
            // Nested once more with something larger: the 200 ms one stays.
            Deadline.run(900, () => expect(Deadline.remaining()).toBe(200), clock);
          },
          clock,
        );
        expect(Deadline.at()).toBe(START + 1000);
      },
      clock,
    );
  });

  it('runAt takes an absolute time and nests the same way', () => {
    const clock = new FakeClock();
    Deadline.runAt(
      START + 3000,
      () => {
        expect(Deadline.remaining()).toBe(3000);
        Deadline.runAt(START + 9000, () => expect(Deadline.at()).toBe(START + 3000), clock);
        Deadline.runAt(START + 10, () => expect(Deadline.at()).toBe(START + 10), clock);
      },
      clock,
    );
  });

  it('survives awaits, setImmediate and clock timers (AsyncLocalStorage propagation)', async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    const work = Deadline.run(
      1000,
      async () => {
        await Promise.resolve();
        seen.push(Deadline.remaining());
        await new Promise<void>((resolve) => setImmediate(resolve));
        seen.push(Deadline.remaining());
        await new Promise<void>((resolve) =>
          setImmediate(() => {
            seen.push(Deadline.remaining());
            resolve();
          }),
        );
        await sleep(clock, 300);
        seen.push(Deadline.remaining());
        return Deadline.at();
      },
      clock,
    );
    // Outside the scope nothing leaks, even while the work is pending.
    expect(Deadline.remaining()).toBe(Infinity);
    await clock.tickAsync(300);
    expect(await work).toBe(START + 1000);
    expect(seen).toEqual([1000, 1000, 1000, 700]);
  });

  it('keeps concurrent scopes apart', async () => {
    const clock = new FakeClock();
    const a = Deadline.run(
      100,
      async () => {
        await sleep(clock, 50);
        return Deadline.remaining();
      },
      clock,
    );
    const b = Deadline.run(
      500,
      async () => {
        await sleep(clock, 50);
        return Deadline.remaining();
      },
      clock,
    );
    await clock.tickAsync(50);
    expect([await a, await b]).toEqual([50, 450]);
  });

  it('rejects a negative or NaN timeout as a programming error', () => {
    const clock = new FakeClock();
    expect(caught(() => Deadline.run(-1, () => 0, clock))).toBeInstanceOf(RangeError);
    expect(caught(() => Deadline.run(Number.NaN, () => 0, clock))).toBeInstanceOf(RangeError);
    expect(caught(() => Deadline.runAt(Number.NaN, () => 0, clock))).toBeInstanceOf(RangeError);
    // Zero is allowed: a deadline that is already due.
    expect(Deadline.run(0, () => Deadline.remaining(), clock)).toBe(0);
  });
});

describe('Deadline.check', () => {
  it('throws deadline_exceeded once the deadline is reached', () => {
    const clock = new FakeClock();
    Deadline.run(
      100,
      () => {
        clock.tick(99);
        expect(caught(() => Deadline.check())).toBeUndefined();
        clock.tick(1);
        const error = caught(() => Deadline.check());
        expect(error).toBeInstanceOf(BreakwaterError);
        expect(error).toMatchObject({
          code: 'deadline_exceeded',
          kind: 'transient',
          status: 504,
          outcome: 'failed',
        });
      },
      clock,
    );
  });

  it('throws when no more than the margin remains', () => {
    const clock = new FakeClock();
    Deadline.run(
      100,
      () => {
        expect(caught(() => Deadline.check(99))).toBeUndefined();
        expect((caught(() => Deadline.check(100)) as BreakwaterError).code).toBe('deadline_exceeded');
        expect((caught(() => Deadline.check(101)) as BreakwaterError).code).toBe('deadline_exceeded');
      },
      clock,
    );
  });

  it('deadlineExceeded names its source', () => {
    const error = deadlineExceeded('gift-service');
    expect([error.code, error.source, error.status]).toEqual(['deadline_exceeded', 'gift-service', 504]);
    expect(deadlineExceeded().source).toBeUndefined();
  });
});
