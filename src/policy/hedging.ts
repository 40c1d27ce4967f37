import {
  BreakwaterError,
  EventSource,
  LinkedAbort,
  abortReason,
  classify,
  type Classification,
  type Clock,
  type TimerHandle,
  neverAbortedSignal,
  defineOptions,
  o,
} from '../core/index.js';
import { executeOne } from './invoke.js';
import { repeatableByDefault } from './retryable.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/** Options of {@link HedgingPolicy}; validated at construction. */
export interface HedgingOptions {
  /** Extra calls at most, besides the primary (integer >= 1, default 1). */
  maxHedgedAttempts?: number;
  /**
   * Ms to wait for an unsettled call before starting the next one (finite, >= 0, default 2000); pick about the
   * dependency's p95 latency. Each hedge is started `delayMs` after the previous call, or at once when the
   * previous call fails with a failure that may be hedged.
   */
  delayMs?: number;
  /**
   * Whether a failure lets the next call start, in place of the default (as for retry:
   * `classify(error).retryable`, except `circuit_open` and our own limits). It is only asked about
   * transient failures other than our own `rate_limited` / `spend_limited`, which never start a hedge. A
   * failure it rejects ends the whole execution with that failure at once; if it throws, the execution
   * ends with its error.
   * @param attempt the call that failed (1 for the primary).
   */
  shouldHedge?: (error: unknown, attempt: number, classification: Classification) => boolean;
  /** Names the dependency in errors and events (a non-empty string, default `hedging`). */
  name?: string;
  clock?: Clock;
}

/** Emitted when a hedged call starts: `attempt` is its number (2 for the first hedge). */
export interface HedgeEvent {
  readonly name: string;
  readonly attempt: number;
  /** `delay`: the previous call was slow; `failure`: the previous call failed. */
  readonly trigger: 'delay' | 'failure';
  /** Ms since the primary started. */
  readonly elapsedMs: number;
}

/** Defaults of {@link HedgingOptions}. */
export const HEDGING_DEFAULTS = { maxHedgedAttempts: 1, delayMs: 2000, name: 'hedging' } as const;

/** Checks {@link HedgingOptions} and applies {@link HEDGING_DEFAULTS}. */
const parseOptions = defineOptions<HedgingOptions>()('hedging', {
  maxHedgedAttempts: o.number().int().min(1).default(HEDGING_DEFAULTS.maxHedgedAttempts),
  delayMs: o.number().nonnegative().default(HEDGING_DEFAULTS.delayMs),
  shouldHedge: o.fn<NonNullable<HedgingOptions['shouldHedge']>>().optional(),
  name: o.string().min(1).default(HEDGING_DEFAULTS.name),
  clock: o.clock(),
});

/**
 * Sends the same call again when the first is slow, and takes the first success (docs/policies.md#hedging).
 * Only for idempotent calls: the dependency may see every one of them.
 *
 * - The primary starts at once; while no call has succeeded, hedge `n + 1` starts `delayMs` after call `n`
 *   started, up to `maxHedgedAttempts` extra calls; none starts at or after `ctx.deadlineAt`.
 * - Every call gets its own signal (a {@link LinkedAbort} of `ctx.signal`) and `attempt` 1, 2, …; the first
 *   success wins. When the execution settles (either way), every call still running has its signal aborted
 *   with a `canceled` BreakwaterError (with the caller's reason when the caller aborted).
 * - A failure that may be hedged (default: as for retry, `classify(error).retryable` except `circuit_open`
 *   and our own limits) starts the next call at once; any other failure (a 404, a bug, an unknown outcome of a write) ends the execution with it at once, aborting
 *   the calls still running, since another copy of the call would not answer differently.
 * - When every call has failed, it rejects with the LAST failure to arrive, unchanged.
 * - When `ctx.signal` aborts, it rejects at once with the signal's reason.
 * The timer, every link and the listener on `ctx.signal` are released on every path.
 *
 * @throws the deciding failure unchanged (see above), or the signal's reason.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class HedgingPolicy implements Policy {
  readonly name: string;
  readonly maxHedgedAttempts: number;
  readonly delayMs: number;
  private readonly shouldHedge: HedgingOptions['shouldHedge'];
  private readonly clock: Clock;
  private readonly hedges = new EventSource<HedgeEvent>();
  /** Subscribe to hedged calls starting. */
  readonly onHedge = this.hedges.on;

  constructor(options: HedgingOptions = {}) {
    const p = parseOptions(options);
    this.maxHedgedAttempts = p.maxHedgedAttempts;
    this.delayMs = p.delayMs;
    this.shouldHedge = p.shouldHedge;
    this.name = p.name;
    this.clock = p.clock;
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    if (ctx.signal.aborted) return Promise.reject(abortReason(ctx.signal));
    return new HedgedRun<T>(this, ctx, next, index).start();
  }

  /** @internal */
  mayHedge(error: unknown, attempt: number): boolean {
    const c = classify(error, { nowMs: this.clock.now() });
    // Never, whatever shouldHedge says (as for retry): permanent or fatal failures and our own limits.
    if (c.kind !== 'transient' || c.code === 'rate_limited' || c.code === 'spend_limited') return false;
    return this.shouldHedge === undefined ? repeatableByDefault(c) : this.shouldHedge(error, attempt, c);
  }

  /** @internal */
  hedged(attempt: number, trigger: 'delay' | 'failure', elapsedMs: number): void {
    if (this.hedges.hasListeners) this.hedges.emit({ name: this.name, attempt, trigger, elapsedMs });
  }

  /** @internal */
  get timerClock(): Clock {
    return this.clock;
  }
}

