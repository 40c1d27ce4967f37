import { webhookInboxContract } from './webhooks-contract.js';
import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL: each test gets a fresh schema
 * `bw_inbox_<random>`, dropped after it; `reopen` opens a second store on the same schema (a restart).
 */
describePostgres('webhook inbox tests')('PostgreSQL webhook inbox', () => {
  webhookInboxContract('postgres', postgresStoreHarness('bw_inbox'));
});
