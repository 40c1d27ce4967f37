import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describePostgres, TEST_DATABASE_URL, testSchemas } from '../../test/support/postgres.js';
import { FakeClock } from '../core/index.js';
import type { FacetHarness } from './facets-contract.js';
import { openPostgresStore } from './postgres/index.js';
import { DAY_MS, JobMaker } from './retention-fixtures.js';
import type { PruneReport } from './retention.js';

/**
 * `store.retention.vacuum` on PostgreSQL: which tables a prune's counts select, per mode, against the test
 * server's own autovacuum setting (read, not assumed), and that each one chosen was vacuumed (its
 * `vacuum_count` grew). One table has `autovacuum_enabled = false`, as an operator could set it.
 */
describePostgres('vacuum tests')('PostgreSQL: retention.vacuum', () => {
  const schemas = testSchemas('bw_vacuum');
  const h = {} as FacetHarness;
  let schema: string;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
  });
  afterAll(() => admin.end());
  beforeEach(async () => {
    schema = await schemas.create();
    h.clock = new FakeClock();
    h.start = h.clock.now();
    h.store = await openPostgresStore({ url: TEST_DATABASE_URL, clock: h.clock, schema });
    h.another = () => Promise.reject(new Error('not used'));
  });
  afterEach(async () => {
    await h.store.close();
    await schemas.drop(schema);
  });

  const vacuumCounts = async () => {
    const { rows } = await admin.query<{ relname: string; n: string }>(
      `SELECT relname, vacuum_count AS n FROM pg_stat_user_tables WHERE schemaname = $1`,
      [schema],
    );
    return Object.fromEntries(rows.map((row) => [row.relname, Number(row.n)]));
  };

  async function pruned(): Promise<PruneReport['removed']> {
    const jobs = new JobMaker(h);
    await jobs.ended('completed');
    await jobs.ended('failed');
    return (await h.store.retention.prune({ now: h.start + 31 * DAY_MS })).removed;
  }

  it('auto: the pruned tables autovacuum does not look after; always: every pruned table; never: none', async () => {
    const removed = await pruned();
    expect(removed).toEqual({
      jobs: 2,
      jobEvents: 4,
      webhookInbox: 0,
      streamEvents: 0,
      idempotency: 0,
      operations: 0,
    });
    await admin.query(`ALTER TABLE ${schema}.job_events SET (autovacuum_enabled = false)`);
    const settings = (
      await admin.query<{ autovacuum: string; track_counts: string }>(
        `SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts`,
      )
    ).rows[0]!;
    const serverVacuums = settings.autovacuum === 'on' && settings.track_counts === 'on';

    expect(await h.store.retention.vacuum(removed, 'never')).toEqual([]);
    const before = await vacuumCounts();
    const auto = await h.store.retention.vacuum(removed);
    expect(auto).toEqual(serverVacuums ? ['job_events'] : ['jobs', 'job_events']);
    await expect
      .poll(async () => {
        const after = await vacuumCounts();
        return auto.map((table) => (after[table] ?? 0) - (before[table] ?? 0));
      })
      .toEqual(auto.map(() => 1));

    expect(await h.store.retention.vacuum(removed, 'always')).toEqual(['jobs', 'job_events']);
    // Nothing removed: nothing to vacuum, whatever the mode.
    expect(await h.store.retention.vacuum({ ...removed, jobs: 0, jobEvents: 0 }, 'always')).toEqual([]);
  });

  it('refuses a mode that is not auto, always or never; rejects once the store is closed', async () => {
    const removed = await pruned();
    await expect(h.store.retention.vacuum(removed, 'full' as never)).rejects.toThrow(
      new RangeError("retention.vacuum: vacuum must be one of auto, always, never, got 'full'"),
    );
    await h.store.close();
    await expect(h.store.retention.vacuum(removed, 'always')).rejects.toThrow(Error);
  });
});
