import {
  BreakwaterError,
  EventSource,
  LinkedAbort,
  TimerQueue,
  type Clock,
  type TimerEntry,
  type ErrorCode,
  rejectSoon,
  abortReason,
  defineOptions,
  neverAbortedSignal,
  o,
} from '../core/index.js';
import { executeOne } from './invoke.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/**
 * - `aggressive` (default): the caller gets `timeout` at the limit even if `fn` ignores its signal; the signal
 *   is aborted so cooperative work stops, but `fn` may keep running in the background.
 * - `cooperative`: the signal is aborted at the limit and the policy waits for `fn` to settle; a rejection
 *   after the limit becomes `timeout`, a value returned anyway is kept.
 */
export type TimeoutStrategy = 'aggressive' | 'cooperative';

/** Options of {@link TimeoutPolicy}; validated at construction. */
export interface TimeoutOptions {
  /** Limit per execution in ms (required, > 0). */
  timeoutMs: number;
  /** Default `aggressive`. */
  strategy?: TimeoutStrategy;
  /**
   * Ms kept back from an enclosing deadline so the outer layer still has time to answer (default 50). The
   * effective limit is `min(timeoutMs, deadline − now − deadlineMarginMs)` (docs/architecture.md#deadlines).
   */
  deadlineMarginMs?: number;
  /** Names the dependency in errors and events (a non-empty string, default `timeout`). */
  name?: string;
  clock?: Clock;
}

/** Emitted when a limit fires; `code` is `timeout` (own limit) or `deadline_exceeded` (the deadline's). */
export interface TimeoutEvent {
  readonly name: string;
  readonly code: 'timeout' | 'deadline_exceeded';
  readonly afterMs: number;
}

/** Defaults of {@link TimeoutOptions}. */
export const TIMEOUT_DEFAULTS = { strategy: 'aggressive', deadlineMarginMs: 50, name: 'timeout' } as const;

/** Checks {@link TimeoutOptions} and applies {@link TIMEOUT_DEFAULTS}. */
const parseOptions = defineOptions<TimeoutOptions>()('timeout', {
  timeoutMs: o.number().positive(),
  strategy: o.enum(['aggressive', 'cooperative'] as const).default(TIMEOUT_DEFAULTS.strategy),
  deadlineMarginMs: o.number().nonnegative().default(TIMEOUT_DEFAULTS.deadlineMarginMs),
  name: o.string().min(1).default(TIMEOUT_DEFAULTS.name),
  clock: o.clock(),
});

/**
 * Bounds each execution in time (docs/policies.md#timeout). The limit is the smaller of `timeoutMs` and
 * the enclosing deadline minus a margin; with no useful time left it rejects at once without calling `fn`.
 * The timer and every abort listener are released on every path.
 *
 * @throws BreakwaterError `timeout` when its own limit fires, `deadline_exceeded` when the deadline's does.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class TimeoutPolicy implements Policy {
  readonly name: string;
  readonly timeoutMs: number;
  readonly strategy: TimeoutStrategy;
  private readonly marginMs: number;
  private readonly clock: Clock;
  /** @internal One clock timer for all calls in flight (see core's TimerQueue). */
  readonly timers: TimerQueue;
  private readonly timeouts = new EventSource<TimeoutEvent>();
  /** Subscribe to limits firing. */
  readonly onTimeout = this.timeouts.on;

  constructor(options: TimeoutOptions) {
    const p = parseOptions(options);
    this.timeoutMs = p.timeoutMs;
    this.strategy = p.strategy;
    this.marginMs = p.deadlineMarginMs;
    this.name = p.name;
    this.clock = p.clock;
    this.timers = new TimerQueue(this.clock);
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    const now = this.clock.now();
    let delay = this.timeoutMs;
    let code: ErrorCode = 'timeout';
    if (ctx.deadlineAt !== Infinity) {
      const left = ctx.deadlineAt - now - this.marginMs;
      if (left <= 0) {
        this.fired('deadline_exceeded', 0);
        return rejectSoon(this.error('deadline_exceeded', 0));
      }
      if (left < delay) {
        delay = left;
        code = 'deadline_exceeded';
      }
    }
    const call = new TimedCall<T>(this, ctx, now + delay, code, delay);
    // Schedule first: a timer inside (a bulkhead's queue timeout) due at the same instant fires after ours.
    this.timers.add(call, now + delay);
    next.invoke(call, index).then(
      (value) => call.settle(value, undefined, false),
      (error: unknown) => call.settle(undefined, error, true),
    );
    return call.promise;
  }

  /** @internal */
  error(code: ErrorCode, afterMs: number, cause?: unknown): BreakwaterError {
    const message =
      code === 'deadline_exceeded'
        ? `${this.name}: the deadline ran out after ${afterMs} ms.`
        : `${this.name}: no answer within ${afterMs} ms.`;
    return new BreakwaterError(code, { message, source: this.name, details: { timeout_ms: afterMs }, cause });
  }

  /** @internal */
  fired(code: 'timeout' | 'deadline_exceeded', afterMs: number): void {
    if (this.timeouts.hasListeners) this.timeouts.emit({ name: this.name, code, afterMs });
  }
}

