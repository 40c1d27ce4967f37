import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { retentionContract } from './retention-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_retention_<random>`, dropped after it.
 */
describePostgres('retention tests')('PostgreSQL retention', () => {
  retentionContract('postgres', postgresStoreHarness('bw_retention'));
});
