import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';
import { countersContract } from './counters-contract.js';
import { openPostgresStore } from './postgres/index.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_counters_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema,
 * as another process would.
 */
describePostgres('counter tests')('PostgreSQL counters', () => {
  const schemas = testSchemas('bw_counters');
  let schema: string;

  countersContract('postgres', {
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
