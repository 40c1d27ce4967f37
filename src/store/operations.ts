/**
 * The outbound operation ledger contract (docs/operations.md#the-operation-ledger): a side-effecting call
 * gets an operation, persisted with its intent before the first network call; its id is the idempotency key
 * and correlation id of every attempt, across restarts. The ledger stores state; `operations/` decides the
 * transitions (classification, reconciliation, escalation) and writes them with a compare-and-set on
 * `version`, so two processes reconciling one operation never both win. Implemented by the SQLite and
 * PostgreSQL stores as `store.operations`; one contract suite (`operations-contract.ts`) runs on both.
 *
 * Times are ms since the epoch, read from the store's injected clock (`createdAt`, `updatedAt`, `settledAt`)
 * or given by the caller (`recoveryDeadlineAt`, `nextCheckAt`).
 */

/**
 * - `pending`: persisted, no attempt running (before the first, or between attempts that provably did not
 *   reach the service);
 * - `in_flight`: an attempt may have been written to the service;
 * - `succeeded`, `failed`: settled (terminal);
 * - `unknown`: an attempt went silent after the request may have been written; reconcile before anything else;
 * - `needs_attention`: not settled by its recovery deadline; a person (or `ops reconcile`) must look.
 */
export type OperationState = 'pending' | 'in_flight' | 'succeeded' | 'failed' | 'unknown' | 'needs_attention';

/** Every {@link OperationState}, in lifecycle order. */
export const OPERATION_STATES: readonly OperationState[] = [
  'pending',
  'in_flight',
  'succeeded',
  'failed',
  'unknown',
  'needs_attention',
];

/** `succeeded` and `failed`: an operation in one of them never changes again. */
export const SETTLED_OPERATION_STATES: ReadonlySet<OperationState> = new Set(['succeeded', 'failed']);

/** Longest `action`, `target`, `key` and `correlationId`, in UTF-16 code units. */
export const MAX_OPERATION_FIELD_LENGTH = 255;

/** Default and largest page of {@link OperationStore.list}. */
export const OPERATION_LIST_DEFAULT_LIMIT = 100;
export const OPERATION_LIST_MAX_LIMIT = 1000;

/** How to look the result of an operation up at its service (the action's status lookup). */
export interface ReconcileHint {
  /** HTTP method, e.g. `GET`. */
  method: string;
  /** Path at the service, e.g. `/orders?idempotency_key=op_…`. */
  path: string;
}

/** What {@link OperationStore.begin} persists. */
export interface NewOperation {
  /**
   * The id, when the caller made it (`op_` + UUIDv7 from core's `newId('op')`, so `reconcile` can name it);
   * default a new one. 1..255 characters, no NUL. A `begin` with an id already stored writes nothing and
   * resolves that record with `created: false` (as for `key`).
   */
  id?: string;
  /** What is done, e.g. `commerce.create_order`: 1..255 characters, no NUL. */
  action: string;
  /** Where, e.g. `POST commerce /orders`: 1..255 characters, no NUL. */
  target: string;
  /** The request's significant fields as JSON, secrets already redacted by the caller. */
  request: unknown;
  /** From the action's definition, never guessed: may a request be resent once a lookup shows nothing was accepted. */
  retryAllowed: boolean;
  /** How to look the outcome up, or null when the service offers no lookup. */
  reconcile: ReconcileHint | null;
  /** When an unsettled operation stops being retried or reconciled and becomes `needs_attention` (ms since epoch). */
  recoveryDeadlineAt: number;
  /**
   * Optional caller key, unique per `action` (e.g. an inbound `Idempotency-Key`): a `begin` with an
   * `(action, key)` already stored returns that operation instead (`created: false`).
   */
  key?: string;
  /** Correlation id of the attempts (default: the operation id). */
  correlationId?: string;
  /**
   * The principal id that started it ({@link OperationRecord.owner}): 1..512 characters without NUL
   * (`MAX_OWNER_LENGTH`); absent or null: none.
   */
  owner?: string | null;
}

