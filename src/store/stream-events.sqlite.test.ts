import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import type { NewJob } from './jobs.js';
import { openSqliteStore } from './sqlite/index.js';
import { streamEventStoreContract } from './stream-events-contract.js';

/** The temp folder of the current test's database file; removed after each test. */
let dir: string | undefined;

streamEventStoreContract('sqlite', {
  async open(clock) {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-streams-'));
    return openSqliteStore({ path: join(dir, 'store.db'), clock });
  },
  async reopen(clock) {
    return openSqliteStore({ path: join(dir!, 'store.db'), clock });
  },
  async cleanup() {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  },
});

describe('SQLite stream events next to the job store', () => {
  let folder: string;

  afterEach(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  it('a migrated job database gains the stream tables and keeps its jobs', async () => {
    folder = mkdtempSync(join(tmpdir(), 'breakwater-streams-'));
    const clock = new FakeClock();
    const path = join(folder, 'store.db');
    const job: NewJob = {
      type: 'email',
      payload: { to: 'ada' },
      runAt: clock.now(),
      priority: 0,
      maxAttempts: 1,
    };
    const first = await openSqliteStore({ path, clock });
    const { job: stored } = await first.enqueue(job);
    const eventId = await first.appendStreamEvent('s', { n: 1 });
    await first.close();

    const second = await openSqliteStore({ path, clock });
    try {
      expect(await second.get(stored.id)).toEqual(stored);
      expect(await second.streamEventsAfter(eventId)).toEqual({ streamId: 's', events: [] });
    } finally {
      await second.close();
    }
  });

  it('an append commits the group-commit work queued before it (program order)', async () => {
    folder = mkdtempSync(join(tmpdir(), 'breakwater-streams-'));
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: join(folder, 'store.db'), clock });
    try {
      let enqueued = false;
      const pending = store
        .enqueue({ type: 'email', payload: null, runAt: clock.now(), priority: 0, maxAttempts: 1 })
        .then(() => {
          enqueued = true;
        });
      await store.appendStreamEvent('s', {});
      // The enqueue was committed by the append's flush; its promise settles in the same turn.
      await Promise.resolve();
      expect(enqueued).toBe(true);
      await pending;
    } finally {
      await store.close();
    }
  });
});
