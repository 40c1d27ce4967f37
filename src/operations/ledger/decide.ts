import { isBreakwaterError, type BreakwaterError } from '../../core/index.js';
import type { OperationPatch, OperationRecord, OperationState } from '../../store/index.js';
import { LEDGER_DEFAULTS } from './defaults.js';
import { evidenceOf, type Evidence } from './result.js';
import type { AnyOperationAction, LookupResult } from './types.js';

/**
 * The ledger's decisions as pure functions of what was observed: which history a failed attempt belongs to,
 * and what a lookup settles. `ledger.ts` writes them with a compare-and-set.
 */

/** A decided transition: the patch, and the audit step that names it. */
export interface Decision {
  patch: OperationPatch;
  step: string;
}

/** A short observation: the error's transport reason (`ECONNRESET`, `http_503`) or its code. */
export function observationOf(error: unknown): string {
  if (isBreakwaterError(error)) {
    const reason = error.details?.['reason'];
    return typeof reason === 'string' ? reason : error.code;
  }
  if (error instanceof Error) return error.name;
  return typeof error;
}

/**
 * Failures that never leave the process: a policy refused the call before anything was sent (an open breaker,
 * a full bulkhead, our own rate or spend limit).
 */
const REFUSED_BEFORE_SENDING: ReadonlySet<string> = new Set([
  'circuit_open',
  'bulkhead_full',
  'rate_limited',
  'spend_limited',
]);

/**
 * Answers with which the service says it did not process the request: 408 Request Timeout, 425 Too Early
 * (RFC 9110, section 15.5.9; RFC 8470), 429 Too Many Requests (RFC 6585, section 4) and 503 Service
 * Unavailable (RFC 9110, section 15.6.4). Core's `classify` gives them outcome `failed` for any method.
 */
const NOT_PROCESSED_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 503]);

/**
 * The error kept on an operation: code, sentence, the dependency's code when the failure carried one, and
 * `retry_at` (epoch ms on the ledger's clock) when it carried a wait (`retryAfterMs`: an open breaker's
 * remaining time, `Retry-After`). Readers turn `retry_at` back into a wait with their clock.
 */
export interface StoredError {
  code: string;
  message: string;
  dependency_code?: string;
  retry_at?: number;
}

function storedError(error: BreakwaterError, now: number): StoredError {
  const stored: StoredError = { code: error.code, message: error.message };
  const dependencyCode = error.details?.['dependency_code'];
  if (typeof dependencyCode === 'string') stored.dependency_code = dependencyCode;
  const wait = error.retryAfterMs;
  if (wait !== undefined && Number.isFinite(wait) && wait > 0) stored.retry_at = now + wait;
  return stored;
}

/**
 * The histories of a failed attempt (DESIGN: "Classification"), told apart by what the transport saw,
 * never by whether a retry would be safe:
 * - never sent: a policy refused it ({@link REFUSED_BEFORE_SENDING}), or the error says `written: false`
 *   (`upstream/` sets it for connect, DNS and TLS-handshake failures) → back to `pending` (safe to send
 *   again under the same id; settled `failed` at the recovery deadline if nobody does);
 * - not processed: a transient, outcome-`failed` error whose `details.upstream_status` says the service did
 *   not process it ({@link NOT_PROCESSED_STATUSES}) → `pending` when the action allows resending
 *   (`retryAllowed`), else settled `failed`; never `unknown`;
 * - refused by the service: a `permanent` BreakwaterError (a 4xx, a bad certificate) → settled `failed`;
 * - anything else (a reset, a response timeout, a 500/502/504, a cancel in flight, an unexpected error) may
 *   have been written → `unknown`, looked up at once. A 409 `idempotency_in_progress` (the service holds a
 *   request under this id) is recorded as `acknowledged` evidence: the operation is then never settled
 *   `failed` on a later "not found".
 * The error of a `pending` or `failed` operation is kept as a {@link StoredError}, its wait as `retry_at`.
 */
