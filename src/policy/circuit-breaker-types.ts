/**
 * The plain-data shapes of the circuit breaker: its states, events, `state()` status and persistable
 * snapshot. Kept apart from the policy so `circuit-breaker.ts` stays about behaviour.
 */
import type { WindowStats } from './breaker-windows.js';

/**
 * - `closed`: calls flow; the window watches them.
 * - `open`: calls are rejected with `circuit_open` until the open period ends.
 * - `half-open`: up to `permittedCalls` trial calls at a time; the rest are rejected.
 * - `isolated`: held open by hand ({@link CircuitBreakerPolicy.isolate}) until `reset()`.
 */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/**
 * Why a transition happened:
 * - closed → open: the window's reason (`consecutive_failures`, `failure_rate`, `slow_call_rate`, or
 *   `threshold` for a custom window that gives none);
 * - open → half-open: `open_elapsed`;
 * - half-open → open: `trial_failed`, `trial_slow` (a trial success slower than `slowCallDurationMs`), or
 *   `trial_timeout` (a call found every trial slot held for `halfOpenMaxWaitMs`; `at` is that call's time);
 * - half-open → closed: `trials_succeeded`;
 * - by hand: `isolated`, `reset`, `restored`.
 */
export type CircuitTransitionReason = string;

/**
 * Emitted on every transition. `at` is when it took effect, ms since the epoch on the breaker's clock. An
 * open → half-open transition is computed lazily (no timers) when a call arrives or `state()` is read, and
 * its `at` is the end of the open period, not the moment it was noticed.
 */
export interface CircuitStateChange {
  readonly name: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
  readonly reason: CircuitTransitionReason;
  readonly at: number;
}

/**
 * A call the breaker recorded. `state` is `closed` for a normal call, `half-open` for a trial; `durationMs`
 * is set only when the window measures durations (`slowCallDurationMs`), so the hot path reads no clock.
 */
export interface CircuitCallEvent {
  readonly name: string;
  readonly state: 'closed' | 'half-open';
  readonly durationMs: number | undefined;
}

/** A recorded failure: `error` is what was thrown, or the value `isFailureResult` judged a failure. */
export interface CircuitFailureEvent extends CircuitCallEvent {
  readonly error: unknown;
}

/** A call rejected with `circuit_open` without reaching the function. */
export interface CircuitRejectedEvent {
  readonly name: string;
  readonly state: 'open' | 'half-open' | 'isolated';
  readonly retryAfterMs: number | undefined;
}

/**
 * What `state()` returns: plain JSON for health checks and dashboards. Times are ms since the epoch on the
 * breaker's clock; `null` when they do not apply.
 */
export interface CircuitBreakerStatus {
  readonly name: string;
  readonly state: CircuitState;
  /** When the current (or, in half-open, the last) open period started; when `isolated`, when isolated. */
  readonly openedAt: number | null;
  /** When the open period ends (open) or ended (half-open). */
  readonly halfOpenAt: number | null;
  /** What a rejection would carry now: ms until half-open (open), see the breaker's doc (half-open). */
  readonly retryAfterMs: number | null;
  /** Length of the current (or last) open period, ms. */
  readonly openDurationMs: number | null;
  /** Opens since the breaker last closed (drives the open-duration backoff); 0 when closed. */
  readonly consecutiveOpens: number;
  /** Trials running now (half-open only, else 0). */
  readonly trialsInFlight: number;
  /** Trial successes so far in this half-open period (else 0). */
  readonly trialSuccesses: number;
  /**
   * When the running trials started (half-open with a trial running, else `null`): the admission of the first
   * trial since none was running. A call finding every slot taken `halfOpenMaxWaitMs` after it reopens.
   */
  readonly trialsSince: number | null;
  /** The `halfOpenMaxWaitMs` in force: the option, or the current (or last) open period; `null` if none. */
  readonly halfOpenMaxWaitMs: number | null;
  /** The window's counts, or `null` when the window reports none. */
  readonly window: WindowStats | null;
}

/**
 * A persistable copy of a breaker's state (JSON), for {@link CircuitBreakerPolicy.restore}: to survive a
 * restart or to share open state across processes. Times are absolute (ms since the epoch), so a snapshot
 * restored later keeps only the open time that remains. Window counts are not part of it.
 */
export interface CircuitBreakerSnapshot {
  readonly version: 1;
  readonly name: string;
  readonly state: CircuitState;
  readonly openedAt: number | null;
  readonly halfOpenAt: number | null;
  readonly openDurationMs: number | null;
  readonly consecutiveOpens: number;
  /** When the snapshot was taken. */
  readonly takenAt: number;
}
