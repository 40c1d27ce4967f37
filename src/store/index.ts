/**
 * store/: durable state behind one interface per aggregate: jobs and job events, the messages of resumable
 * streams and the webhook inbox as methods of the store; inbound idempotency records, the outbound operation
 * ledger, the audit log, counters, versioned routes, API keys and admin sessions as its facets
 * (`store.idempotency`, `store.operations`, `store.audit`, `store.counters`, `store.routes`, `store.keys`,
 * `store.sessions`, `store.retention`). Imports only core.
 *
 * The backends are not re-exported here, so that importing this face loads no database driver: import
 * `openSqliteStore` from `sqlite/index.js` and `openPostgresStore` from `postgres/index.js`, or call
 * `openStore`, which loads the one a URL names.
 */
export * from './jobs.js';
export {
  EXPIRE_INPUTS_BATCH,
  MAX_INPUT_KEY_LENGTH,
  NO_INPUT,
  type InputAnswerOutcome,
  type InputExpiry,
  type InputRequest,
  type InputSchema,
  type JobInput,
} from './job-input.js';
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
export {
  MAX_IDEMPOTENCY_KEY_LENGTH,
  type IdempotencyBegin,
  type IdempotencyClaim,
  type IdempotencyRecord,
  type IdempotencyRef,
  type IdempotencyStore,
  type StoredResponse,
} from './idempotency.js';
export {
  MAX_OPERATION_FIELD_LENGTH,
  OPERATION_LIST_DEFAULT_LIMIT,
  OPERATION_LIST_MAX_LIMIT,
  OPERATION_STATES,
  SETTLED_OPERATION_STATES,
  type NewOperation,
  type OperationFilter,
  type OperationPatch,
  type OperationRecord,
  type OperationState,
  type OperationStore,
  type ReconcileHint,
} from './operations.js';
export {
  AUDIT_GENESIS_HASH,
  AUDIT_READ_DEFAULT_LIMIT,
  AUDIT_READ_MAX_LIMIT,
  type AuditRecord,
  type AuditSealer,
  type AuditStore,
} from './audit.js';
export {
  MAX_COUNTER_KEY_LENGTH,
  UNCHANGED,
  type CounterOutcome,
  type CounterStep,
  type CounterStore,
} from './counters.js';
export { MAX_ROUTE_NAME_LENGTH, type RouteHead, type RouteStore, type RouteVersion } from './routes.js';
export {
  API_KEY_BOUNDS,
  API_KEY_LIST_DEFAULT_LIMIT,
  API_KEY_LIST_MAX_LIMIT,
  type ApiKeyFilter,
  type ApiKeyRecord,
  type ApiKeyStore,
  type NewApiKey,
} from './keys.js';
export {
  SESSION_BOUNDS,
  type AdminSessionRecord,
  type AdminSessionStore,
  type NewAdminSession,
} from './sessions.js';
export {
  PRUNE_BATCH,
  PRUNE_KINDS,
  RETENTION_DEFAULTS,
  SIZE_KINDS,
  retentionPolicy,
  type BatchedKind,
  type PruneKind,
  type PruneOptions,
  type PruneReport,
  type RetentionPolicy,
  type RetentionStore,
  type SizeKind,
  type StoreSize,
} from './retention.js';
export { VACUUM_DEFAULT, VACUUM_MODES, type VacuumMode } from './vacuum.js';
export { PRUNER_DEFAULTS, startPruner, type PrunedStore, type Pruner, type PrunerOptions } from './pruner.js';
export {
  openStore,
  storeTarget,
  type OpenStoreOptions,
  type Store,
  type StoreFacets,
  type StoreTarget,
} from './open.js';
