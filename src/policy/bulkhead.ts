import {
  BreakwaterError,
  EventSource,
  neverAbortedSignal,
  type Clock,
  type TimerHandle,
  rejectSoon,
  defineOptions,
  o,
} from '../core/index.js';
import { executeOne } from './invoke.js';
import type { Next, Observable, Policy, PolicyContext, PolicyFn } from './types.js';

/** Options of {@link BulkheadPolicy}; validated at construction. */
export interface BulkheadOptions {
  /** Calls allowed to run at once (required, integer >= 1). */
  maxConcurrent: number;
  /** Calls allowed to wait for a slot, FIFO (integer >= 0, default 0: reject at once when all slots are busy). */
  maxQueue?: number;
  /**
   * Longest wait in the queue, in ms (finite, > 0). Default: none, a queued call waits until a slot frees, its
   * signal aborts or its deadline passes.
   */
  queueTimeoutMs?: number;
  /** Names the dependency in errors, events and state (a non-empty string, default `bulkhead`). */
  name?: string;
  clock?: Clock;
}

/** Defaults of {@link BulkheadOptions} (`queueTimeoutMs` has none: no queue timeout). */
export const BULKHEAD_DEFAULTS = { maxQueue: 0, name: 'bulkhead' } as const;

/** Checks {@link BulkheadOptions} and applies {@link BULKHEAD_DEFAULTS}. */
const parseOptions = defineOptions<BulkheadOptions>()('bulkhead', {
  maxConcurrent: o.number().int().min(1),
  maxQueue: o.number().int().min(0).default(BULKHEAD_DEFAULTS.maxQueue),
  queueTimeoutMs: o.number().positive().optional(),
  name: o.string().min(1).default(BULKHEAD_DEFAULTS.name),
  clock: o.clock(),
});

/** What {@link BulkheadPolicy.state} reports: slots in use, calls waiting, and the limits. */
export interface BulkheadState {
  readonly name: string;
  readonly inUse: number;
  readonly queued: number;
  readonly maxConcurrent: number;
  readonly maxQueue: number;
}

/**
 * Why the bulkhead turned a call away: `full` (every slot and queue place taken), `queue_timeout` (waited
 * `queueTimeoutMs` without a slot), `deadline_exceeded` (the call's deadline passed while it waited).
 */
export type BulkheadRejectReason = 'full' | 'queue_timeout' | 'deadline_exceeded';

/** Emitted when the bulkhead rejects a call; `waitedMs` is 0 for `full`. */
export interface BulkheadRejectedEvent {
  readonly name: string;
  readonly reason: BulkheadRejectReason;
  readonly waitedMs: number;
}

/** Emitted when a call starts waiting; `queued` is the queue length including it. */
export interface BulkheadQueuedEvent {
  readonly name: string;
  readonly queued: number;
}

/**
 * Emitted when a queued call leaves the queue by getting a slot (`admitted`) or because its signal aborted
 * (`aborted`). A queued call that times out is reported by `onRejected` instead, so each queued call ends in
 * exactly one of the two events.
 */
export interface BulkheadDequeuedEvent {
  readonly name: string;
  readonly outcome: 'admitted' | 'aborted';
  readonly waitedMs: number;
}

