import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { operationsContract } from './operations-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_ops_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema, as
 * another process would.
 */
describePostgres('operations tests')('PostgreSQL operations', () => {
  operationsContract('postgres', postgresStoreHarness('bw_ops'));
});