/** One hedged execution: owns the calls' links, the hedge timer and the listener on the caller's signal. */
class HedgedRun<T> {
  private readonly links: LinkedAbort[] = [];
  private readonly startedAt: number;
  private inFlight = 0;
  private timer: TimerHandle | undefined;
  private settled = false;
  private resolve!: (value: T) => void;
  private reject!: (error: unknown) => void;

  constructor(
    private readonly policy: HedgingPolicy,
    private readonly ctx: PolicyContext,
    private readonly next: Next<T>,
    private readonly index: number,
  ) {
    this.startedAt = policy.timerClock.now();
  }

  start(): Promise<T> {
    const promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // The shared never-aborting signal can never fire: listening to it would only pile up listeners.
    if (this.ctx.signal !== neverAbortedSignal) this.ctx.signal.addEventListener('abort', this);
    this.launch();
    return promise;
  }

  /** @internal EventListenerObject entry point for the caller's signal aborting. */
  handleEvent(): void {
    // The links follow ctx.signal and abort on their own; settle now rather than wait for every call.
    this.finish(false, undefined, abortReason(this.ctx.signal), undefined);
  }

  private get attemptsLeft(): boolean {
    return this.links.length <= this.policy.maxHedgedAttempts;
  }

  private launch(): void {
    const attempt = this.links.length + 1;
    const link = new LinkedAbort(this.ctx.signal);
    this.links.push(link);
    this.inFlight++;
    const call = this.next.invoke(
      { signal: link.signal, attempt, deadlineAt: this.ctx.deadlineAt },
      this.index,
    );
    call.then(
      (value) => this.finish(true, value, undefined, link),
      (error: unknown) => this.failed(error, attempt),
    );
    if (!this.settled) this.arm();
  }

  /** Sets the timer for the next hedge, when one may still start before the deadline. */
  private arm(): void {
    if (this.timer !== undefined) this.policy.timerClock.clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.attemptsLeft) return;
    const fireAt = this.policy.timerClock.now() + this.policy.delayMs;
    if (fireAt >= this.ctx.deadlineAt) return;
    this.timer = this.policy.timerClock.setTimeout(() => this.onDelay(), this.policy.delayMs);
  }

  private onDelay(): void {
    this.timer = undefined;
    if (this.settled) return;
    this.policy.hedged(this.links.length + 1, 'delay', this.elapsed());
    this.launch();
  }

  private failed(error: unknown, attempt: number): void {
    this.inFlight--;
    if (this.settled) return;
    let hedge: boolean;
    try {
      hedge = this.policy.mayHedge(error, attempt);
    } catch (predicateError) {
      // A throwing shouldHedge ends the execution with its error; every call still running is aborted.
      this.finish(false, undefined, predicateError, undefined);
      return;
    }
    if (!hedge) {
      this.finish(false, undefined, error, undefined);
      return;
    }
    if (this.attemptsLeft && this.policy.timerClock.now() < this.ctx.deadlineAt) {
      this.policy.hedged(this.links.length + 1, 'failure', this.elapsed());
      this.launch();
      return;
    }
    // No call may start any more: the last failure to arrive is the answer once none is running.
    if (this.inFlight === 0) this.finish(false, undefined, error, undefined);
  }

  private finish(ok: boolean, value: T | undefined, error: unknown, winner: LinkedAbort | undefined): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) this.policy.timerClock.clearTimeout(this.timer);
    this.timer = undefined;
    this.ctx.signal.removeEventListener('abort', this);
    let lost: unknown;
    for (const link of this.links) {
      if (link === winner || link.signal.aborted) {
        link.dispose();
        continue;
      }
      // When the caller aborted, its reason reaches every call (our listener may run before the links').
      lost ??= this.ctx.signal.aborted
        ? abortReason(this.ctx.signal)
        : new BreakwaterError('canceled', {
            message: `${this.policy.name}: no longer needed; the execution was settled by another call.`,
            source: this.policy.name,
          });
      link.abort(lost);
    }
    if (ok) this.resolve(value as T);
    else this.reject(error);
  }

  private elapsed(): number {
    return this.policy.timerClock.now() - this.startedAt;
  }
}

/** Shorthand for `new HedgingPolicy(options)`. */
export function hedging(options?: HedgingOptions): HedgingPolicy {
  return new HedgingPolicy(options);
}
