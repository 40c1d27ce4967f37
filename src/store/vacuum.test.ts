import { describe, expect, it } from 'vitest';
import { useFacetHarness, sqliteFacetBackend } from './facets-contract.js';
import { DAY_MS, JobMaker } from './retention-fixtures.js';
import { prunedTables, vacuumMode } from './vacuum.js';

describe('prunedTables', () => {
  it('names the tables of the kinds with rows removed, each once; a stream goes with its events', () => {
    const none = { jobs: 0, jobEvents: 0, webhookInbox: 0, streamEvents: 0, idempotency: 0, operations: 0 };
    expect(prunedTables(none)).toEqual([]);
    expect(prunedTables({ ...none, jobs: 2, jobEvents: 4, streamEvents: 1, operations: 3 })).toEqual([
      'jobs',
      'job_events',
      'stream_events',
      'streams',
      'operations',
    ]);
    expect(prunedTables({ ...none, webhookInbox: 1, idempotency: 1 })).toEqual([
      'webhook_inbox',
      'idempotency_records',
    ]);
  });
});

describe('vacuumMode', () => {
  it('is auto by default, takes auto, always and never, and refuses anything else naming the option', () => {
    expect(vacuumMode('x', undefined)).toBe('auto');
    for (const mode of ['auto', 'always', 'never']) expect(vacuumMode('x', mode)).toBe(mode);
    expect(() => vacuumMode('startPruner', 'FULL')).toThrow(
      new RangeError("startPruner: vacuum must be one of auto, always, never, got 'FULL'"),
    );
  });
});

describe('SQLite: retention.vacuum', () => {
  const h = useFacetHarness(sqliteFacetBackend('breakwater-vacuum'));

  it('vacuums nothing in any mode: SQLite reuses the pages a prune freed by itself', async () => {
    const jobs = new JobMaker(h);
    await jobs.ended('completed');
    const { removed } = await h.store.retention.prune({ now: h.start + 8 * DAY_MS });
    expect(removed.jobs).toBe(1);
    for (const mode of [undefined, 'auto', 'always', 'never'] as const) {
      expect(await h.store.retention.vacuum(removed, mode)).toEqual([]);
    }
    await expect(h.store.retention.vacuum(removed, 'full' as never)).rejects.toThrow(
      "retention.vacuum: vacuum must be one of auto, always, never, got 'full'",
    );
  });
});
