import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { FakeClock } from '../core/index.js';
import { openSqliteStore } from './sqlite/index.js';
import type { Store } from './store.js';

/**
 * What the contract suites of the store's facets (`idempotency-contract.ts`, `operations-contract.ts`,
 * `audit-contract.ts`) share: how they reach a backend, and the per-test store they run on.
 */

/** How a facet suite reaches one backend. */
export interface FacetBackend {
  /** Opens a store on fresh, empty storage, reading time from `clock`; called once per test. */
  open(clock: FakeClock): Promise<Store>;
  /** Opens another store on the storage the last {@link open} made (another process, or a restart). */
  reopen(clock: FakeClock): Promise<Store>;
  /** Runs after each test once the suite has closed its stores (drop a schema, delete a file). */
  cleanup?(): Promise<void>;
}

/** The SQLite backend: a file in a fresh temporary folder per test, removed after it. */
export function sqliteFacetBackend(prefix: string): FacetBackend {
  let dir: string | undefined;
  return {
    async open(clock) {
      dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
      return openSqliteStore({ path: join(dir, 'store.db'), clock, watchMs: 0 });
    },
    async reopen(clock) {
      return openSqliteStore({ path: join(dir!, 'store.db'), clock, watchMs: 0 });
    },
    async cleanup() {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    },
  };
}

/** The per-test state of a facet suite: a fake clock, a store on fresh storage, and extra stores to close. */
export interface FacetHarness {
  clock: FakeClock;
  store: Store;
  /** `clock.now()` when the test started. */
  start: number;
  /** Opens another store on the same storage, closed after the test. */
  another(): Promise<Store>;
}

/**
 * Registers `beforeEach` / `afterEach` that open a fresh store per test and close every store after it; call
 * inside a `describe`. The returned object's fields are replaced before each test.
 */
export function useFacetHarness(backend: FacetBackend): FacetHarness {
  const extra: Store[] = [];
  const harness = {} as FacetHarness;
  beforeEach(async () => {
    harness.clock = new FakeClock();
    harness.start = harness.clock.now();
    harness.store = await backend.open(harness.clock);
    harness.another = async () => {
      const other = await backend.reopen(harness.clock);
      extra.push(other);
      return other;
    };
  });
  afterEach(async () => {
    for (const other of extra.splice(0)) await other.close();
    await (harness.store as Store | undefined)?.close();
    harness.store = undefined as unknown as Store;
    await backend.cleanup?.();
  });
  return harness;
}
