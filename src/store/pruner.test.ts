import { describe, expect, it } from 'vitest';
import { useFacetHarness, sqliteFacetBackend } from './facets-contract.js';
import { startPruner, type PrunedStore, type Pruner } from './pruner.js';
import { DAY_MS, JobMaker, report } from './retention-fixtures.js';
import type { PruneOptions, PruneReport } from './retention.js';

/** The background pruner on a real SQLite store, timed by a FakeClock. */
describe('startPruner', () => {
  const h = useFacetHarness(sqliteFacetBackend('breakwater-pruner'));

  /** The store with its prune calls counted: a round starts (on the fake clock) when `calls` grows. */
  function counted(): PrunedStore & { calls: PruneOptions[]; vacuums: [unknown, unknown][] } {
    const calls: PruneOptions[] = [];
    const vacuums: [unknown, unknown][] = [];
    return {
      calls,
      vacuums,
      counters: h.store.counters,
      pruneWatches: () => h.store.pruneWatches(),
      retention: {
        size: () => h.store.retention.size(),
        vacuum: (removed, mode) => {
          vacuums.push([removed, mode]);
          return h.store.retention.vacuum(removed, mode);
        },
        prune: (options) => {
          calls.push(options!);
          return h.store.retention.prune(options);
        },
      },
    };
  }

  /** The next report of `pruner` (its round runs real I/O, which the fake clock does not wait for). */
  function nextReport(pruner: Pruner): Promise<PruneReport> {
    return new Promise((resolve) => {
      const subscription = pruner.onPruned((r) => {
        subscription.dispose();
        resolve(r);
      });
    });
  }

  it('measures the size at start, then prunes and measures after each wait of everyMs', async () => {
    const jobs = new JobMaker(h);
    await jobs.ended('completed');
    h.clock.tick(DAY_MS);
    const young = await jobs.ended('completed');
    const store = counted();
    const pruner = startPruner({
      store,
      clock: h.clock,
      everyMs: DAY_MS,
      retention: { jobsMs: DAY_MS },
      random: () => 0.5,
    });
    try {
      await expect.poll(() => pruner.size?.rows.jobs).toBe(2);
      expect(pruner.size?.measuredAt).toBe(h.start + DAY_MS);
      await h.clock.tickAsync(DAY_MS - 1);
      expect(store.calls.length).toBe(0);
      const reported = nextReport(pruner);
      await h.clock.tickAsync(1);
      expect(store.calls.length).toBe(1);
      const first = await reported;
      expect(first).toEqual(report(h.start + 2 * DAY_MS, { jobs: 1, jobEvents: 2 }, { jobs: 1 }));
      // What it removed is then vacuumed where the store must (SQLite never: see store/vacuum.ts).
      expect(store.vacuums).toEqual([[first.removed, 'auto']]);
      expect(pruner.lastReport).toBe(first);
      await expect.poll(() => pruner.size?.rows.jobs).toBe(1);
      expect(await jobs.ids()).toEqual([young]);
    } finally {
      await pruner.close();
    }
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('waits everyMs varied by jitter either way: random 0 is the shortest wait, random → 1 the longest', async () => {
    for (const [random, waitMs] of [
      [0, 900],
      [0.5, 1000],
      [0.999, 1099.8],
    ] as const) {
      const store = counted();
      const pruner = startPruner({ store, clock: h.clock, everyMs: 1000, random: () => random });
      await h.clock.tickAsync(waitMs - 0.1);
      expect(store.calls.length).toBe(0);
      const reported = nextReport(pruner);
      await h.clock.tickAsync(0.1);
      expect(store.calls.length).toBe(1);
      await reported;
      // The next wait starts once the round is done.
      await expect.poll(() => h.clock.pendingTimers()).toBe(1);
      await h.clock.tickAsync(waitMs);
      expect(store.calls.length).toBe(2);
      await pruner.close();
    }
  });

  it('runNow runs a round at once; close stops the rounds and aborts the prune in progress', async () => {
    const store = counted();
    const pruner = startPruner({
      store,
      clock: h.clock,
      retention: { streamEventsMs: 10 },
      batchSize: 7,
      vacuum: 'never',
    });
    expect(await pruner.runNow()).toEqual(report(h.start));
    expect(store.vacuums).toEqual([[report(h.start).removed, 'never']]);
    const [seen] = store.calls;
    expect(seen).toMatchObject({
      batchSize: 7,
      retention: expect.objectContaining({ streamEventsMs: 10, jobsMs: 7 * DAY_MS }),
    });
    expect(seen!.signal!.aborted).toBe(false);
    await pruner.close();
    expect(seen!.signal!.aborted).toBe(true);
    expect(h.clock.pendingTimers()).toBe(0);
    expect(await pruner.runNow()).toBeUndefined();
  });

  it('a failing step goes to onError and the round goes on', async () => {
    const errors: unknown[] = [];
    const broken = new Error('counters down');
    const store: PrunedStore = {
      retention: h.store.retention,
      pruneWatches: () => h.store.pruneWatches(),
      counters: { ...h.store.counters, prune: () => Promise.reject(broken) },
    };
    const pruner = startPruner({ store, clock: h.clock, onError: (e) => errors.push(e) });
    expect(await pruner.runNow()).toEqual(report(h.start));
    expect(errors).toEqual([broken]);
    expect(pruner.size?.rows.jobs).toBe(0);
    await pruner.close();
  });

  it('bad options are refused at start, naming the option', () => {
    expect(() => startPruner({ store: h.store, everyMs: 0 })).toThrow(
      'startPruner: everyMs must be a finite number > 0, got 0',
    );
    expect(() => startPruner({ store: h.store, jitter: 2 })).toThrow(
      'startPruner: jitter must be a fraction in [0, 1], got 2',
    );
    expect(() => startPruner({ store: h.store, retention: { operationsMs: -5 } })).toThrow(
      'startPruner: retention.operationsMs must be an integer >= 0 or Infinity, got -5',
    );
    expect(() => startPruner({ store: h.store, vacuum: 'full' as never })).toThrow(
      "startPruner: vacuum must be one of auto, always, never, got 'full'",
    );
    expect(() => startPruner({ store: {} as PrunedStore })).toThrow('startPruner: store must be a Store');
  });
});
