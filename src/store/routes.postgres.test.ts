import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { routesContract } from './routes-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_routes_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema,
 * as another process would.
 */
describePostgres('route tests')('PostgreSQL routes', () => {
  routesContract('postgres', postgresStoreHarness('bw_routes'));
});
