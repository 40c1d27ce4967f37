import { describe, expect, it } from 'vitest';
import { MAX_COUNTER_KEY_LENGTH, UNCHANGED, type CounterOutcome, type CounterStore } from './counters.js';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';

/**
 * The counter store contract suite: every rule in the docstrings of `store/counters.ts`, run against each
 * backend (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

const MINUTE_MS = 60_000;

/** A state with nested objects, arrays, numbers of every kind, non-ASCII text, an escaped NUL, key order. */
const STATE = {
  z: 1,
  a: { windows: [{ startMs: 1_767_225_600_000, count: 3 }], tokens: 4.25, neg: -17, tiny: 1e-7 },
  list: [1, 'two', null, true, false, [3, [4]], { five: 5 }],
  big: Number.MAX_SAFE_INTEGER,
  text: 'caf\u00e9 \ud83d\ude00 a\u0000b',
};

/** A step that adds 1 to a `{ n }` state and keeps it until `expiresAt`. */
function increment(expiresAt: number | null = null) {
  return (state: unknown): CounterOutcome<number> => {
    const n = ((state as { n: number } | undefined)?.n ?? 0) + 1;
    return { state: { n }, expiresAt, result: n };
  };
}

/** Sets the state outright. */
function put(state: unknown, expiresAt: number | null = null) {
  return (): CounterOutcome<string> => ({ state, expiresAt, result: 'put' });
}

