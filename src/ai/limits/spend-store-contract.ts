import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import type { SpendStore } from './spend-store.js';

/**
 * The SpendStore contract suite (docs/ai-gateway.md#spend-limits-and-their-guarantee): the rules of spend.ts
 * as every spend store (counters on memory, SQLite, PostgreSQL; Redis) must keep them, with exact micro-USD
 * values.
 */

/** How the suite reaches one backend. */
export interface SpendStoreBackend {
  /** A spend store on fresh, empty storage (a store with its own clock reads `clock`); once per test. */
  open(clock: FakeClock): SpendStore | Promise<SpendStore>;
  /** Runs after each test: close stores, drop storage. */
  close?(): Promise<void>;
}

const HOUR_MS = 3_600_000;

export function spendStoreContract(name: string, backend: SpendStoreBackend): void {
  describe(`SpendStore contract: ${name}`, () => {
    let clock: FakeClock;
    let spend: SpendStore;
    /** The window `[t0, t0 + 1 h)` the tests reserve in, and the clock 10 minutes into it. */
    let t0: number;
    let end: number;

    beforeEach(async () => {
      clock = new FakeClock();
      t0 = clock.now();
      end = t0 + HOUR_MS;
      clock.tick(10 * 60_000);
      spend = await backend.open(clock);
    });

    afterEach(async () => {
      await backend.close?.();
    });

    const reserve = (key: string, estimate: number, budget: number) =>
      spend.reserve(key, estimate, budget, end, clock.now());
    const settle = (key: string, reserved: number, cost: number) =>
      spend.settle(key, reserved, cost, end, clock.now());
    /** The window's state, read by reserving nothing. */
    const state = async (key: string) => {
      const { spentMicroUsd, reservedMicroUsd } = await reserve(key, 0, Number.MAX_SAFE_INTEGER);
      return { spentMicroUsd, reservedMicroUsd };
    };

    it('reserves while spent + reserved + estimate <= budget; settles the real cost in place of it', async () => {
      expect(await reserve('w', 100, 300)).toEqual({ ok: true, spentMicroUsd: 0, reservedMicroUsd: 100 });
      expect(await reserve('w', 100, 300)).toEqual({ ok: true, spentMicroUsd: 0, reservedMicroUsd: 200 });
      expect(await reserve('w', 100, 300)).toEqual({ ok: true, spentMicroUsd: 0, reservedMicroUsd: 300 });
      expect(await reserve('w', 1, 300)).toEqual({ ok: false, spentMicroUsd: 0, reservedMicroUsd: 300 });
      expect(await settle('w', 100, 40)).toEqual({ spentMicroUsd: 40, reservedMicroUsd: 200 });
      expect(await reserve('w', 100, 300)).toEqual({ ok: false, spentMicroUsd: 40, reservedMicroUsd: 200 });
      expect(await reserve('w', 60, 300)).toEqual({ ok: true, spentMicroUsd: 40, reservedMicroUsd: 260 });
      expect(await settle('w', 100, 0)).toEqual({ spentMicroUsd: 40, reservedMicroUsd: 160 });
      // A reservation is never released below zero.
      expect(await settle('w', 1000, 5)).toEqual({ spentMicroUsd: 45, reservedMicroUsd: 0 });
    });

    it('an estimate over the whole budget is refused and writes nothing', async () => {
      expect(await reserve('w', 301, 300)).toEqual({ ok: false, spentMicroUsd: 0, reservedMicroUsd: 0 });
      expect(await settle('w', 301, 0)).toBeUndefined();
    });

    it('settling a window that does not exist (expired) leaves it alone', async () => {
      expect(await settle('gone', 100, 40)).toBeUndefined();
      expect(await state('gone')).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 0 });
    });

    it('keys are independent', async () => {
      await reserve('a', 100, 100);
      expect(await reserve('b', 100, 100)).toEqual({ ok: true, spentMicroUsd: 0, reservedMicroUsd: 100 });
      expect((await reserve('a', 100, 100)).ok).toBe(false);
    });

    it('200 concurrent reservations on a budget for 20: exactly 20 granted; settling brings reserved to 0', async () => {
      const results = await Promise.all(Array.from({ length: 200 }, () => reserve('burst', 100, 2_000)));
      const granted = results.filter((r) => r.ok);
      expect(granted).toHaveLength(20);
      expect(granted.map((r) => r.reservedMicroUsd).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => (i + 1) * 100),
      );
      expect(results.filter((r) => !r.ok).every((r) => r.reservedMicroUsd === 2_000)).toBe(true);
      await Promise.all(granted.map(() => settle('burst', 100, 37)));
      expect(await state('burst')).toEqual({ spentMicroUsd: 740, reservedMicroUsd: 0 });
    });
  });
}
