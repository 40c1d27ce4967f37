import {
  EventSource,
  neverAbortedSignal,
  rejectSoon,
  type BreakwaterError,
  type Clock,
} from '../core/index.js';
import type { BreakerWindow } from './breaker-windows.js';
import { resolveOptions, validSnapshot, type CircuitBreakerOptions } from './circuit-breaker-options.js';
import type {
  CircuitBreakerSnapshot,
  CircuitBreakerStatus,
  CircuitCallEvent,
  CircuitFailureEvent,
  CircuitRejectedEvent,
  CircuitStateChange,
} from './circuit-breaker-types.js';
import { RejectionErrors, type RejectingState } from './circuit-breaker-rejections.js';
import {
  CLOSED,
  halfOpen,
  untilHalfOpen,
  type BreakerState,
  type HalfOpen,
  type Open,
} from './circuit-breaker-state.js';
import { executeOne } from './invoke.js';
import type { Next, Observable, Policy, PolicyContext, PolicyFn } from './types.js';

export {
  CIRCUIT_BREAKER_DEFAULTS,
  isDependencyFailure,
  type CircuitBreakerOptions,
  type OpenBackoff,
} from './circuit-breaker-options.js';
export type * from './circuit-breaker-types.js';

/**
 * A circuit breaker (docs/policies.md#circuit-breaker).
 *
 * - **closed**: every call runs; results the failure predicates count go to the window, which opens the
 *   breaker when it says so. Errors not counted (a 404, a cancel, our own `rate_limited`) are rethrown
 *   unchanged and not recorded at all: they are neither failures nor successes. Nor is any error of a call
 *   whose `ctx.signal` had aborted (the caller or an outer policy gave up: whatever it rejects with, often a
 *   plain Error or a string, says nothing about the dependency).
 * - **open**: calls are rejected at once. After the open period (fixed, or `openBackoff` growing it on each
 *   consecutive reopen until the breaker closes) the breaker is half-open. There are no timers: the
 *   transition is computed from `clock.now()` when a call arrives or `state()` is read.
 * - **half-open**: up to `permittedCalls` trials run at once; other calls are rejected at once.
 *   `successesToClose` trial successes close it (window cleared, backoff reset); any trial failure, or a
 *   trial slower than the window's `slowCallDurationMs`, reopens it and arms exactly one new open period. A
 *   trial whose error is not counted frees its slot without a verdict. Results of calls admitted before a
 *   transition (or a `reset`) are ignored. A hung trial cannot hold it half-open: a call that finds every
 *   slot taken `halfOpenMaxWaitMs` (default: the open period just ended) after the running trials started
 *   reopens it (`trial_timeout`, one new open period) and is rejected as open. Lazy too (no timer); with
 *   several trials the clock starts at the first one admitted since none was running, not the oldest still
 *   running, so it may reopen a little early.
 * - **isolated**: held open by {@link isolate} until {@link reset}.
 *
 * Rejections are `BreakwaterError` `circuit_open` (transient, 503) with `source: name`,
 * `details.circuit_state`, a message naming the dependency ("gift-service is temporarily unavailable after
 * repeated failures; try again in about 20 seconds.") and `retryAfterMs`:
 * - open: ms until half-open (>= 1);
 * - half-open: the open period the breaker would get if a running trial failed, i.e. the longest wait
 *   before the next trial is admitted (a trial that succeeds closes it sooner);
 * - isolated: `undefined` (only an operator's `reset()` ends it).
 * Rejections carry no stack trace unless `captureRejectionStack` is set: building the stack is the
 * dominant cost of failing fast, and it would only point into the breaker.
 *
 * @throws BreakwaterError `circuit_open` when a call is rejected; any other error is the call's own.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class CircuitBreakerPolicy implements Policy, Observable<CircuitBreakerStatus> {
  readonly name: string;
  readonly window: BreakerWindow;
  readonly openDurationMs: number;
  readonly permittedCalls: number;
  readonly successesToClose: number;
  /** `undefined`: the length of the open period that preceded half-open. */
  readonly halfOpenMaxWaitMs: number | undefined;
  private readonly openPeriodMs: (consecutiveOpens: number) => number;
  private readonly isFailure: (error: unknown) => boolean;
  private readonly isFailureResult: ((value: unknown) => boolean) | undefined;
  private readonly clock: Clock;
  private readonly rejectionErrors: RejectionErrors;
  private readonly readsTime: boolean;
  private readonly slowMs: number;
  private readonly measures: boolean;

  /** What the breaker is doing, and only the fields that state has; {@link CLOSED} is one shared object. */
  private current: BreakerState = CLOSED;
  /** Bumped on every transition and reset: results of calls admitted under an older value are ignored. */
  private generation = 0;
  /** Opens in a row without closing in between (grows the open period); 0 once closed. */
  private consecutiveOpens = 0;
  private closedHandlers: ClosedHandlers | undefined;

  private readonly stateChanges = new EventSource<CircuitStateChange>();
  private readonly successes = new EventSource<CircuitCallEvent>();
  private readonly failures = new EventSource<CircuitFailureEvent>();
  private readonly rejections = new EventSource<CircuitRejectedEvent>();
  /** Subscribe to every transition. */
  readonly onStateChange = this.stateChanges.on;
  /** Subscribe to recorded successes. */
  readonly onSuccess = this.successes.on;
  /** Subscribe to recorded failures. */
  readonly onFailure = this.failures.on;
  /** Subscribe to `circuit_open` rejections. */
  readonly onRejected = this.rejections.on;

  constructor(options: CircuitBreakerOptions = {}) {
    const o = resolveOptions(options);
    this.name = o.name;
    this.window = o.window;
    this.openDurationMs = o.openDurationMs;
    this.openPeriodMs = o.openPeriodMs;
    this.permittedCalls = o.permittedCalls;
    this.successesToClose = o.successesToClose;
    this.halfOpenMaxWaitMs = o.halfOpenMaxWaitMs;
    this.isFailure = o.isFailure;
    this.isFailureResult = o.isFailureResult;
    this.rejectionErrors = new RejectionErrors(o.name, options.name, o.captureRejectionStack);
    this.clock = o.clock;
    this.readsTime = o.window.readsTime === true;
    this.slowMs = o.window.slowCallDurationMs ?? Infinity;
    this.measures = o.window.slowCallDurationMs !== undefined;
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    // Closed is one shared object: the hot path pays one identity comparison for the union.
    if (this.current === CLOSED) {
      if (this.measures || this.isFailureResult !== undefined) return this.call(ctx, next, index);
      // Read once (an outer timeout creates its signal on first read); `call` checks it on a rejection.
      const signal = ctx.signal;
      if (signal !== neverAbortedSignal) return this.call(ctx, next, index, signal);
      // Hot path (the caller cannot abort): one `.then` with handlers shared by every call of this
      // generation: no async frame and no closure per call.
      let handlers = this.closedHandlers;
      if (handlers === undefined || handlers.generation !== this.generation) {
        handlers = this.closedHandlers = this.handlersFor(this.generation);
      }
      return next.invoke(ctx, index).then(handlers.onValue, handlers.onError) as Promise<T>;
    }
    // Decided synchronously: a rejected call never waits for anything.
    const rejection = this.admit();
    return rejection === undefined ? this.call(ctx, next, index) : rejectSoon(rejection);
  }

  /** The current state as plain JSON (applies a due open → half-open transition first). */
  state(): CircuitBreakerStatus {
    const now = this.clock.now();
    this.refresh(now);
    const s = this.current;
    const trials = s.kind === 'half-open' ? s : undefined;
    return {
      name: this.name,
      state: s.kind,
      openedAt: s.kind === 'closed' ? null : s.openedAt,
      halfOpenAt: s.kind === 'open' || s.kind === 'half-open' ? s.halfOpenAt : null,
      retryAfterMs: s.kind === 'open' ? untilHalfOpen(s, now) : trials ? this.nextOpenMs() : null,
      openDurationMs: s.kind === 'open' || s.kind === 'half-open' ? s.openMs : null,
      consecutiveOpens: this.consecutiveOpens,
      trialsInFlight: trials?.trialsInFlight ?? 0,
      trialSuccesses: trials?.trialSuccesses ?? 0,
      trialsSince: trials !== undefined && trials.trialsInFlight > 0 ? trials.trialsSince : null,
      halfOpenMaxWaitMs: nullable(this.trialMaxWaitMs()),
      window: this.window.stats?.(now) ?? null,
    };
  }

  /** Holds the breaker open (state `isolated`) until {@link reset}; calls get `circuit_open`. */
  isolate(): void {
    if (this.current.kind === 'isolated') return;
    const now = this.clock.now();
    this.transition({ kind: 'isolated', openedAt: now }, 'isolated', now);
  }

  /** Closes the breaker from any state: window cleared, backoff reset; results of running calls ignored. */
  reset(): void {
    this.close('reset', this.clock.now());
  }

  /** A persistable copy of the state (see {@link CircuitBreakerSnapshot}). */
  snapshot(): CircuitBreakerSnapshot {
    const now = this.clock.now();
    this.refresh(now);
    const s = this.current;
    const opened = s.kind === 'open' || s.kind === 'half-open';
    return {
      version: 1,
      name: this.name,
      state: s.kind,
      openedAt: s.kind === 'closed' ? null : s.openedAt,
      halfOpenAt: opened ? s.halfOpenAt : null,
      openDurationMs: opened ? s.openMs : null,
      consecutiveOpens: this.consecutiveOpens,
      takenAt: now,
    };
  }

  /**
   * Takes on a {@link snapshot} (from this process or another): an open snapshot keeps its absolute
   * `halfOpenAt`, so only the remaining open time is waited; a half-open one starts with no trial running.
   * The window is cleared (its counts are not part of a snapshot); results of running calls are ignored.
   * Emits a `restored` transition when the state changes.
   *
   * @throws RangeError when the snapshot is malformed (names the field); the breaker is then unchanged.
   */
  restore(snapshot: CircuitBreakerSnapshot): void {
    const s = validSnapshot(snapshot);
    const opened = s.state === 'open' || s.state === 'half-open';
    this.window.reset();
    // validSnapshot guarantees the times an opened or isolated state needs.
    const openedAt = s.openedAt ?? NaN;
    const halfOpenAt = s.halfOpenAt ?? NaN;
    const openMs = s.openDurationMs ?? NaN;
    this.consecutiveOpens = opened ? s.consecutiveOpens : 0;
    const next: BreakerState =
      s.state === 'closed'
        ? CLOSED
        : s.state === 'isolated'
          ? { kind: 'isolated', openedAt }
          : s.state === 'open'
            ? { kind: 'open', openedAt, halfOpenAt, openMs }
            : halfOpen(openedAt, halfOpenAt, openMs);
    this.transition(next, 'restored', this.clock.now());
  }

  /** Result handlers for closed-state calls admitted under `generation` (a predicate error propagates). */
  private handlersFor(generation: number): ClosedHandlers {
    return {
      generation,
      onValue: (value) => {
        this.record(generation, 0, false, undefined);
        return value;
      },
      onError: (error) => {
        if (this.isFailure(error)) this.record(generation, 0, true, error);
        throw error;
      },
    };
  }

  /**
   * Runs one admitted call and records its result (an async frame: no closure per call). `signal` is
   * `ctx.signal` if already read, else it is read only if the call rejects.
   */
  private async call<T>(ctx: PolicyContext, next: Next<T>, index: number, signal?: AbortSignal): Promise<T> {
    const generation = this.generation;
    const startedAt = this.measures ? this.clock.now() : 0;
    let value: T;
    try {
      value = await next.invoke(ctx, index);
    } catch (error) {
      if ((signal ?? ctx.signal).aborted || !this.judge(this.isFailure, error, generation)) {
        this.release(generation);
      } else this.record(generation, startedAt, true, error);
      throw error;
    }
    const failed = this.isFailureResult !== undefined && this.judge(this.isFailureResult, value, generation);
    this.record(generation, startedAt, failed, failed ? value : undefined);
    return value;
  }

  /** Runs a failure predicate; one that throws ends the call without a verdict (a trial frees its slot). */
  private judge(predicate: (subject: unknown) => boolean, subject: unknown, generation: number): boolean {
    try {
      return predicate(subject);
    } catch (predicateError) {
      this.release(generation);
      throw predicateError;
    }
  }

  private record(generation: number, startedAt: number, failed: boolean, error: unknown): void {
    if (generation !== this.generation) return;
    let now = 0;
    let durationMs: number | undefined;
    if (this.measures) {
      now = this.clock.now();
      durationMs = now - startedAt;
    } else if (this.readsTime) now = this.clock.now();

    const state = this.current;
    if (state === CLOSED) {
      if (failed) {
        this.window.recordFailure(durationMs ?? 0, now);
        if (this.failures.hasListeners) {
          this.failures.emit({ name: this.name, state: 'closed', durationMs, error });
        }
      } else {
        this.window.recordSuccess(durationMs ?? 0, now);
        if (this.successes.hasListeners) {
          this.successes.emit({ name: this.name, state: 'closed', durationMs });
        }
      }
      if (this.window.shouldOpen(now)) {
        const at = this.measures || this.readsTime ? now : this.clock.now();
        this.open(this.window.openReason ?? 'threshold', at);
      }
      return;
    }

    // Same generation and not closed: a half-open trial.
    const trial = state as HalfOpen;
    trial.trialsInFlight--;
    const slow = !failed && durationMs !== undefined && durationMs >= this.slowMs;
    if (failed || slow) {
      if (this.failures.hasListeners) {
        this.failures.emit({ name: this.name, state: 'half-open', durationMs, error });
      }
      this.open(slow ? 'trial_slow' : 'trial_failed', this.clock.now());
      return;
    }
    if (this.successes.hasListeners) this.successes.emit({ name: this.name, state: 'half-open', durationMs });
    if (++trial.trialSuccesses >= this.successesToClose) this.close('trials_succeeded', this.clock.now());
  }

  /** A call ended without a verdict: a trial gives its slot back. */
  private release(generation: number): void {
    const s = this.current;
    if (generation === this.generation && s.kind === 'half-open') s.trialsInFlight--;
  }

  /** Admits a call when not closed: a trial slot, or the rejection to return. */
  private admit(): BreakwaterError | undefined {
    let s = this.current;
    if (s.kind === 'isolated') return this.reject('isolated', undefined);
    const now = this.clock.now();
    if (s.kind === 'open') {
      if (now < s.halfOpenAt) return this.reject('open', untilHalfOpen(s, now));
      s = this.toHalfOpen(s);
    }
    if (s.kind !== 'half-open') return undefined; // closed: unreachable (run checks it first)
    if (s.trialsInFlight < this.permittedCalls) {
      if (s.trialsInFlight++ === 0) s.trialsSince = now;
      return undefined;
    }
    if (now - s.trialsSince >= this.trialMaxWaitMs()) {
      // The trials hung: their results now belong to an old generation and are ignored.
      return this.reject('open', untilHalfOpen(this.open('trial_timeout', now), now));
    }
    return this.reject('half-open', this.nextOpenMs());
  }

  /** NaN when there is no open period (closed, isolated) and no `halfOpenMaxWaitMs`. */
  private trialMaxWaitMs(): number {
    const s = this.current;
    return this.halfOpenMaxWaitMs ?? (s.kind === 'open' || s.kind === 'half-open' ? s.openMs : NaN);
  }

  private refresh(now: number): void {
    const s = this.current;
    if (s.kind === 'open' && now >= s.halfOpenAt) this.toHalfOpen(s);
  }

  private toHalfOpen(s: Open): HalfOpen {
    const next = halfOpen(s.openedAt, s.halfOpenAt, s.openMs);
    this.transition(next, 'open_elapsed', s.halfOpenAt);
    return next;
  }

  private open(reason: string, now: number): Open {
    const openMs = this.openPeriodMs(++this.consecutiveOpens);
    const next: Open = { kind: 'open', openedAt: now, halfOpenAt: now + openMs, openMs };
    this.transition(next, reason, now);
    return next;
  }

  private close(reason: string, now: number): void {
    this.window.reset();
    this.consecutiveOpens = 0;
    this.transition(CLOSED, reason, now);
  }

  /** Every transition makes a new state object: a new half-open starts with no trial running. */
  private transition(next: BreakerState, reason: string, at: number): void {
    const from = this.current.kind;
    this.current = next;
    this.generation++;
    const to = next.kind;
    if (from !== to && this.stateChanges.hasListeners) {
      this.stateChanges.emit({ name: this.name, from, to, reason, at });
    }
  }

  private nextOpenMs(): number {
    return this.openPeriodMs(this.consecutiveOpens + 1);
  }

  private reject(state: RejectingState, retryAfterMs: number | undefined): BreakwaterError {
    const error = this.rejectionErrors.get(state, retryAfterMs);
    if (this.rejections.hasListeners) this.rejections.emit({ name: this.name, state, retryAfterMs });
    return error;
  }
}

interface ClosedHandlers {
  readonly generation: number;
  readonly onValue: (value: unknown) => unknown;
  readonly onError: (error: unknown) => never;
}

function nullable(value: number): number | null {
  return Number.isNaN(value) ? null : value;
}

/** Shorthand for `new CircuitBreakerPolicy(options)`. */
export function circuitBreaker(options: CircuitBreakerOptions = {}): CircuitBreakerPolicy {
  return new CircuitBreakerPolicy(options);
}
