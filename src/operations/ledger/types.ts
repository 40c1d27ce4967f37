import type { Clock } from '../../core/index.js';
import type { OperationRecord, OperationState, OperationStore, ReconcileHint } from '../../store/index.js';

/** What `send` and `lookup` receive. */
export interface OperationCallContext<Req> {
  /** The operation id: send it as the `Idempotency-Key` of every attempt (the service deduplicates on it). */
  readonly operationId: string;
  /** Send it as `X-Correlation-ID`. */
  readonly correlationId: string;
  /** The request as given to `execute` (for a resumed operation: as stored, i.e. as `redact` returned it). */
  readonly request: Req;
  /** 1 for the first attempt, counted across processes and restarts. */
  readonly attempt: number;
  /** Aborted when the caller gives up; the call must stop. */
  readonly signal: AbortSignal;
}

/** What a status lookup found at the service. */
export type LookupResult<Res> =
  /** The service accepted the operation and it is done: this is its result. */
  | { state: 'succeeded'; result: Res }
  /** The service has it and refused it (e.g. payment declined). */
  | { state: 'failed'; error: { code: string; message: string } }
  /** The service has it and is still working on it: look again later. */
  | { state: 'in_progress' }
  /** The service holds nothing under this operation id. */
  | { state: 'not_found' };

/**
 * A side-effecting action the ledger runs (DESIGN: "Idempotency and operations"). `Req` is what the caller
 * passes (JSON); `Res` is the result (JSON).
 */
export interface OperationAction<Req, Res> {
  /** Stable name, stored with every operation: `commerce.create_order`. 1..255 characters. */
  readonly name: string;
  /** Where it goes, for people reading the ledger: `POST commerce /orders`. 1..255 characters. */
  readonly target: string;
  /**
   * Whether a request may be resent once a status lookup shows the service accepted nothing under the
   * operation id. Say true only when the service deduplicates on the `Idempotency-Key` (a late first request
   * and the resend then still make one effect). Never guessed by the ledger.
   */
  readonly retryAllowed: boolean;
  /** How long after `begin` the ledger keeps trying to settle an operation, ms (default 15 minutes). */
  readonly recoveryMs?: number;
  /**
   * How long an attempt may run before a recovery loop in another process treats it as silent (`unknown`),
   * ms (default 60 000). Must exceed the longest time `send` can take, retries and queueing included.
   */
  readonly attemptTimeoutMs?: number;
  /** Most attempts per operation, the first included (default 3). */
  readonly maxAttempts?: number;
  /** The request as stored in the ledger and audit log: drop secrets here (default: as given). */
  readonly redact?: (request: Req) => unknown;
  /** How a person (or the model) looks the outcome up: `{ method: 'GET', path: '/orders?idempotency_key=op_…' }`. */
  readonly reconcile?: (operationId: string) => ReconcileHint;
  /**
   * Performs the call. Resolve with the result on success. Reject with a `BreakwaterError` (as `upstream/`
   * does) so the ledger can tell the histories apart: outcome `failed` + kind `transient` means the request
   * never reached the service; `permanent` means the service refused it; outcome `unknown` means it may have
   * been written. Any other error counts as `unknown`.
   */
  readonly send: (ctx: OperationCallContext<Req>) => Promise<Res>;
  /**
   * The status lookup by operation id. Without one, an `unknown` operation can only wait for its recovery
   * deadline and be escalated. A rejection means the lookup itself failed (the operation stays `unknown`).
   */
  readonly lookup?: (ctx: OperationCallContext<Req>) => Promise<LookupResult<Res>>;
}

/** An action of any request and result type, for registries. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperationAction = OperationAction<any, any>;

/**
 * The result contract of a side-effecting call (DESIGN: "Idempotency and operations"), in the wire's
 * snake_case so a tool can return it as it is.
 */