export function countersContract(name: string, backend: FacetBackend): void {
  describe(`CounterStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    /** What the step sees for `key` right now (without changing it). */
    async function seen(counters: CounterStore, key: string): Promise<unknown> {
      return counters.update(key, (state) => ({ state: UNCHANGED, expiresAt: null, result: state }));
    }

    it('update runs the step on undefined for a new key, with the store clock, and stores its state', async () => {
      const calls: [unknown, number][] = [];
      const result = await h.store.counters.update('k', (state, now) => {
        calls.push([state, now]);
        return { state: { n: 1 }, expiresAt: null, result: 'first' };
      });
      expect(result).toBe('first');
      expect(calls).toEqual([[undefined, h.start]]);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      h.clock.tick(250);
      expect(
        await h.store.counters.update('k', (state, now) => ({ state, expiresAt: null, result: now })),
      ).toBe(h.start + 250);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      expect(await h.store.counters.get('other')).toBeUndefined();
    });

    it('state round-trips as JSON: nested objects, arrays, numbers, text, key order', async () => {
      await h.store.counters.update('json', put(STATE));
      const stored = await h.store.counters.get('json');
      expect(stored).toEqual(STATE);
      expect(Object.keys(stored as object)).toEqual(['z', 'a', 'list', 'big', 'text']);
      expect(await seen(h.store.counters, 'json')).toEqual(STATE);
      for (const value of [[1, [2, { three: 3 }]], 42, -0.5, 'text', true, null, {}]) {
        await h.store.counters.update('json', put(value));
        expect(await h.store.counters.get('json')).toEqual(value);
        expect(await seen(h.store.counters, 'json')).toEqual(value);
      }
      // A second store on the same storage reads the same state.
      const other = await h.another();
      expect(await other.counters.get('json')).toEqual({});
    });

    it('100 concurrent updates incrementing one key count exactly 100', async () => {
      const results = await Promise.all(
        Array.from({ length: 100 }, () => h.store.counters.update('hits', increment())),
      );
      expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(await h.store.counters.get('hits')).toEqual({ n: 100 });
    });

    it('100 concurrent updates of one key from two stores on the same storage count exactly 100', async () => {
      const other = await h.another();
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 === 0 ? h.store : other).counters.update('hits', increment()),
        ),
      );
      expect(new Set(results).size).toBe(100);
      expect(Math.max(...results)).toBe(100);
      expect(await h.store.counters.get('hits')).toEqual({ n: 100 });
      expect(await other.counters.get('hits')).toEqual({ n: 100 });
    });

    it('a step that throws rejects with its error and writes nothing; concurrent updates still land', async () => {
      await h.store.counters.update('k', put({ n: 5 }, h.start + MINUTE_MS));
      const boom = new Error('step failed');
      const calls = [
        h.store.counters.update('k', increment()),
        h.store.counters.update('k', () => {
          throw boom;
        }),
        h.store.counters.update('k', increment()),
        h.store.counters.update('fresh', () => {
          throw boom;
        }),
      ];
      const settled = await Promise.allSettled(calls);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
      expect((settled[1] as PromiseRejectedResult).reason).toBe(boom);
      expect((settled[3] as PromiseRejectedResult).reason).toBe(boom);
      // The two increments ran one after the other, in either order (PostgreSQL: whichever locks first).
      const values = [settled[0], settled[2]].map((s) => (s as PromiseFulfilledResult<number>).value);
      expect(values.sort()).toEqual([6, 7]);
      expect(await h.store.counters.get('k')).toEqual({ n: 7 });
      expect(await h.store.counters.get('fresh')).toBeUndefined();
    });

    it('UNCHANGED writes nothing: the state and its expiry stay as they were', async () => {
      await h.store.counters.update('k', put({ n: 1 }, h.start + 1000));
      h.clock.tick(500);
      const result = await h.store.counters.update('k', (state) => ({
        state: UNCHANGED,
        expiresAt: h.start + 99_999,
        result: state,
      }));
      expect(result).toEqual({ n: 1 });
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      h.clock.tick(499);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      h.clock.tick(1);
      expect(await h.store.counters.get('k')).toBeUndefined();
      // UNCHANGED on an absent key creates nothing.
      expect(
        await h.store.counters.update('absent', () => ({ state: UNCHANGED, expiresAt: null, result: 0 })),
      ).toBe(0);
      expect(await seen(h.store.counters, 'absent')).toBeUndefined();
    });

    it('a step returning undefined deletes the key', async () => {
      await h.store.counters.update('k', put({ n: 1 }));
      expect(
        await h.store.counters.update('k', () => ({ state: undefined, expiresAt: null, result: 'gone' })),
      ).toBe('gone');
      expect(await h.store.counters.get('k')).toBeUndefined();
      expect(await seen(h.store.counters, 'k')).toBeUndefined();
      // Deleting an absent key is fine.
      expect(
        await h.store.counters.update('never', () => ({ state: undefined, expiresAt: null, result: 1 })),
      ).toBe(1);
    });

    it('an expired state reads as undefined to get and to the next step; the step starts afresh', async () => {
      await h.store.counters.update('k', increment(h.start + 1000));
      await h.store.counters.update('k', increment(h.start + 1000));
      h.clock.tick(999);
      expect(await h.store.counters.get('k')).toEqual({ n: 2 });
      h.clock.tick(1);
      expect(await h.store.counters.get('k')).toBeUndefined();
      expect(await seen(h.store.counters, 'k')).toBeUndefined();
      expect(await h.store.counters.update('k', increment(h.start + 5000))).toBe(1);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      // A written expiry that has already passed reads as absent at once; a fractional one is rounded up.
      await h.store.counters.update('past', put({ n: 1 }, h.start));
      expect(await h.store.counters.get('past')).toBeUndefined();
      await h.store.counters.update('frac', put({ n: 1 }, h.clock.now() + 0.5));
      expect(await h.store.counters.get('frac')).toEqual({ n: 1 });
      h.clock.tick(1);
      expect(await h.store.counters.get('frac')).toBeUndefined();
    });

    it('a null expiry keeps the state until it is changed', async () => {
      await h.store.counters.update('k', put({ n: 1 }));
      h.clock.tick(365 * 24 * 60 * MINUTE_MS);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      expect(await h.store.counters.prune()).toBe(0);
    });

    it('delete removes the key; an unknown or malformed key is a no-op', async () => {
      await h.store.counters.update('k', put({ n: 1 }));
      await h.store.counters.update('keep', put({ n: 2 }));
      await h.store.counters.delete('k');
      await h.store.counters.delete('unknown');
      await h.store.counters.delete('');
      await h.store.counters.delete('a\0b');
      expect(await h.store.counters.get('k')).toBeUndefined();
      expect(await h.store.counters.get('keep')).toEqual({ n: 2 });
    });

    it('prune deletes up to limit expired keys and counts them; live keys stay', async () => {
      for (let i = 0; i < 4; i++) await h.store.counters.update(`old-${i}`, put(i, h.start + 100 + i));
      await h.store.counters.update('live', put('live', h.start + MINUTE_MS));
      await h.store.counters.update('forever', put('forever'));
      expect(await h.store.counters.prune()).toBe(0);
      h.clock.tick(102);
      expect(await h.store.counters.prune(0)).toBe(0);
      expect(await h.store.counters.prune(1)).toBe(1);
      expect(await h.store.counters.prune(1.9)).toBe(1);
      h.clock.tick(1);
      expect(await h.store.counters.prune()).toBe(2);
      expect(await h.store.counters.prune()).toBe(0);
      expect(await h.store.counters.get('live')).toBe('live');
      expect(await h.store.counters.get('forever')).toBe('forever');
      h.clock.tick(MINUTE_MS);
      expect(await h.store.counters.prune(Number.NaN)).toBe(1);
      expect(await h.store.counters.get('forever')).toBe('forever');
    });

    it('keys: 1..512 characters without NUL; get of a malformed key is undefined', async () => {
      const longest = 'k'.repeat(MAX_COUNTER_KEY_LENGTH);
      expect(await h.store.counters.update(longest, increment())).toBe(1);
      expect(await h.store.counters.get(longest)).toEqual({ n: 1 });
      expect(await h.store.counters.update('caf\u00e9:\ud83d\ude00', increment())).toBe(1);
      let called = 0;
      const step = () => {
        called++;
        return { state: 1, expiresAt: null, result: 1 };
      };
      for (const key of [
        '',
        `${longest}k`,
        'a\0b',
        42 as unknown as string,
        undefined as unknown as string,
      ]) {
        await expect(h.store.counters.update(key, step)).rejects.toBeInstanceOf(RangeError);
        expect(await h.store.counters.get(key)).toBeUndefined();
      }
      expect(called).toBe(0);
      await expect(h.store.counters.update('k', 'step' as never)).rejects.toBeInstanceOf(TypeError);
    });

    it('a state with no JSON form is a TypeError, a bad expiry a RangeError; nothing is written', async () => {
      await h.store.counters.update('k', put({ n: 1 }, h.start + MINUTE_MS));
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      for (const state of [() => 1, Symbol('s'), 10n, cycle]) {
        await expect(h.store.counters.update('k', put(state))).rejects.toBeInstanceOf(TypeError);
      }
      for (const expiresAt of [Number.NaN, Infinity, '1000' as unknown as number, 2 ** 60]) {
        await expect(h.store.counters.update('k', put({ n: 9 }, expiresAt))).rejects.toBeInstanceOf(
          RangeError,
        );
      }
      await expect(h.store.counters.update('k', () => null as never)).rejects.toBeInstanceOf(TypeError);
      expect(await h.store.counters.get('k')).toEqual({ n: 1 });
      h.clock.tick(MINUTE_MS);
      expect(await h.store.counters.get('k')).toBeUndefined();
    });

    it('every method rejects after close', async () => {
      await h.store.counters.update('k', increment());
      await h.store.close();
      await expect(h.store.counters.update('k', increment())).rejects.toThrow(/closed/);
      await expect(h.store.counters.get('k')).rejects.toThrow(/closed/);
      await expect(h.store.counters.delete('k')).rejects.toThrow(/closed/);
      await expect(h.store.counters.prune()).rejects.toThrow(/closed/);
    });
  });
}
