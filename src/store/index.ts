/**
 * store/: durable state behind one interface per aggregate (jobs and job events, the messages of resumable
 * streams and the webhook inbox, now; idempotency records, operations, audit and counters follow the same
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
export {
  INBOX_LIST_DEFAULT_LIMIT,
  INBOX_LIST_MAX_LIMIT,
  MAX_INBOX_KEY_LENGTH,
  type InboxDelivery,
  type InboxFilter,
  type InboxJob,
  type InboxRecord,
  type WebhookInboxStore,
} from './webhooks.js';
export { openSqliteStore, type SqliteStoreOptions } from './sqlite/index.js';
export { openPostgresStore, type PostgresStoreOptions } from './postgres/index.js';
export { openStore, storeTarget, type OpenStoreOptions, type Store, type StoreTarget } from './open.js';
