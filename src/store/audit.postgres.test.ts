import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';
import { auditContract } from './audit-contract.js';
import { openPostgresStore } from './postgres/index.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_audit_<random>`, dropped after it; `reopen` opens a second store (its own pool) on the same schema, as
 * another process would.
 */
describePostgres('audit tests')('PostgreSQL audit', () => {
  const schemas = testSchemas('bw_audit');
  let schema: string;

  auditContract('postgres', {
    async open(clock) {
      schema = await schemas.create();
      return openPostgresStore({ url, clock, schema });
    },
    async reopen(clock) {
      return openPostgresStore({ url, clock, schema });
    },
    cleanup: () => schemas.dropAll(),
  });
});
