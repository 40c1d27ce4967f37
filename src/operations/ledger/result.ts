import { BreakwaterError, ERROR_CODES, isErrorCode, sentenceFor } from '../../core/index.js';
import type { OperationRecord } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import type { AnyOperationAction, OperationResult } from './types.js';

/** The sentence for an operation that may or may not have happened. */
export const UNKNOWN_SENTENCE =
  'The service did not confirm this action, so it may or may not have happened; check its status before trying again.';

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
 * The result contract for a stored operation, read at `now` (the ledger's clock). `retry_allowed` is true
 * only for `pending` with attempts left (every attempt failed before the request was written, or the service
 * answered that it did not process it and the action allows resending: sending again under the same id is
 * safe). `retry_after_ms` is the wait the failure carried (its stored `retry_at` − `now`, at least 0), and the
 * sentence's "try again in about N seconds" is said again for that wait; null when none was known.
 */
export function toResult(
  record: OperationRecord,
  action: AnyOperationAction | undefined,
  now: number,
): OperationResult {
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
      return {
        ...base,
        outcome: 'succeeded',
        retry_allowed: false,
        retry_after_ms: null,
        result: record.result,
      };
    case 'failed':
      return {
        ...base,
        outcome: 'failed',
        retry_allowed: false,
        ...errorOf(record.error, NOT_SENT_SENTENCE, now),
      };
    case 'pending':
      // Safe to send again only while attempts are left (a resume past them sends nothing).
      return {
        ...base,
        outcome: 'failed',
        retry_allowed: record.attempts < (action?.maxAttempts ?? LEDGER_DEFAULTS.maxAttempts),
        ...errorOf(record.error, NOT_SENT_SENTENCE, now),
      };
    default:
      return {
        ...base,
        outcome: 'unknown',
        retry_allowed: false,
        retry_after_ms: null,
        error: { code: 'outcome_unknown', message: UNKNOWN_SENTENCE },
      };
  }
}

/** The stored error (see `StoredError`) as the result shows it, with its wait read at `now`. */
function errorOf(
  stored: unknown,
  fallback: string,
  now: number,
): { error: NonNullable<OperationResult['error']>; retry_after_ms: number | null } {
  const error = stored as {
    code?: unknown;
    message?: unknown;
    dependency_code?: unknown;
    retry_at?: unknown;
  } | null;
  if (error === null || typeof error.code !== 'string' || typeof error.message !== 'string') {
    return { error: { code: 'upstream_unavailable', message: fallback }, retry_after_ms: null };
  }
  const retryAt = error.retry_at;
  const wait =
    typeof retryAt === 'number' && Number.isFinite(retryAt) ? Math.max(0, Math.ceil(retryAt - now)) : null;
  const message = wait === null ? error.message : rehint(error.message, wait);
  return {
    error:
      typeof error.dependency_code === 'string'
        ? { code: error.code, message, dependency_code: error.dependency_code }
        : { code: error.code, message },
    retry_after_ms: wait,
  };
}

/**
 * A stored sentence's wait said again for the wait left: "try again in about 20 seconds" read 15 s later
 * says "about 5 seconds", and "try again shortly" once the wait is over. The wording is core's
 * `sentenceFor`, which made it; a sentence without such a hint is left as it is.
 */
function rehint(sentence: string, waitMs: number): string {
  const said = /try again in about [^.;]+/;
  if (!said.test(sentence)) return sentence;
  const hint = waitMs > 0 ? /try again in about [^.;]+/.exec(sentenceFor('overloaded', waitMs)) : null;
  return sentence.replace(said, hint === null ? 'try again shortly' : hint[0]);
}

/** Sentences of {@link operationError} for one action (a model says them to the user). */
export interface OperationErrorTexts {
  /** For `unknown`: the dependency code (e.g. `checkout_outcome_unknown`) and sentence. */
  unknown?: { code: string; sentence: string };
}

/**
 * The `BreakwaterError` of an operation that did not succeed, for a tool to throw (its result then says
 * `outcome`, `operation_id`, `reconcile`, `transport_observation` and `retry_after_ms`; see `mcp/`):
 * - `unknown` (also `in_flight`, `needs_attention`): `outcome_unknown`, outcome `unknown`, not retryable;
 * - `failed` with `retry_allowed` (nothing reached the service, or it answered that it did not process the
 *   request): the stored transient code (e.g. `circuit_open`, `upstream_unavailable`), retryable;
 * - `failed` with a stored transient core code but no `retry_allowed` (the service did not process it, the
 *   action does not allow resending under the same id): that code, transient (a new operation may be
 *   started after the wait);
 * - `failed` otherwise: the stored code when it is one of core's (`upstream_error`), else `upstream_error`,
 *   permanent.
 * `retryAfterMs` is the result's `retry_after_ms` when it is > 0. `details` carry `reconcile`,
 * `transport_observation`, `state` and the dependency code when known.
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
  const wait = result.retry_after_ms;
  const retryAfterMs = wait !== null && wait !== undefined && wait > 0 ? wait : undefined;
  const transient = isErrorCode(code) && ERROR_CODES[code].kind === 'transient';
  if (result.retry_allowed || transient) {
    return new BreakwaterError(isErrorCode(code) ? code : 'upstream_unavailable', {
      message: result.error?.message,
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs,
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
