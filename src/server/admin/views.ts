/**
 * The admin API's JSON shapes (snake_case, times as ISO 8601 strings in UTC, durations in ms) of breakers,
 * bulkheads and operations. Jobs use the server's {@link JobView}.
 */
import type {
  BulkheadState,
  CircuitBreakerStatus,
  CircuitState,
  CircuitStateChange,
} from '../../policy/index.js';
import type { OperationRecord, OperationState } from '../../store/index.js';

/**
 * A breaker the dashboard shows and controls: an upstream's (`kind: 'upstream'`) or a webhook handler's
 * (`kind: 'webhook'`). `isolate()` holds it open until `reset()`, which closes it.
 */
export interface AdminBreaker {
  readonly name: string;
  readonly kind: 'upstream' | 'webhook';
  state(): CircuitBreakerStatus;
  /** The last transition, or null before the first. */
  lastTransition(): CircuitStateChange | null;
  isolate(): void;
  reset(): void;
}

/** A breaker as the admin API answers it. */
export interface BreakerView {
  name: string;
  kind: 'upstream' | 'webhook';
  state: CircuitState;
  /** When the current (or last) open period started; when isolated, when isolated. */
  opened_at: string | null;
  /** Ms until an open breaker lets a trial call through; null when closed or isolated. */
  retry_after_ms: number | null;
  /** Opens since it last closed. */
  consecutive_opens: number;
  last_transition: { from: CircuitState; to: CircuitState; reason: string; at: string } | null;
}

/** {@link BreakerView} of a breaker now (reading `state()` applies a due open → half-open transition first). */
export function toBreakerView(breaker: AdminBreaker): BreakerView {
  const status = breaker.state();
  const last = breaker.lastTransition();
  return {
    name: breaker.name,
    kind: breaker.kind,
    state: status.state,
    opened_at: isoOrNull(status.openedAt),
    retry_after_ms: status.state === 'isolated' ? null : status.retryAfterMs,
    consecutive_opens: status.consecutiveOpens,
    last_transition:
      last === null ? null : { from: last.from, to: last.to, reason: last.reason, at: iso(last.at) },
  };
}

/** A bulkhead as the admin API answers it. */
export interface BulkheadView {
  name: string;
  in_use: number;
  queued: number;
  max_concurrent: number;
  max_queue: number;
}

export function toBulkheadView(state: BulkheadState): BulkheadView {
  return {
    name: state.name,
    in_use: state.inUse,
    queued: state.queued,
    max_concurrent: state.maxConcurrent,
    max_queue: state.maxQueue,
  };
}

/**
 * An operation as the admin API answers it. The request body is left out (it may hold personal data; `breakwater
 * ops show` prints it); the result, error and evidence are what an operator decides on.
 */
export interface OperationView {
  id: string;
  action: string;
  target: string;
  state: OperationState;
  attempts: number;
  retry_allowed: boolean;
  /** What the transport saw last (`response_timeout`, `http_201`, …). */
  observation: string | null;
  /** How the outcome is looked up (`{ method, path }`), or null. */
  reconcile: unknown;
  result: unknown;
  error: unknown;
  evidence: unknown;
  created_at: string;
  updated_at: string;
  recovery_deadline_at: string;
  next_check_at: string | null;
  settled_at: string | null;
}

export function toOperationView(record: OperationRecord): OperationView {
  return {
    id: record.id,
    action: record.action,
    target: record.target,
    state: record.state,
    attempts: record.attempts,
    retry_allowed: record.retryAllowed,
    observation: record.observation,
    reconcile: record.reconcile,
    result: record.result ?? null,
    error: record.error ?? null,
    evidence: record.evidence ?? null,
    created_at: iso(record.createdAt),
    updated_at: iso(record.updatedAt),
    recovery_deadline_at: iso(record.recoveryDeadlineAt),
    next_check_at: isoOrNull(record.nextCheckAt),
    settled_at: isoOrNull(record.settledAt),
  };
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return typeof ms === 'number' ? iso(ms) : null;
}
