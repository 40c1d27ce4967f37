import { describePostgres, postgresStoreHarness } from '../../../test/support/postgres.js';
import { adminSessionsContract } from './sessions-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_admin_sessions_<random>`, dropped after it; a second gateway opens its own store on the same schema.
 */
describePostgres('admin session tests')('PostgreSQL admin sessions through the admin check', () => {
  adminSessionsContract('postgres', postgresStoreHarness('bw_admin_sessions'));
});
