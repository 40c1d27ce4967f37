import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore } from './postgres/index.js';
import { webhookInboxContract } from './webhooks-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_inbox_<random>`, dropped after it; `reopen` opens a second store on the same schema (a restart).
 */
const url = process.env.BREAKWATER_TEST_DATABASE_URL ?? '';
const describePostgres = url === '' ? describe.skip : describe;
if (url === '') {
  console.log('PostgreSQL webhook inbox tests skipped: set BREAKWATER_TEST_DATABASE_URL=postgres://...');
}

let admin: pg.Client | undefined;
let schema: string | undefined;

async function dropSchema(): Promise<void> {
  if (schema !== undefined) await admin!.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  schema = undefined;
}

describePostgres('PostgreSQL webhook inbox', () => {
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await dropSchema();
    await admin?.end();
  });

  webhookInboxContract('postgres', {
    async open(clock) {
      schema = `bw_inbox_${randomBytes(6).toString('hex')}`;
      return openPostgresStore({ url, clock, schema });
    },
    async reopen(clock) {
      return openPostgresStore({ url, clock, schema: schema! });
    },
    cleanup: dropSchema,
  });
});
