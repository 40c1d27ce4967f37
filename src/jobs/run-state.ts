/**
 * What stopped, or is stopping, a job's run, as a tagged union (internal to the jobs folder): each state holds
 * only its own fields, and {@link stopRun} is the one place that says which stop outranks which. Kept apart
 * from `run.ts`, which acts on the state (aborts the handler's signal, heartbeats, writes the end).
 */
import type { BreakwaterError } from '../core/index.js';

/**
 * A run's state. Until its handler settles, a stop of higher rank replaces a lower one (running < shutdown <
 * timeout < canceled < lost); a stop of equal or lower rank changes nothing. Once settled, nothing changes:
 * the end written, logged and traced is the one the run had when its handler settled and its event writes
 * were flushed.
 */
export type RunState = Running | Stopped | Settled;

/** A stop of the run, before its handler settled. */
export type Stopped = ShutDown | TimedOut | Canceled | Lost;

/** What a lost lease came on top of: the stop that held while the lease was this run's. */
export type BeforeLoss = Running | ShutDown | TimedOut | Canceled;

/** Nothing has stopped the run. */
export interface Running {
  readonly kind: 'running';
}

/**
 * The abort of the handler's signal: the first stop's reason, and when it came (ms, the runtime's clock).
 * A stop that outranks it later keeps this abort: the signal aborts once, and the heartbeats' grace
 * (`leaseMs` past the abort) counts from the first.
 */
export interface Abort {
  readonly at: number;
  readonly reason: BreakwaterError;
}

/** The worker's grace ran out: a result still completes the job, a failure releases the lease. */
export interface ShutDown {
  readonly kind: 'shutdown';
  readonly abort: Abort;
}

/** The run's timeout fired: whatever the handler returns, the run fails with `error` (`timeout`). */
export interface TimedOut {
  readonly kind: 'timeout';
  readonly abort: Abort;
  readonly error: BreakwaterError;
}

/** A cancel request reached the run: it ends `canceled`, never retried. */
export interface Canceled {
  readonly kind: 'canceled';
  readonly abort: Abort;
}

/** Another claim took the job: nothing is written, the run that replaced this one owns the job. */
export interface Lost {
  readonly kind: 'lost';
  readonly abort: Abort;
  /** The stop that held before the loss; it says what the run failed with (see {@link failureOf}). */
  readonly before: BeforeLoss;
}

/** The handler settled and its writes were flushed: the run's end is fixed, whatever comes later. */
export interface Settled {
  readonly kind: 'settled';
  readonly stop: Running | Stopped;
}

/** The handler's return: its value, or what it threw. */
export type HandlerOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** The one running state: `state === RUNNING` is the common run's whole check. */
export const RUNNING: Running = Object.freeze({ kind: 'running' });

/** The rank of each stop: a higher one replaces a lower one. */
const RANK = { running: 0, shutdown: 1, timeout: 2, canceled: 3, lost: 4 } as const;

/**
 * The state after `kind` stopped a run in `state` at `at`, `reason` the error its signal aborts with when this
 * stop is the first (for `timeout`, also the run's failure). Returns `state` itself when nothing changes (a
 * settled run, or a stop that does not outrank the current one).
 */
export function stopRun(
  state: RunState,
  kind: Stopped['kind'],
  reason: BreakwaterError,
  at: number,
): RunState {
  if (state.kind === 'settled' || RANK[kind] <= RANK[state.kind]) return state;
  const abort = state.kind === 'running' ? { at, reason } : state.abort;
  switch (kind) {
    case 'shutdown':
      return { kind, abort };
    case 'timeout':
      return { kind, abort, error: reason };
    case 'canceled':
      return { kind, abort };
    case 'lost':
      // RANK: nothing outranks a loss, so `state` is not one.
      return { kind, abort, before: state as BeforeLoss };
  }
}

/** The abort of the handler's signal, once a stop came (kept once settled). */
export function abortOf(state: RunState): Abort | undefined {
  const stop = state.kind === 'settled' ? state.stop : state;
  return stop.kind === 'running' ? undefined : stop.abort;
}

/**
 * What a run failed with, as its end was written (for its span and log line): undefined for a canceled run
 * and for a result; the timeout for a run that timed out, whatever the handler returned; else what the handler
 * threw. A lost run: what the stop before the loss says.
 */
export function failureOf(stop: Running | Stopped, outcome: HandlerOutcome): unknown {
  const held = stop.kind === 'lost' ? stop.before : stop;
  if (held.kind === 'canceled') return undefined;
  if (held.kind === 'timeout') return held.error;
  return outcome.ok ? undefined : outcome.error;
}
