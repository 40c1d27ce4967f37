import { openPostgresStore } from './postgres/index.js';
import { webhookInboxContract } from './webhooks-contract.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_inbox_<random>`, dropped after it; `reopen` opens a second store on the same schema (a restart).
 */
describePostgres('webhook inbox tests')('PostgreSQL webhook inbox', () => {
  const schemas = testSchemas('bw_inbox');
  let schema: string;

  webhookInboxContract('postgres', {
    async open(clock) {
      schema = await schemas.create();
      return openPostgresStore({ url, clock, schema });
    },
    async reopen(clock) {
      return openPostgresStore({ url, clock, schema });
    },
    cleanup: () => schemas.dropAll(),
  });
});
