import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { countersContract } from './counters-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_counters_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema,
 * as another process would.
 */
describePostgres('counter tests')('PostgreSQL counters', () => {
  countersContract('postgres', postgresStoreHarness('bw_counters'));
});
