import { isBreakwaterError } from '../../core/index.js';
import type { OperationPatch, OperationRecord, OperationState } from '../../store/index.js';
import { evidenceOf, type Evidence } from './result.js';
import type { AnyOperationAction, LookupResult } from './types.js';

/**
 * The ledger's decisions as pure functions of what was observed: which history a failed attempt belongs to,
 * and what a lookup settles. `ledger.ts` writes them with a compare-and-set.
 */

/** Defaults of every {@link AnyOperationAction} and of the ledger. */
export const LEDGER_DEFAULTS = {
  recoveryMs: 15 * 60_000,
  attemptTimeoutMs: 60_000,
  notFoundAfterMs: 30_000,
  maxAttempts: 3,
  /** How soon an `unknown` operation is looked up again, ms. */
  checkEveryMs: 5_000,
} as const;

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
 * The three histories of a failed attempt (DESIGN: "Classification"):
 * - a `BreakwaterError` with outcome `failed` and kind `transient` never reached the service: back to
 *   `pending` (safe to resend under the same id; settled `failed` at the recovery deadline if nobody does);
 * - outcome `failed`, kind `permanent` or `fatal`: the service refused it: settled `failed`;
 * - anything else (outcome `unknown`, a cancel in flight, an unexpected error): it may have been written:
 *   `unknown`, to be looked up at once.
 */
export function decideFailure(error: unknown, record: OperationRecord, now: number): Decision {
  const observation = observationOf(error);
  if (isBreakwaterError(error) && error.outcome === 'failed' && error.code !== 'canceled') {
    const dependencyCode = error.details?.['dependency_code'];
    const stored =
      typeof dependencyCode === 'string'
        ? { code: error.code, message: error.message, dependency_code: dependencyCode }
        : { code: error.code, message: error.message };
    if (error.kind === 'transient') {
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
  return { patch: { state: 'unknown', observation, nextCheckAt: now }, step: 'operation.unknown' };
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
 * - `not_found` otherwise: settled `failed` (`not_accepted`) once believable — `manual` (past the deadline,
 *   nothing can still be in transit) or `notFoundAfterMs` after the last attempt; before that, unchanged.
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
    const lastAttemptAt = evidence.last_attempt_at ?? record.createdAt;
    const notFoundAfterMs = action.notFoundAfterMs ?? LEDGER_DEFAULTS.notFoundAfterMs;
    if (manual || now - lastAttemptAt >= notFoundAfterMs) {
      const error = {
        code: 'not_accepted',
        message: 'The service never received this request, so nothing happened.',
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
  // in_progress, or a not_found too early to believe (the request may still be in transit).
  return { patch: { ...waitPatch(record, now, checkEveryMs), evidence }, step, resend: false };
}

/** Unsettled and looked at again later: `unknown` after `checkEveryMs`, or `needs_attention` unscheduled. */
export function waitPatch(record: OperationRecord, now: number, checkEveryMs: number): OperationPatch {
  const state: OperationState = record.state === 'needs_attention' ? 'needs_attention' : 'unknown';
  return { state, nextCheckAt: state === 'needs_attention' ? null : now + checkEveryMs };
}
