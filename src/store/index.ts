/**
 * store/: durable state behind one interface per aggregate (jobs and job events now; idempotency records,
 * operations, audit, webhook inbox and counters follow the same pattern). Imports only core.
 */
export * from './jobs.js';
export { openSqliteStore, type SqliteStoreOptions } from './sqlite/index.js';
export { openPostgresStore, type PostgresStoreOptions } from './postgres/index.js';
