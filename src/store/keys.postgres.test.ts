import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { keysContract } from './keys-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_keys_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema,
 * as another process would.
 */
describePostgres('API key tests')('PostgreSQL API keys', () => {
  keysContract('postgres', postgresStoreHarness('bw_keys'));
});
