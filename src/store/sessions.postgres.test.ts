import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { sessionsContract } from './sessions-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_sessions_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema,
 * as another process would.
 */
describePostgres('admin session tests')('PostgreSQL admin sessions', () => {
  sessionsContract('postgres', postgresStoreHarness('bw_sessions'));
});
