/**
 * What every PostgreSQL test file shares: the database in
 * BREAKWATER_TEST_DATABASE_URL, a `describe` that skips with a printed reason when it is unset, and fresh
 * schemas so tests never see each other's rows and leave nothing behind.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import type { Clock } from '../../src/core/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { type Store } from '../../src/store/index.js';

/** The PostgreSQL database of the tests, or `''` when BREAKWATER_TEST_DATABASE_URL is unset. */
export const TEST_DATABASE_URL = process.env.BREAKWATER_TEST_DATABASE_URL ?? '';

/** `describe`, or `describe.skip` after printing why `what` is skipped (no BREAKWATER_TEST_DATABASE_URL). */
export function describePostgres(what: string): typeof describe.skip {
  if (TEST_DATABASE_URL !== '') return describe;
  console.log(`PostgreSQL ${what} skipped: set BREAKWATER_TEST_DATABASE_URL=postgres://...`);
  return describe.skip;
}

/** Fresh schemas for one suite; see {@link testSchemas}. */
export interface TestSchemas {
  /** Creates `<prefix>_<12 hex>` and returns its name. */
  create(): Promise<string>;
  /** Drops one schema made by `create` (CASCADE; a missing one is fine). */
  drop(schema: string): Promise<void>;
  /** Drops every schema made by `create` and not dropped yet. */
  dropAll(): Promise<void>;
}

/**
 * Fresh schemas on the test database. Call it inside a `describe`: it connects an admin client before the
 * suite and, after it, drops what is left and disconnects.
 */
export function testSchemas(prefix = 'bw_test'): TestSchemas {
  let admin: pg.Client | undefined;
  const made = new Set<string>();
  const schemas: TestSchemas = {
    async create() {
      const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
      await admin!.query(`CREATE SCHEMA ${schema}`);
      made.add(schema);
      return schema;
    },
    async drop(schema) {
      made.delete(schema);
      await admin!.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
    async dropAll() {
      for (const schema of [...made]) await schemas.drop(schema);
    },
  };
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await schemas.dropAll();
    await admin?.end();
  });
  return schemas;
}

/**
 * What a store contract suite needs on PostgreSQL: `open` makes a fresh schema for each test and opens a
 * store on it, `reopen` opens a second store (its own pool) on the same schema, as another process or a
 * restart would, and `cleanup` drops the schemas. Call it inside a `describe`.
 */
export function postgresStoreHarness(prefix: string): {
  open(clock: Clock): Promise<Store>;
  reopen(clock: Clock): Promise<Store>;
  cleanup(): Promise<void>;
} {
  const schemas = testSchemas(prefix);
  let schema = '';
  return {
    async open(clock) {
      schema = await schemas.create();
      return openPostgresStore({ url: TEST_DATABASE_URL, clock, schema });
    },
    reopen: (clock) => openPostgresStore({ url: TEST_DATABASE_URL, clock, schema }),
    cleanup: () => schemas.dropAll(),
  };
}