/**
 * Limits how many calls to one dependency run at once (docs/policies.md#bulkhead), so a slow dependency
 * cannot take every connection, socket or worker. Up to `maxConcurrent` calls run; up to `maxQueue` more wait
 * in FIFO order for a slot; the rest are rejected at once.
 *
 * A queued call leaves the queue at once, freeing its place, when its signal aborts (rejecting with the
 * signal's reason), when `queueTimeoutMs` passes or when its deadline (`ctx.deadlineAt`) passes. Timers and
 * abort listeners exist only while a call is queued and are removed on every path. A call that gets a slot
 * straight away costs a counter, the inner call and one `.then`: no timer, listener or closure, and it does
 * not read `ctx.signal` (which could make an outer timeout allocate its lazy controller).
 *
 * Inside a timeout policy the call's `deadlineAt` is the timeout's limit; the timeout's own timer fires
 * first at that instant, so the caller sees `timeout` and its abort takes the call out of the queue.
 *
 * `bulkhead_full` carries no `retryAfterMs`: when a slot frees depends on calls in flight, and any number
 * would be a guess.
 *
 * @throws BreakwaterError `bulkhead_full` (503, `details.reason` `full` or `queue_timeout`) when every slot and
 *   queue place is taken or the queue wait timed out; `deadline_exceeded` when the deadline passed while
 *   queued; the signal's reason (or `canceled`) when the caller aborted while queued.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class BulkheadPolicy implements Policy, Observable<BulkheadState> {
  readonly name: string;
  readonly maxConcurrent: number;
  readonly maxQueue: number;
  readonly queueTimeoutMs: number | undefined;
  private readonly clock: Clock;
  private inUse = 0;
  private queued = 0;
  private head: Waiter | undefined;
  private tail: Waiter | undefined;
  private readonly rejections = new EventSource<BulkheadRejectedEvent>();
  private readonly enqueues = new EventSource<BulkheadQueuedEvent>();
  private readonly dequeues = new EventSource<BulkheadDequeuedEvent>();
  /** Subscribe to rejections (`full`, `queue_timeout`, `deadline_exceeded`). */
  readonly onRejected = this.rejections.on;
  /** Subscribe to calls entering the queue. */
  readonly onQueued = this.enqueues.on;
  /** Subscribe to queued calls leaving the queue with a slot or by abort. */
  readonly onDequeued = this.dequeues.on;

  // Bound once so the uncontended path allocates no closure per call.
  private readonly releaseOnValue = <T>(value: T): T => {
    this.release();
    return value;
  };
  private readonly releaseOnError = (error: unknown): never => {
    this.release();
    throw error;
  };

  constructor(options: BulkheadOptions) {
    const p = parseOptions(options);
    this.maxConcurrent = p.maxConcurrent;
    this.maxQueue = p.maxQueue;
    this.queueTimeoutMs = p.queueTimeoutMs;
    this.name = p.name;
    this.clock = p.clock;
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    if (this.inUse < this.maxConcurrent) {
      this.inUse++;
      return this.start(ctx, next, index);
    }
    return this.enqueue(ctx, next, index);
  }

  state(): BulkheadState {
    return {
      name: this.name,
      inUse: this.inUse,
      queued: this.queued,
      maxConcurrent: this.maxConcurrent,
      maxQueue: this.maxQueue,
    };
  }

  /** Runs the inner call in a slot already counted in `inUse`; the slot is released when it settles. */
  private start<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    return next.invoke(ctx, index).then(this.releaseOnValue, this.releaseOnError);
  }

  /** Frees a slot, or hands it straight to the oldest waiter (so `inUse` stays the same). */
  private release(): void {
    const waiter = this.head;
    if (waiter === undefined) {
      this.inUse--;
      return;
    }
    this.unlink(waiter);
    waiter.detach(this.clock);
    if (this.dequeues.hasListeners) {
      this.dequeues.emit({ name: this.name, outcome: 'admitted', waitedMs: this.waited(waiter) });
    }
    waiter.resolve(this.start(waiter.ctx, waiter.next, waiter.index));
  }

  private enqueue<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    if (this.queued >= this.maxQueue) return this.reject('full', 0);
    const now = this.clock.now();
    let waitMs = this.queueTimeoutMs ?? Infinity;
    let reason: BulkheadRejectReason = 'queue_timeout';
    if (ctx.deadlineAt !== Infinity) {
      const left = ctx.deadlineAt - now;
      if (left <= 0) return this.reject('deadline_exceeded', 0);
      if (left < waitMs) {
        waitMs = left;
        reason = 'deadline_exceeded';
      }
    }
    // Only a call that has to wait reads the signal (an outer timeout creates its controller lazily).
    const signal = ctx.signal;
    if (signal.aborted) return Promise.reject(abortError(signal, this.name));

    const waiter = new Waiter(this, ctx, next as Next<unknown>, index, now, reason);
    const promise = new Promise<T>((resolve, reject) => {
      waiter.resolve = resolve as (value: unknown) => void;
      waiter.reject = reject;
    });
    if (this.tail === undefined) this.head = waiter;
    else {
      this.tail.after = waiter;
      waiter.before = this.tail;
    }
    this.tail = waiter;
    this.queued++;
    if (signal !== neverAbortedSignal) {
      waiter.signal = signal;
      signal.addEventListener('abort', waiter);
    }
    if (waitMs !== Infinity) waiter.timer = this.clock.setTimeout(() => this.expire(waiter), waitMs);
    if (this.enqueues.hasListeners) this.enqueues.emit({ name: this.name, queued: this.queued });
    return promise;
  }

  /** @internal A queued call's signal aborted: leave the queue now and reject with its reason. */
  abandon(waiter: Waiter): void {
    const signal = waiter.signal!;
    this.unlink(waiter);
    waiter.detach(this.clock);
    if (this.dequeues.hasListeners) {
      this.dequeues.emit({ name: this.name, outcome: 'aborted', waitedMs: this.waited(waiter) });
    }
    waiter.reject(abortError(signal, this.name));
  }

  /** A queued call's timer fired: `queue_timeout` or `deadline_exceeded`. */
  private expire(waiter: Waiter): void {
    if (waiter.timeoutReason === 'deadline_exceeded' && !waiter.yielded) {
      // An enclosing timeout whose limit is this same deadline fires at this same instant; let it answer
      // first with its own error (its abort takes the call out of the queue), whichever timer was set first.
      waiter.yielded = true;
      waiter.timer = this.clock.setTimeout(() => this.expire(waiter), 0);
      return;
    }
    waiter.timer = undefined;
    this.unlink(waiter);
    waiter.detach(this.clock);
    waiter.reject(this.error(waiter.timeoutReason, this.waited(waiter)));
  }

  private reject(reason: BulkheadRejectReason, waitedMs: number): Promise<never> {
    return rejectSoon(this.error(reason, waitedMs));
  }

  private error(reason: BulkheadRejectReason, waitedMs: number): BreakwaterError {
    if (this.rejections.hasListeners) this.rejections.emit({ name: this.name, reason, waitedMs });
    const limits = { max_concurrent: this.maxConcurrent, max_queue: this.maxQueue };
    if (reason === 'deadline_exceeded') {
      return new BreakwaterError('deadline_exceeded', {
        message:
          waitedMs === 0
            ? `${this.name}: every slot is busy and the deadline leaves no time to wait for one.`
            : `${this.name}: the deadline ran out after ${waitedMs} ms waiting for a slot.`,
        source: this.name,
        details: { ...limits, waited_ms: waitedMs },
      });
    }
    const message =
      reason === 'full'
        ? `${this.name}: every slot (${this.maxConcurrent}) is busy and ${
            this.maxQueue === 0 ? 'no call may wait' : `the queue (${this.maxQueue}) is full`
          }.`
        : `${this.name}: no slot (of ${this.maxConcurrent}) freed up within the ${this.queueTimeoutMs} ms queue timeout.`;
    const details =
      reason === 'full'
        ? { ...limits, reason }
        : { ...limits, reason, queue_timeout_ms: this.queueTimeoutMs, waited_ms: waitedMs };
    return BreakwaterError.withoutStack('bulkhead_full', { message, source: this.name, details });
  }

  private unlink(waiter: Waiter): void {
    const { before, after } = waiter;
    if (before === undefined) this.head = after;
    else before.after = after;
    if (after === undefined) this.tail = before;
    else after.before = before;
    waiter.before = undefined;
    waiter.after = undefined;
    this.queued--;
  }

  private waited(waiter: Waiter): number {
    return this.clock.now() - waiter.enqueuedAt;
  }
}

