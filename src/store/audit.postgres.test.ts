import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { auditContract } from './audit-contract.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_audit_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema, as
 * another process would.
 */
describePostgres('audit tests')('PostgreSQL audit', () => {
  auditContract('postgres', postgresStoreHarness('bw_audit'));
});
