import { streamEventStoreContract } from './stream-events-contract.js';
import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_streams_<random>`, dropped after it; `reopen` opens a second store on the same schema (a restart).
 */
describePostgres('stream event tests')('PostgreSQL stream event store', () => {
  streamEventStoreContract('postgres', postgresStoreHarness('bw_streams'));
});