/** An operation as stored. */
export interface OperationRecord {
  /** `op_` + UUIDv7: sortable by creation time. */
  id: string;
  action: string;
  target: string;
  key: string | null;
  request: unknown;
  correlationId: string;
  retryAllowed: boolean;
  reconcile: ReconcileHint | null;
  state: OperationState;
  /** Attempts sent so far (as counted by the caller through `update`). */
  attempts: number;
  /** Bumped by every `update`: the compare-and-set token. Starts at 1. */
  version: number;
  /** What the transport saw last (`not_sent`, `connect_failed`, `response_timeout`, `connection_reset`, `http_201`, …), or null. */
  observation: string | null;
  /** JSON result of a succeeded operation (or what a lookup found), else null. */
  result: unknown;
  /** JSON error of a failed one (`{ code, message }` or richer), else null. */
  error: unknown;
  /** JSON evidence gathered for `needs_attention` (times, target, last observation, the lookup to run), else null. */
  evidence: unknown;
  recoveryDeadlineAt: number;
  /** When a recovery loop should look at it next (an `in_flight` attempt's expiry, an `unknown`'s next lookup), or null. */
  nextCheckAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** When it became `succeeded` or `failed`, else null. */
  settledAt: number | null;
  /**
   * The principal that started it (core's `Principal.id`), or null for operations made before owners were
   * kept and by the gateway itself. Only that principal, or one with the `admin` scope, may read it again
   * (docs/architecture.md#identity-and-ownership); the store keeps it as given and never checks it. Never
   * changed by `update`.
   */
  owner: string | null;
}

/** A change written by {@link OperationStore.update}; absent fields are left as they are. */
export interface OperationPatch {
  state?: OperationState;
  attempts?: number;
  observation?: string | null;
  result?: unknown;
  error?: unknown;
  evidence?: unknown;
  nextCheckAt?: number | null;
}

/** Filter of {@link OperationStore.list}; results are newest first (by id). */
export interface OperationFilter {
  states?: readonly OperationState[];
  action?: string;
  /** Only operations with `nextCheckAt <= dueBy` (null `nextCheckAt` never matches). */
  dueBy?: number;
  /** Only operations of this owner (exact match), through the `(owner, id)` index. */
  owner?: string;
  /** Keyset pagination: only operations with an id smaller than this one. */
  beforeId?: string;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
}

/** Storage of operations. Every method is one atomic step; after `close()` every method rejects with an Error. */
export interface OperationStore {
  /**
   * Persists a new operation in state `pending` (version 1, attempts 0, `nextCheckAt` = its recovery
   * deadline, so one abandoned before its first attempt is still found by a recovery pass), or, when `key` is set and
   * `(action, key)` is stored already, returns that one (`created: false`; a unique constraint decides).
   * @throws RangeError for an empty, too long or NUL-holding `action`/`target`/`key`/`correlationId`/`owner`,
   *   a non-finite `recoveryDeadlineAt`; BreakwaterError `invalid_payload` for a `request` with no JSON form.
   *   Nothing is written.
   */
  begin(operation: NewOperation): Promise<{ record: OperationRecord; created: boolean }>;

  /** The operation, or undefined. */
  get(id: string): Promise<OperationRecord | undefined>;

  /**
   * Compare-and-set: applies `patch` only when the stored `version` equals `expectedVersion`, bumping
   * `version` and `updatedAt` (and setting `settledAt` when the state becomes `succeeded` or `failed`).
   * A settled operation never changes: an update of one resolves undefined.
   * @returns the updated record; undefined when the operation is unknown, settled, or its version moved on.
   * @throws RangeError for a negative or non-integer `attempts`, an unknown `state`; BreakwaterError
   *   `invalid_payload` for a result, error or evidence with no JSON form. Nothing is written.
   */
  update(id: string, expectedVersion: number, patch: OperationPatch): Promise<OperationRecord | undefined>;

  /** Operations matching `filter`, newest first; keyset-paginated by `beforeId`. */
  list(filter?: OperationFilter): Promise<OperationRecord[]>;
}
