import { openPostgresStore } from './postgres/index.js';
import { streamEventStoreContract } from './stream-events-contract.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_streams_<random>`, dropped after it; `reopen` opens a second store on the same schema (a restart).
 */
describePostgres('stream event tests')('PostgreSQL stream event store', () => {
  const schemas = testSchemas('bw_streams');
  let schema: string;

  streamEventStoreContract('postgres', {
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
