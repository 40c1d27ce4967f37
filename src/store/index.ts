/**
 * store/: durable state behind one interface per aggregate (jobs and job events, and the messages of
 * resumable streams, now; idempotency records, operations, audit, webhook inbox and counters follow the same
 * pattern). Imports only core.
 */
export * from './jobs.js';
export {
  STREAM_EVENT_RETENTION_MS,
  STREAM_EVENTS_PAGE_MAX,
  type StreamEvent,
  type StreamEventStore,
  type StreamEventsPage,
} from './stream-events.js';
export { openSqliteStore, type SqliteStoreOptions } from './sqlite/index.js';
export { openPostgresStore, type PostgresStoreOptions } from './postgres/index.js';
export { openStore, storeTarget, type OpenStoreOptions, type Store, type StoreTarget } from './open.js';
