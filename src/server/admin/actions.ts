/**
 * The admin actions that both the CLI (`breakwater jobs retry`, `breakwater ops reconcile`) and the admin
 * JSON API (`POST /admin/api/jobs/:id/retry`, `POST /admin/api/operations/:id/reconcile`) run: one code
 * path, so both behave alike.
 */
import { BreakwaterError, sleep, systemClock, type Clock } from '../../core/index.js';
import type { Jobs } from '../../jobs/index.js';
import { requestReconcile } from '../../operations/index.js';
import type { JobRecord, OperationRecord, OperationStore } from '../../store/index.js';

/**
 * Puts a dead-lettered (`failed`) job back to `pending` with its attempts reset; a worker that defines its
 * type picks it up.
 * @throws BreakwaterError `not_found` (404) for an unknown job; `invalid_payload` (400, `details.status`) when
 *   the job is not `failed`.
 */
export function retryDeadLetter(jobs: Pick<Jobs, 'retry'>, jobId: string): Promise<JobRecord> {
  return jobs.retry(jobId);
}

/** Options of {@link reconcileOperation}. */
export interface ReconcileOptions {
  /** How long to wait for the lookup's answer, ms (default 30 000; 0 schedules and returns at once). */
  waitMs?: number;
  /** How often the operation is read again while waiting, ms (default 250). */
  pollMs?: number;
  /**
   * Runs a recovery pass now (a gateway passes its ledger's `recover`), so the lookup does not wait for the
   * next pass of a recovery loop. Its failure is ignored: the loop looks the operation up later.
   */
  recoverNow?: () => Promise<unknown>;
  /** Called once the lookup is scheduled, before any wait (the CLI audits the action here). */
  onScheduled?: (record: OperationRecord) => Promise<void>;
  /** Source of time for the schedule and the waits (default the system clock). */
  clock?: Clock;
}

/**
 * How a reconcile ended: `settled` (the operation is `succeeded` or `failed`, perhaps already before),
 * `looked_up` (a recovery pass looked at it and it is still unsettled: its evidence says why), `waiting` (no
 * process looked it up within `waitMs`: one must run with the app that defines its action).
 */
export type ReconcileOutcome = 'settled' | 'looked_up' | 'waiting';

/** What {@link reconcileOperation} resolves with. */
export interface ReconcileResult {
  outcome: ReconcileOutcome;
  /** The operation as scheduled (as found when it was settled already). */
  scheduled: OperationRecord;
  /** The operation as it is now. */
  record: OperationRecord;
}

/** Defaults of {@link ReconcileOptions}. */
export const RECONCILE_DEFAULTS = { waitMs: 30_000, pollMs: 250 } as const;

/**
 * Schedules an unsettled operation for a lookup now (`requestReconcile`: whichever process runs its action's
 * recovery loop performs it; never a resend past the recovery deadline or in `needs_attention`), then waits
 * until it settles or a recovery pass has looked at it (a newer version), or `waitMs` passes.
 * @throws BreakwaterError `not_found` (404) for an unknown operation id.
 */
export async function reconcileOperation(
  store: OperationStore,
  operationId: string,
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const clock = options.clock ?? systemClock;
  const waitMs = options.waitMs ?? RECONCILE_DEFAULTS.waitMs;
  const pollMs = options.pollMs ?? RECONCILE_DEFAULTS.pollMs;
  const scheduled = await requestReconcile(store, operationId, clock.now());
  if (scheduled === undefined) {
    throw new BreakwaterError('not_found', {
      message: `There is no operation ${operationId}.`,
      operationId,
    });
  }
  await options.onScheduled?.(scheduled);
  if (scheduled.settledAt !== null) return { outcome: 'settled', scheduled, record: scheduled };
  await options.recoverNow?.().catch(() => undefined);
  let record = (await store.get(operationId)) ?? scheduled;
  const until = clock.now() + waitMs;
  // Settled, or looked at by a recovery pass (a newer version with the lookup's evidence).
  while (record.settledAt === null && record.version === scheduled.version && clock.now() < until) {
    await sleep(clock, Math.min(pollMs, Math.max(1, until - clock.now())));
    record = (await store.get(operationId)) ?? record;
  }
  const outcome: ReconcileOutcome =
    record.settledAt !== null ? 'settled' : record.version !== scheduled.version ? 'looked_up' : 'waiting';
  return { outcome, scheduled, record };
}
