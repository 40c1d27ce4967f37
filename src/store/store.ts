import type { AuditStore } from './audit.js';
import type { CounterStore } from './counters.js';
import type { IdempotencyStore } from './idempotency.js';
import type { JobStore } from './jobs.js';
import type { ApiKeyStore } from './keys.js';
import type { OperationStore } from './operations.js';
import type { RetentionStore } from './retention.js';
import type { RouteStore } from './routes.js';
import type { AdminSessionStore } from './sessions.js';
import type { StreamEventStore } from './stream-events.js';
import type { WebhookInboxStore } from './webhooks.js';

/**
 * The aggregates added after the job store hang off the store as properties (facets) rather than as more
 * flat methods: `store.idempotency.begin(…)`, `store.operations.update(…)`, `store.audit.append(…)`,
 * `store.counters.update(…)`, `store.routes.deploy(…)`, `store.keys.get(…)`, `store.sessions.get(…)`,
 * `store.retention.prune(…)`. They
 * share the store's connection (SQLite) or pool (PostgreSQL), its clock and its lifetime: after the store's
 * `close()` every facet method rejects with an Error.
 */
export interface StoreFacets {
  /** Inbound `Idempotency-Key` records (`idempotency.ts`). */
  readonly idempotency: IdempotencyStore;
  /** The outbound operation ledger (`operations.ts`). */
  readonly operations: OperationStore;
  /** The hash-chained audit log (`audit.ts`). */
  readonly audit: AuditStore;
  /** Counters under an atomic read-modify-write: rate-limit windows, spend budgets (`counters.ts`). */
  readonly counters: CounterStore;
  /** Versioned AI gateway routes: immutable versions, one deployed per name (`routes.ts`). */
  readonly routes: RouteStore;
  /** API keys: hashed secrets, scopes, bound metadata, expiry, revocation (`keys.ts`). */
  readonly keys: ApiKeyStore;
  /** Server-side admin sessions, revocable at logout (`sessions.ts`). */
  readonly sessions: AdminSessionStore;
  /** Removing finished state past its retention, and the store's size (`retention.ts`). */
  readonly retention: RetentionStore;
}

/** Every aggregate a Breakwater store holds, whichever backend it runs on. */
export type Store = JobStore & StreamEventStore & WebhookInboxStore & StoreFacets;
