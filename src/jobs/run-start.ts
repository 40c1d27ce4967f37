/**
 * The start of a run: a handler never starts on a lease that has lapsed, or that would lapse before its
 * first heartbeat (docs/jobs.md, "A run starts only on a live lease"). Kept apart from `run.ts`, which is
 * about the run once its handler is going.
 *
 * Time can pass between the claim's commit and the moment the worker gets to start the run (a slow first
 * fsync, a GC pause, a busy event loop). Past `leaseMs`, the lease has lapsed and, to every other worker, the
 * job looks abandoned: another process may reclaim it (the worker that holds the run never does, see
 * `worker.ts`). The lease is a lock in BullMQ's sense (renewed well before it lapses; once lapsed, another
 * worker may take the job and run it again), so a handler must never begin under one that may already be
 * another worker's.
 */
import type { Clock, EventSource, Log } from '../core/index.js';
import type { JobEvent, JobRecord, JobStore, LeaseRef } from '../store/index.js';
import type { Running, Stopped } from './run-state.js';
import type { JobRunOutcome } from './types.js';

/**
 * True when a run may start its handler at once: more than `heartbeatMs` of the claim's lease is left at
 * `now` (the runtime's clock, which must be the store's), so its first heartbeat renews it before it can
 * lapse. The normal case, with no store call. A claim without an expiry counts as lapsed.
 */
export function leaseIsLive(job: JobRecord, now: number, heartbeatMs: number): boolean {
  return (job.leaseExpiresAt ?? now) - now > heartbeatMs;
}

/** Why a run's handler was not started (the `reason` of `job run not started`). */
export type NotStartedReason = 'lease_lost' | 'renewal_failed' | 'renewal_late' | 'canceled' | 'shutdown';

/** What a renewal of a lease found too short to start on said. */
export type Renewal =
  /** Renewed, with more than `heartbeatMs` left when the answer was read: start the handler. */
  | { kind: 'renewed'; cancelRequested: boolean }
  /** The lease is another run's (its token is newer): never call the handler, write nothing. */
  | { kind: 'lost' }
  /** The renewal threw, or answered too late to leave a usable lease: give the lease back. */
  | { kind: 'failed' | 'late'; cancelRequested: boolean };

/**
 * Renews a lease too short to start on with one fenced heartbeat (a lapsed lease nobody reclaimed is still
 * this run's: the token, not the clock, decides). A heartbeat that throws is reported through `warn`.
 */
export async function renewBeforeStart(
  deps: { store: JobStore; clock: Clock; leaseMs: number; heartbeatMs: number },
  lease: LeaseRef,
  warn: (message: string, error: unknown) => void,
): Promise<Renewal> {
  const { store, clock, leaseMs, heartbeatMs } = deps;
  try {
    const askedAt = clock.now();
    const answer = await store.heartbeat(lease, leaseMs);
    if (!answer.ok) return { kind: 'lost' };
    // The store set the expiry from its clock, read after `askedAt`: at least askedAt + leaseMs.
    const live = askedAt + leaseMs - clock.now() > heartbeatMs;
    return { kind: live ? 'renewed' : 'late', cancelRequested: answer.cancelRequested };
  } catch (error) {
    warn(`renewing the lapsed lease of job ${lease.id} before its run failed`, error);
    return { kind: 'failed', cancelRequested: false };
  }
}

/**
 * Ends a run whose handler was never called, by what stopped it (`stop`): a lost lease is left to its new
 * owner; a cancel request ends the job `canceled` (`job.canceled`, told to `ends`); otherwise the lease is released
 * (`pending`, due now, the attempt not counted). A store failure here leaves the lease to lapse (a reclaim
 * then counts an attempt). Logs one `job run not started` line (`info` for a cancel, else `warn`) with
 * `job_id`, `job_type`, `attempt`, `outcome` and `reason`; emits no run event (no handler ran).
 * @returns the outcome: `lost`, `canceled` or `released`.
 */
export async function endUnstarted(
  deps: {
    store: JobStore;
    ends: EventSource<JobEvent>;
    log: Log;
    warn(message: string, error: unknown): void;
  },
  job: JobRecord,
  lease: LeaseRef,
  stop: Running | Stopped,
  reason: NotStartedReason,
): Promise<JobRunOutcome> {
  const { store, ends, log } = deps;
  let outcome: JobRunOutcome = 'lost';
  if (stop.kind !== 'lost') {
    try {
      if (stop.kind === 'canceled') {
        const event = await store.finishCanceled(lease);
        if (event !== undefined) {
          outcome = 'canceled';
          if (ends.hasListeners) ends.emit(event);
        }
      } else if (await store.release(lease)) {
        outcome = 'released';
      }
    } catch (error) {
      deps.warn(`giving back the lease of job ${job.id} failed`, error);
    }
  }
  log.write(
    outcome === 'canceled' ? 'info' : 'warn',
    { job_id: job.id, job_type: job.type, attempt: job.attempts, outcome, reason },
    'job run not started',
  );
  return outcome;
}
