import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../../../test/support/postgres.js';
import { quoteIdent } from './db.js';
import { MIGRATIONS, migrate, type Migration } from './migrate.js';

const NOW = 1_700_000_000_000;

/** A migration of the tests' own, creating one table. */
const step = (version: number): Migration => ({
  version,
  name: `step ${version}`,
  sql: (s) => `CREATE TABLE ${s}.step_${version} (x integer)`,
});

describePostgres('migration tests')('PostgreSQL migrations', () => {
  const schemas = testSchemas('bw_migrate');
  let pool: pg.Pool;

  beforeAll(() => {
    pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
  });

  const versions = async (schema: string) =>
    (
      await pool.query<{ version: number }>(
        `SELECT version FROM ${quoteIdent(schema)}.schema_migrations ORDER BY version`,
      )
    ).rows.map((row) => row.version);
  const tables = async (schema: string) =>
    (
      await pool.query<{ tablename: string }>(
        `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename IN ('api_keys', 'admin_sessions')
          ORDER BY tablename`,
        [schema],
      )
    ).rows.map((row) => row.tablename);

  it('migration 10 applies on a version-8 schema: api_keys and admin_sessions', async () => {
    const schema = await schemas.create();
    await migrate(
      pool,
      schema,
      NOW,
      MIGRATIONS.filter((m) => m.version <= 8),
    );
    expect(await tables(schema)).toEqual([]);
    await migrate(pool, schema, NOW);
    expect(await tables(schema)).toEqual(['admin_sessions', 'api_keys']);
    expect(await versions(schema)).toContain(10);
  });

  it('a version numbered below one already applied is still applied, once', async () => {
    // As a schema migrated by a build that had 10 but not 9, opened by one that has both.
    const schema = await schemas.create();
    await migrate(pool, schema, NOW, [...MIGRATIONS, step(1001)]);
    await migrate(pool, schema, NOW, [...MIGRATIONS, step(1001), step(1000)]);
    await migrate(pool, schema, NOW, [...MIGRATIONS, step(1001), step(1000)]);
    expect((await versions(schema)).slice(-2)).toEqual([1000, 1001]);
    await pool.query(`SELECT * FROM ${quoteIdent(schema)}.step_1000`);
  });

  it('a schema with a version this code does not know is refused, nothing applied', async () => {
    const schema = await schemas.create();
    await migrate(pool, schema, NOW, [...MIGRATIONS.filter((m) => m.version <= 8), step(1001)]);
    await expect(migrate(pool, schema, NOW)).rejects.toThrow(
      `PostgresJobStore: schema ${schema} has version(s) 1001, unknown to this code`,
    );
    expect(await tables(schema)).toEqual([]);
  });
});
