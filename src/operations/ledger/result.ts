import { BreakwaterError, isErrorCode } from '../../core/index.js';
import type { OperationRecord } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import type { AnyOperationAction, OperationResult } from './types.js';

/** The sentence for an operation that may or may not have happened. */
export const UNKNOWN_SENTENCE =
  'The service did not confirm this action in time, so it may or may not have happened; check its status before trying again.';

/** The sentence for an operation that no attempt ever delivered. */
const NOT_SENT_SENTENCE =
  'The request never reached the service, so nothing happened; it is safe to try again.';

/** The running evidence kept on an operation (what `needs_attention` shows a person). */
export interface Evidence {
  last_attempt_at?: number;
  last_lookup_at?: number;
  /** What the last lookup found (`succeeded`, `failed`, `in_progress`, `not_found`) or why it failed. */
  last_lookup?: string;
  escalated_at?: number;
  /** The service once answered that it holds a request under this id (409 `idempotency_in_progress`). */
  acknowledged?: boolean;
}

export function evidenceOf(record: OperationRecord): Evidence {
  const value = record.evidence;
  return typeof value === 'object' && value !== null ? (value as Evidence) : {};
}

/**
 * The result contract for a stored operation. `retry_allowed` is true only for `pending` (every attempt
 * failed before the request was written: sending again under the same id is provably safe).
 */
export function toResult(record: OperationRecord, action: AnyOperationAction | undefined): OperationResult {
  const reconcile = action?.reconcile?.(record.id) ?? record.reconcile;
  const base = {
    state: record.state,
    operation_id: record.id,
    correlation_id: record.correlationId,
    transport_observation: record.observation,
    reconcile,
    attempts: record.attempts,
  };
  switch (record.state) {
    case 'succeeded':
      return { ...base, outcome: 'succeeded', retry_allowed: false, result: record.result };
    case 'failed':
      return {
        ...base,
        outcome: 'failed',
        retry_allowed: false,
        error: errorOf(record.error, NOT_SENT_SENTENCE),
      };
    case 'pending':
      // Safe to send again only while attempts are left (a resume past them sends nothing).
      return {
        ...base,
        outcome: 'failed',
        retry_allowed: record.attempts < (action?.maxAttempts ?? LEDGER_DEFAULTS.maxAttempts),
        error: errorOf(record.error, NOT_SENT_SENTENCE),
      };
    default:
      return {
        ...base,
        outcome: 'unknown',
        retry_allowed: false,
        error: { code: 'outcome_unknown', message: UNKNOWN_SENTENCE },
      };
  }
}

function errorOf(stored: unknown, fallback: string): OperationResult['error'] & object {
  const error = stored as { code?: unknown; message?: unknown; dependency_code?: unknown } | null;
  if (error !== null && typeof error.code === 'string' && typeof error.message === 'string') {
    return typeof error.dependency_code === 'string'
      ? { code: error.code, message: error.message, dependency_code: error.dependency_code }
      : { code: error.code, message: error.message };
  }
  return { code: 'upstream_unavailable', message: fallback };
}

/** Sentences of {@link operationError} for one action (a model says them to the user). */
export interface OperationErrorTexts {
  /** For `unknown`: the dependency code (e.g. `checkout_outcome_unknown`) and sentence. */
  unknown?: { code: string; sentence: string };
}

/**
 * The `BreakwaterError` of an operation that did not succeed, for a tool to throw (its result then says
 * `outcome`, `operation_id`, `reconcile` and `transport_observation`; see `mcp/`):
 * - `unknown` (also `in_flight`, `needs_attention`): `outcome_unknown`, outcome `unknown`, not retryable;
 * - `failed` with `retry_allowed` (nothing reached the service): the stored transient code (e.g.
 *   `upstream_unavailable`, `circuit_open`), retryable;
 * - `failed`: the stored code when it is one of core's (`upstream_error`), else `upstream_error`, permanent.
 * `details` carry `reconcile`, `transport_observation`, `state` and the dependency code when known.
 * @throws TypeError for a succeeded result (there is no error to make).
 */
export function operationError(result: OperationResult, texts: OperationErrorTexts = {}): BreakwaterError {
  if (result.outcome === 'succeeded') throw new TypeError('operationError: the operation succeeded');
  const details: Record<string, unknown> = {
    reconcile: result.reconcile,
    transport_observation: result.transport_observation,
    state: result.state,
  };
  if (result.outcome === 'unknown') {
    if (texts.unknown !== undefined) details['dependency_code'] = texts.unknown.code;
    return new BreakwaterError('outcome_unknown', {
      message: texts.unknown?.sentence ?? UNKNOWN_SENTENCE,
      kind: 'transient',
      outcome: 'unknown',
      operationId: result.operation_id,
      details,
    });
  }
  const dependencyCode = result.error?.dependency_code;
  if (dependencyCode !== undefined) details['dependency_code'] = dependencyCode;
  const code = result.error?.code ?? 'upstream_error';
  if (result.retry_allowed) {
    return new BreakwaterError(isErrorCode(code) ? code : 'upstream_unavailable', {
      message: result.error?.message,
      kind: 'transient',
      outcome: 'failed',
      operationId: result.operation_id,
      details,
    });
  }
  return new BreakwaterError(isErrorCode(code) ? code : 'upstream_error', {
    message: result.error?.message,
    kind: 'permanent',
    outcome: 'failed',
    operationId: result.operation_id,
    details: { ...details, reason: code },
  });
}
