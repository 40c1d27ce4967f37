import { isBreakwaterError } from '../../core/index.js';
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
 * The three histories of a failed attempt (DESIGN: "Classification"), told apart by what the transport saw,
 * never by whether a retry would be safe:
 * - never sent: a policy refused it ({@link REFUSED_BEFORE_SENDING}), or the error says `written: false`
 *   (`upstream/` sets it for connect, DNS and TLS-handshake failures) → back to `pending` (safe to send
 *   again under the same id; settled `failed` at the recovery deadline if nobody does);
 * - refused by the service: a `permanent` BreakwaterError (a 4xx, a bad certificate) → settled `failed`;
 * - anything else (a reset, a response timeout, a 5xx, a cancel in flight, an unexpected error) may have
 *   been written → `unknown`, looked up at once. A 409 `idempotency_in_progress` (the service holds a
 *   request under this id) is recorded as `acknowledged` evidence: the operation is then never settled
 *   `failed` on a later "not found".
 */
export function decideFailure(error: unknown, record: OperationRecord, now: number): Decision {
  const observation = observationOf(error);
  if (isBreakwaterError(error) && error.code !== 'canceled') {
    const notSent = REFUSED_BEFORE_SENDING.has(error.code) || error.details?.['written'] === false;
    if (notSent || error.kind !== 'transient') {
      const dependencyCode = error.details?.['dependency_code'];
      const stored =
        typeof dependencyCode === 'string'
          ? { code: error.code, message: error.message, dependency_code: dependencyCode }
          : { code: error.code, message: error.message };
      if (notSent) {
        return {
          patch: { state: 'pending', observation, error: stored, nextCheckAt: record.recoveryDeadlineAt },
          step: 'operation.not_sent',
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
  const evidence: Evidence = { ...evidenceOf(record), last_lookup_at: now, last_lookup: found.state };
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
