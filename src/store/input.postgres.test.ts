import { describePostgres, postgresStoreHarness } from '../../test/support/postgres.js';
import { inputContract } from './input-contract.js';

/** Runs against the database in BREAKWATER_TEST_DATABASE_URL: a fresh schema `bw_input_<random>` per test. */
describePostgres('input tests')('PostgreSQL input', () => {
  inputContract('postgres', postgresStoreHarness('bw_input'));
});
