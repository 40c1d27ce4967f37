import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import {
  TEST_DATABASE_URL as url,
  describePostgres,
  postgresStoreHarness,
  testSchemas,
} from '../../test/support/postgres.js';
import { ownerContract } from './owner-contract.js';
import { openPostgresStore } from './postgres/index.js';

/** Runs against the database in BREAKWATER_TEST_DATABASE_URL: a fresh schema `bw_owner_<random>` per test. */
describePostgres('owner tests')('PostgreSQL owners', () => {
  ownerContract('postgres', postgresStoreHarness('bw_owner'));

  const schemas = testSchemas('bw_owner_plan');
  afterEach(() => schemas.dropAll());

  it('migration 9 indexes (owner, id) of jobs and operations, and a list by owner reads through them', async () => {
    const schema = await schemas.create();
    const store = await openPostgresStore({ url, clock: new FakeClock(), schema });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const indexes = await client.query<{ indexname: string; indexdef: string }>(
        `SELECT indexname, indexdef FROM pg_indexes
          WHERE schemaname = $1 AND indexname IN ('jobs_owner_id', 'operations_owner_id') ORDER BY indexname`,
        [schema],
      );
      expect(indexes.rows).toEqual([
        {
          indexname: 'jobs_owner_id',
          indexdef: `CREATE INDEX jobs_owner_id ON ${schema}.jobs USING btree (owner, id) WHERE (owner IS NOT NULL)`,
        },
        {
          indexname: 'operations_owner_id',
          indexdef: `CREATE INDEX operations_owner_id ON ${schema}.operations USING btree (owner, id) WHERE (owner IS NOT NULL)`,
        },
      ]);
      // With sequential scans priced out (an empty table would take one), the owner's keyset page is an
      // index scan of jobs_owner_id in order: no sort.
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT * FROM ${schema}.jobs WHERE owner = 'key:a' AND id < 'job_z' ORDER BY id DESC LIMIT 50`,
      );
      await client.query('ROLLBACK');
      const lines = plan.rows.map((row) => row['QUERY PLAN']);
      expect(lines.some((line) => line.includes(`Index Scan Backward using jobs_owner_id on jobs`))).toBe(
        true,
      );
      expect(lines.some((line) => line.includes('Sort'))).toBe(false);
    } finally {
      await client.end();
      await store.close();
    }
  });
});
