import { BreakwaterError, ERROR_CODES, humanDuration, isErrorCode, sentenceFor } from '../../core/index.js';
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
  /**
   * When the wait carried by the last lookup's failure ends (ms since the epoch, the ledger's clock): an open
   * breaker's remaining time or the service's `Retry-After`. No lookup is due before it.
   */
  lookup_retry_at?: number;
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
    default: {
      const wait = lookupWait(record, now);
      return {
        ...base,
        outcome: 'unknown',
        retry_allowed: false,
        retry_after_ms: wait,
        error: { code: 'outcome_unknown', message: withLookupWait(UNKNOWN_SENTENCE, wait) },
      };
    }
  }
}

/**
 * What is left at `now` of the wait the last lookup's failure carried (`Evidence.lookup_retry_at`): ms > 0,
 * or null when none is known or it is over (a lookup may run now).
 */
function lookupWait(record: OperationRecord, now: number): number | null {
  const retryAt = evidenceOf(record).lookup_retry_at;
  if (typeof retryAt !== 'number' || !Number.isFinite(retryAt) || retryAt <= now) return null;
  return Math.ceil(retryAt - now);
}

/** An `unknown` sentence with when its status can next be looked up, when a wait is known. */
function withLookupWait(sentence: string, waitMs: number | null | undefined): string {
  if (waitMs === null || waitMs === undefined || waitMs <= 0) return sentence;
  return `${sentence} Its status can be checked in about ${humanDuration(waitMs)}.`;
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
 * - `unknown` (also `in_flight`, `needs_attention`): `outcome_unknown`, outcome `unknown`, not retryable
 *   (resumable: its `retryAfterMs` and sentence say when a lookup can run again, when that wait is known);
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
    // A known wait (the lookup met an open breaker or a Retry-After) is when a resume can learn the outcome.
    const lookupAfterMs =
      result.retry_after_ms !== null && result.retry_after_ms > 0 ? result.retry_after_ms : undefined;
    return new BreakwaterError('outcome_unknown', {
      message: withLookupWait(texts.unknown?.sentence ?? UNKNOWN_SENTENCE, lookupAfterMs),
      kind: 'transient',
      outcome: 'unknown',
      retryAfterMs: lookupAfterMs,
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