/**
 * A queued call: a node of the bulkhead's doubly linked FIFO (O(1) removal from anywhere on abort or
 * timeout), and the abort listener itself (`handleEvent`), so waiting costs no extra closure.
 */
class Waiter {
  before: Waiter | undefined;
  after: Waiter | undefined;
  signal: AbortSignal | undefined;
  timer: TimerHandle | undefined;
  /** The deadline timer has fired once and yielded to other timers due at the same instant. */
  yielded = false;
  resolve!: (value: unknown) => void;
  reject!: (error: unknown) => void;

  constructor(
    private readonly bulkhead: BulkheadPolicy,
    readonly ctx: PolicyContext,
    readonly next: Next<unknown>,
    readonly index: number,
    readonly enqueuedAt: number,
    readonly timeoutReason: BulkheadRejectReason,
  ) {}

  handleEvent(): void {
    this.bulkhead.abandon(this);
  }

  /** Removes the timer and the abort listener. */
  detach(clock: Clock): void {
    if (this.timer !== undefined) clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.signal?.removeEventListener('abort', this);
  }
}

function abortError(signal: AbortSignal, source: string): unknown {
  return signal.reason ?? new BreakwaterError('canceled', { source });
}

/** Shorthand for `new BulkheadPolicy(options)`; a number means `{ maxConcurrent }`. */
export function bulkhead(options: BulkheadOptions | number): BulkheadPolicy {
  return new BulkheadPolicy(typeof options === 'number' ? { maxConcurrent: options } : options);
}
