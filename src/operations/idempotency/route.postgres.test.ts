import { useCleanups } from '../../../test/support/cleanups.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../../test/support/postgres.js';
import { openStore } from '../../store/index.js';
import { idempotencyRouteSuite } from './test-support.js';

/** The route suite on the database in BREAKWATER_TEST_DATABASE_URL, a fresh schema per test. */
describePostgres('idempotency route tests')('the Idempotency-Key route option on PostgreSQL', () => {
  const schemas = testSchemas('bw_idem');
  const defer = useCleanups();
  idempotencyRouteSuite(async (clock) => {
    const schema = await schemas.create();
    defer(() => schemas.drop(schema));
    return openStore({ url, clock, schema });
  });
});