export function decideFailure(error: unknown, record: OperationRecord, now: number): Decision {
  const observation = observationOf(error);
  if (isBreakwaterError(error) && error.code !== 'canceled') {
    const notSent = REFUSED_BEFORE_SENDING.has(error.code) || error.details?.['written'] === false;
    const status = error.details?.['upstream_status'];
    const notProcessed =
      error.kind === 'transient' &&
      error.outcome === 'failed' &&
      typeof status === 'number' &&
      NOT_PROCESSED_STATUSES.has(status);
    if (notSent || notProcessed || error.kind !== 'transient') {
      const stored = storedError(error, now);
      if (notSent || (notProcessed && record.retryAllowed)) {
        return {
          patch: { state: 'pending', observation, error: stored, nextCheckAt: record.recoveryDeadlineAt },
          step: notSent ? 'operation.not_sent' : 'operation.not_processed',
        };
      }
      return {
        patch: { state: 'failed', observation, error: stored, nextCheckAt: null },
        step: 'operation.failed',
      };
    }
  }
  const patch: OperationPatch = { state: 'unknown', observation, nextCheckAt: now };
  if (observation === 'idempotency_in_progress')
    patch.evidence = { ...evidenceOf(record), acknowledged: true };
  return { patch, step: 'operation.unknown' };
}

/** What a lookup settles; `resend` when the operation went back to `pending` to be sent again. */
export interface LookupDecision extends Decision {
  resend: boolean;
}

/**
 * What a lookup's answer settles (DESIGN: "after unknown: reconcile through the action's status lookup;
 * resend only if allowed and the lookup shows nothing was accepted"):
 * - `succeeded` / `failed` at the service: settled so;
 * - `in_progress`: unchanged, looked at again after `checkEveryMs`;
 * - `not_found`, resending allowed, attempts left, not `manual`: back to `pending` (resend);
 * - `not_found` otherwise: unchanged (the first request may still be on its way, or still running at a
 *   service that answers lookups only once it commits), so it ends `needs_attention` at its deadline. Only a
 *   `manual` lookup (past the deadline: `breakwater ops reconcile`) settles it `failed` (`not_accepted`), and
 *   not even that when the service once said it holds a request under the id (`acknowledged`).
 * An operation in `needs_attention` stays there unless settled (and is not scheduled again).
 */
export function decideLookup(
  action: AnyOperationAction,
  record: OperationRecord,
  found: LookupResult<unknown>,
  now: number,
  manual: boolean,
  checkEveryMs: number,
): LookupDecision {
  // The lookup ran, so the wait an earlier failed lookup carried is over.
  const { lookup_retry_at: _over, ...kept } = evidenceOf(record);
  const evidence: Evidence = { ...kept, last_lookup_at: now, last_lookup: found.state };
  const step = 'operation.reconciled';
  if (found.state === 'succeeded') {
    const patch = { state: 'succeeded' as const, result: found.result ?? null, evidence, nextCheckAt: null };
    return { patch: { ...patch, observation: 'lookup_succeeded' }, step, resend: false };
  }
  if (found.state === 'failed') {
    const patch = { state: 'failed' as const, error: found.error, evidence, nextCheckAt: null };
    return { patch: { ...patch, observation: 'lookup_failed' }, step, resend: false };
  }
  if (found.state === 'not_found') {
    const maxAttempts = action.maxAttempts ?? LEDGER_DEFAULTS.maxAttempts;
    if (!manual && action.retryAllowed && record.attempts < maxAttempts) {
      const patch: OperationPatch = {
        state: 'pending',
        observation: 'lookup_not_found',
        error: null,
        evidence,
        nextCheckAt: record.recoveryDeadlineAt,
      };
      return { patch, step, resend: true };
    }
    if (manual && evidence.acknowledged !== true) {
      const error = {
        code: 'not_accepted',
        message: 'The service holds nothing under this operation, so it did not happen.',
      };
      const patch = {
        state: 'failed' as const,
        observation: 'lookup_not_found',
        error,
        evidence,
        nextCheckAt: null,
      };
      return { patch, step, resend: false };
    }
  }
  // in_progress, or a not_found that proves nothing yet.
  return { patch: { ...waitPatch(record, now, checkEveryMs), evidence }, step, resend: false };
}

/** Unsettled and looked at again later: `unknown` after `checkEveryMs`, or `needs_attention` unscheduled. */
export function waitPatch(record: OperationRecord, now: number, checkEveryMs: number): OperationPatch {
  const state: OperationState = record.state === 'needs_attention' ? 'needs_attention' : 'unknown';
  return { state, nextCheckAt: state === 'needs_attention' ? null : now + checkEveryMs };
}