export interface OperationResult<Res = unknown> {
  /**
   * `succeeded` or `failed`: settled, or (failed, `retry_allowed`) provably never reached the service or
   * answered that it did not process the request; `unknown`: may have happened.
   */
  outcome: 'succeeded' | 'failed' | 'unknown';
  /** The ledger's state: also `pending`, `in_flight` or `needs_attention`. */
  state: string;
  operation_id: string;
  correlation_id: string;
  /** What the transport saw last: `http_201`, `ECONNRESET`, `timeout`, `lookup_found`, … or null. */
  transport_observation: string | null;
  /**
   * True only when sending again under the same `operation_id` is safe now: the last attempt provably never
   * reached the service, or a lookup found nothing and the action allows resending.
   */
  retry_allowed: boolean;
  /**
   * How long to wait before trying again, ms, when the failure said (an open breaker's remaining time, the
   * service's `Retry-After`), counted from when the result was read (0 once the wait is over); else null.
   * For `failed`, the wait before sending again; for `unknown`, the wait before a resume can look the
   * outcome up (the last lookup met an open breaker or a `Retry-After`; null once it is over, or when the
   * lookup failed without one).
   */
  retry_after_ms: number | null;
  /** How to look the outcome up (the action's lookup), or null. */
  reconcile: ReconcileHint | null;
  /** The result of a succeeded operation. */
  result?: Res;
  /**
   * Why it failed or is unknown: a code, a sentence a model can repeat, and the dependency's own code when
   * the failure carried one (`payment_service_busy`).
   */
  error?: { code: string; message: string; dependency_code?: string };
  attempts: number;
}

/** Where audit records go: `operations/audit`'s `AuditLog` fits. */
export interface OperationAuditSink {
  record(entry: {
    actor: string;
    action: string;
    target: string;
    operationId?: string;
    correlationId?: string;
    data?: unknown;
  }): Promise<unknown>;
}

/**
 * A pino-compatible logger (Fastify's `app.log` fits). `warn` is required; `info` hears each transition
 * (lines at a level the object lacks are dropped).
 */
export interface LedgerLog {
  warn(fields: object, message: string): void;
  info?(fields: object, message: string): void;
  error?(fields: object, message: string): void;
}

/** Emitted when an operation could not be settled by its recovery deadline. */
export interface NeedsAttentionEvent {
  readonly record: OperationRecord;
}

/**
 * Emitted when this process moves an operation to an outcome: settled (`succeeded`, `failed`) or `unknown`
 * (an attempt may have taken effect; the later settle of a reconciled operation is emitted too).
 */
export interface OperationOutcomeEvent {
  /** The operation as stored after the transition; `record.state` is the outcome. */
  readonly record: OperationRecord;
  /** Its state before: `in_flight` for an attempt's answer, `unknown` or `needs_attention` for a lookup's. */
  readonly previous: OperationState;
}

export interface OperationLedgerOptions {
  store: OperationStore;
  /** Every action this process may run or recover (an operation of an unregistered action is left alone). */
  actions?: readonly AnyOperationAction[];
  audit?: OperationAuditSink;
  /** Where transitions and warnings are logged. Default: the process logger (`setLogger`), if any. */
  log?: LedgerLog;
  clock?: Clock;
  /** How soon an `unknown` operation is looked up again, ms (default 5 000). */
  checkEveryMs?: number;
}

export interface ExecuteOptions {
  /**
   * Resume this operation (after `unknown`): never a new id. Its request must be the same. Under a principal
   * (`PrincipalContext`) that may not see it (not its owner, no `admin` scope), it is `not_found`, as an id
   * that does not exist.
   */
  operationId?: string;
  /**
   * A caller key unique per action (e.g. an inbound `Idempotency-Key`): the same key resumes the same
   * operation. A key held by an operation another principal owns is refused (`idempotency_key_mismatch`).
   */
  key?: string;
  /**
   * The principal id that owns a new operation (core's `Principal.id`), or null for none. Default: the
   * current principal (`PrincipalContext.get()?.id`), null outside any. Ignored when resuming.
   */
  owner?: string | null;
  /** Aborting stops waiting; an attempt cut off in flight leaves the operation `unknown`. */
  signal?: AbortSignal;
  /** Who acts, for the audit log (default `breakwater`). */
  actor?: string;
  /**
   * Called once the operation exists (begun or found), before any attempt, with its id and lookup hint: a
   * caller that may be cut off (a tool's deadline) can then still name the operation in its answer.
   */
  onOperation?: (operationId: string, reconcile: ReconcileHint | null) => void;
}