/**
 * One timed execution, in one object: the context passed inside (its signal is created on first access
 * only, so a call that never reads `ctx.signal` costs no AbortController and no listener on the parent),
 * the entry in the policy's timer queue, and the outer promise, settled exactly once.
 */
class TimedCall<T> implements PolicyContext, TimerEntry {
  readonly attempt: number;
  readonly promise: Promise<T>;
  dueAt = 0;
  prevTimer: TimerEntry | undefined = undefined;
  nextTimer: TimerEntry | undefined = undefined;
  queued = false;
  private link: LinkedAbort | undefined = undefined;
  private timedOut: BreakwaterError | undefined = undefined;
  private settled = false;
  /** The work itself has settled (it may have been answered earlier, by an aggressive timeout). */
  private finished = false;
  /** The caller's signal, while an aggressive timeout listens to it (see constructor). */
  private callerSignal: AbortSignal | undefined = undefined;
  private resolve!: (value: T) => void;
  private reject!: (error: unknown) => void;

  constructor(
    private readonly policy: TimeoutPolicy,
    private readonly parent: PolicyContext,
    readonly deadlineAt: number,
    private readonly code: ErrorCode,
    private readonly delay: number,
  ) {
    this.attempt = parent.attempt;
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Aggressive: a caller who gives up is answered at once with its own reason, even if the work ignores
    // its signal (it would otherwise wait for the limit and get a misleading `timeout`). No signal, no cost.
    if (policy.strategy === 'aggressive') {
      const callerSignal = parent.signal;
      if (callerSignal !== neverAbortedSignal && !callerSignal.aborted) {
        this.callerSignal = callerSignal;
        callerSignal.addEventListener('abort', this);
      }
    }
  }

  /** @internal EventListenerObject entry point: the caller's signal aborted. */
  handleEvent(): void {
    const callerSignal = this.stopListening();
    if (this.settled || callerSignal === undefined) return;
    this.settled = true;
    this.policy.timers.remove(this);
    this.link?.abort(abortReason(callerSignal));
    this.reject(abortReason(callerSignal));
  }

  private stopListening(): AbortSignal | undefined {
    const callerSignal = this.callerSignal;
    if (callerSignal !== undefined) {
      this.callerSignal = undefined;
      callerSignal.removeEventListener('abort', this);
    }
    return callerSignal;
  }

  get signal(): AbortSignal {
    if (this.link === undefined) {
      // Linked to the parent only when nothing else relays its abort: an aggressive timeout listening to
      // the caller relays it itself (one listener, not two), and after the work finished (a late read)
      // nothing would ever dispose the link.
      this.link =
        this.finished || this.callerSignal !== undefined
          ? new LinkedAbort()
          : new LinkedAbort(this.parent.signal);
      if (this.timedOut !== undefined) this.link.abort(this.timedOut);
    }
    return this.link.signal;
  }

  /** The limit passed: abort the work; in aggressive mode answer the caller now. */
  onTimer(): void {
    if (this.settled) return;
    const error = this.policy.error(this.code, this.delay);
    this.timedOut = error;
    this.policy.fired(this.code as 'timeout' | 'deadline_exceeded', this.delay);
    this.link?.abort(error);
    if (this.policy.strategy === 'aggressive') {
      this.settled = true;
      this.stopListening();
      this.reject(error);
    }
  }

  /** The work settled: release the timer and the parent link, answer unless already answered. */
  settle(value: T | undefined, error: unknown, failed: boolean): void {
    this.finished = true;
    this.policy.timers.remove(this);
    this.stopListening();
    this.link?.dispose();
    if (this.settled) return;
    this.settled = true;
    if (!failed) this.resolve(value as T);
    else if (this.timedOut !== undefined) {
      // Cooperative: the work stopped because we aborted it; report the timeout, keep the cause.
      this.reject(this.policy.error(this.code, this.delay, error));
    } else this.reject(error);
  }
}

/** Shorthand for `new TimeoutPolicy(options)`; a number means `{ timeoutMs }`. */
export function timeout(options: TimeoutOptions | number): TimeoutPolicy {
  return new TimeoutPolicy(typeof options === 'number' ? { timeoutMs: options } : options);
}
