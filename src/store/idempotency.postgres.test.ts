import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { idempotencyContract } from './idempotency-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_idem_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema, as
 * another process would.
 */
describePostgres('idempotency tests')('PostgreSQL idempotency', () => {
  idempotencyContract('postgres', postgresStoreHarness('bw_idem'));
});
