import {
  BreakwaterError,
  EventSource,
  classify,
  sleep,
  type Classification,
  type ClassifyOptions,
  type Clock,
  defineOptions,
  o,
} from '../core/index.js';
import { exponentialBackoff, type Backoff } from './backoff.js';
import { executeOne } from './invoke.js';
import { NOT_REPEATED_BY_DEFAULT, repeatableByDefault } from './retryable.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/** Options of {@link RetryPolicy}; validated at construction. */
export interface RetryOptions {
  /**
   * Maximum number of calls, the FIRST CALL INCLUDED: 3 means one call and at most two retries. An integer
   * >= 1, or `Infinity` to retry until the deadline or the signal stops it (default 3).
   */
  maxAttempts?: number;
  /** The delay schedule (default `exponentialBackoff()`: 200 ms × 2^n, full jitter, up to 30 s). */
  backoff?: Backoff;
  /**
   * Upper bound of any single wait in ms, retry hints included (default 30 000). A `Retry-After` hint longer
   * than this makes the policy give up at once (`retry_after_too_long`) instead of retrying before the server
   * said it is worth it.
   */
  maxDelayMs?: number;
  /**
   * Ms kept back from the enclosing deadline (default 50): a wait that would end less than this before
   * `ctx.deadlineAt` is not started and the policy gives up (`deadline`), since the next call would have no
   * useful time left.
   */
  deadlineMarginMs?: number;
  /**
   * Decides whether a failure is retried, in place of the default `classify(error).retryable`. It is only
   * asked about `transient` failures (see {@link RetryPolicy}); it can narrow the default, or widen it to a
   * transient failure with an `unknown` outcome when you know the call is safe to repeat.
   * @param attempt the call that failed (1 for the first call).
   */
  shouldRetry?: (error: unknown, attempt: number, classification: Classification) => boolean;
  /** Treats a returned value as a failure to retry when it returns true (e.g. a `Response` with status 503). */
  retryOnResult?: (value: unknown) => boolean;
  /**
   * How failures are read (the request's HTTP `method`, whether it carries an `idempotencyKey`): a
   * non-idempotent write that failed after being sent has an `unknown` outcome and is not retried.
   */
  classifyOptions?: Omit<ClassifyOptions, 'nowMs'>;
  /** Names the dependency in events (a non-empty string, default `retry`). */
  name?: string;
  clock?: Clock;
}

/** Why a retry policy stopped retrying. */
export type GiveUpReason = 'exhausted' | 'not_retryable' | 'deadline' | 'retry_after_too_long' | 'aborted';

/** Emitted before each wait. `attempt` is the call that failed; `nextAttempt` the one that will follow. */
export interface RetryEvent {
  readonly name: string;
  readonly attempt: number;
  readonly nextAttempt: number;
  readonly delayMs: number;
  /** The failure (`undefined` when a result was rejected by `retryOnResult`). */
  readonly error: unknown;
  /** The rejected result, when `retryOnResult` caused the retry. */
  readonly result?: unknown;
}

/** Emitted once when the policy stops with a failure; `attempts` is the number of calls made. */
export interface GiveUpEvent {
  readonly name: string;
  readonly attempts: number;
  readonly reason: GiveUpReason;
  /** What the caller receives (the last failure, or the signal's reason when aborted during a wait). */
  readonly error: unknown;
  /** The last result, when it was rejected by `retryOnResult` (it is returned to the caller as it is). */
  readonly result?: unknown;
}

/** Emitted when a call succeeds; `attempts` is the number of calls made (1 = no retry was needed). */
export interface RetrySuccessEvent {
  readonly name: string;
  readonly attempts: number;
}

/** Defaults of {@link RetryOptions} (the default backoff is `exponentialBackoff()`). */
export const RETRY_DEFAULTS = {
  maxAttempts: 3,
  maxDelayMs: 30_000,
  deadlineMarginMs: 50,
  name: 'retry',
} as const;

/** Checks {@link RetryOptions} and applies {@link RETRY_DEFAULTS}. */
const parseOptions = defineOptions<RetryOptions>()('retry', {
  maxAttempts: o.number().int().min(1).orInfinity().default(RETRY_DEFAULTS.maxAttempts),
  backoff: o.methods<Backoff>('a Backoff with a next(retry, previousMs) method', 'next').optional(),
  maxDelayMs: o.number().nonnegative().default(RETRY_DEFAULTS.maxDelayMs),
  deadlineMarginMs: o.number().nonnegative().default(RETRY_DEFAULTS.deadlineMarginMs),
  shouldRetry: o.fn<NonNullable<RetryOptions['shouldRetry']>>().optional(),
  retryOnResult: o.fn<NonNullable<RetryOptions['retryOnResult']>>().optional(),
  classifyOptions: o.record<Omit<ClassifyOptions, 'nowMs'>>('an object or left out').optional(),
  name: o.string().min(1).default(RETRY_DEFAULTS.name),
  clock: o.clock(),
});

/**
 * Calls again after a transient failure (docs/policies.md#retry).
 *
 * Which failures are retried:
 * - never, whatever the options: failures `classify` calls `permanent` (a 404 or any other non-retryable 4xx,
 *   `canceled`, …) or `fatal` (TypeError and other bugs), our own `rate_limited` / `spend_limited`, and any
 *   failure once `ctx.signal` has aborted;
 * - otherwise when `shouldRetry` says so, by default when `classify(error).retryable` (transient, and not an
 *   unknown outcome of a non-idempotent write): 408, 425, 429, 500, 502, 503, 504, connection failures,
 *   `timeout`, `bulkhead_full`, … but not `circuit_open`: an open breaker has just said the dependency is
 *   down for a while, and the point of it is to answer the caller in milliseconds, not after a wait for the
 *   breaker to half-open (a `shouldRetry` that returns true for it opts in).
 *
 * The wait before retry `n` is `min(maxDelayMs, max(backoff.next(n, previous), hint))`, where `hint` is the
 * failure's retry hint (`Retry-After` in seconds or as an HTTP-date, `retry-after-ms`, or a BreakwaterError's
 * `retryAfterMs`). It gives up at once, without waiting:
 * - `retry_after_too_long` when the hint alone exceeds `maxDelayMs` (retrying earlier than the server asked
 *   would only fail again);
 * - `deadline` when the wait would end within `deadlineMarginMs` of `ctx.deadlineAt`, or the deadline passed.
 * The wait is aborted by `ctx.signal` and then rejects with the signal's reason; its timer and listener are
 * removed on every path.
 *
 * Every call gets `{ signal: ctx.signal, attempt: n, deadlineAt: ctx.deadlineAt }` (the same signal object).
 * When it gives up it rethrows the last failure UNCHANGED (no wrapping), so the caller sees the real cause; a
 * result rejected by `retryOnResult` is returned as it is once retries run out.
 *
 * @throws the last failure, unchanged; the signal's reason when aborted during a wait.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class RetryPolicy implements Policy {
  readonly name: string;
  readonly maxAttempts: number;
  readonly maxDelayMs: number;
  readonly backoff: Backoff;
  private readonly marginMs: number;
  private readonly shouldRetry: RetryOptions['shouldRetry'];
  private readonly retryOnResult: RetryOptions['retryOnResult'];
  private readonly classifyOptions: Omit<ClassifyOptions, 'nowMs'> | undefined;
  private readonly clock: Clock;
  private readonly retries = new EventSource<RetryEvent>();
  private readonly giveUps = new EventSource<GiveUpEvent>();
  private readonly successes = new EventSource<RetrySuccessEvent>();
  /** Subscribe to retries (emitted before each wait). */
  readonly onRetry = this.retries.on;
  /** Subscribe to give-ups (emitted once per failed execution). */
  readonly onGiveUp = this.giveUps.on;
  /** Subscribe to successes. */
  readonly onSuccess = this.successes.on;

  constructor(options: RetryOptions = {}) {
    const p = parseOptions(options);
    this.maxAttempts = p.maxAttempts;
    this.maxDelayMs = p.maxDelayMs;
    this.marginMs = p.deadlineMarginMs;
    this.backoff = p.backoff ?? exponentialBackoff();
    this.shouldRetry = p.shouldRetry;
    this.retryOnResult = p.retryOnResult;
    this.classifyOptions = p.classifyOptions;
    this.name = p.name;
    this.clock = p.clock;
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    // ctx is reused when it already says attempt 1, so the first call allocates no context.
    const attemptCtx: PolicyContext =
      ctx.attempt === 1 ? ctx : { signal: ctx.signal, attempt: 1, deadlineAt: ctx.deadlineAt };
    const first = next.invoke(attemptCtx, index);
    if (this.retryOnResult !== undefined || this.successes.hasListeners) {
      return this.loop(ctx, next, index, first);
    }
    // Hot path: a first call that succeeds costs one `.then` and no async frame. A failure that will not be
    // retried (a 404, an open breaker) is rethrown right here; only a real retry enters the async loop.
    return first.then(undefined, (error: unknown) => {
      const verdict = this.verdict(ctx, error, 1, false, this.clock.now());
      if (typeof verdict === 'string') {
        this.gaveUp(1, verdict, error, false, undefined);
        throw error;
      }
      return this.loop(ctx, next, index, undefined, { error, verdict });
    });
  }

  /**
   * The retry loop. Attempt 1 has already started: `first` is its outcome, or `known` is its failure with
   * the verdict already reached on it (so `shouldRetry` is asked once per failure).
   */
  private async loop<T>(
    ctx: PolicyContext,
    next: Next<T>,
    index: number,
    first: Promise<T> | undefined,
    known?: { error: unknown; verdict: Classification },
  ): Promise<T> {
    let attemptCtx: PolicyContext | undefined;
    let previousMs = 0;
    for (let attempt = 1; ; attempt++) {
      let error: unknown;
      let result: T | undefined;
      let rejected = false;
      let verdict: Classification | undefined;
      if (known !== undefined) {
        ({ error, verdict } = known);
        known = undefined;
      } else {
        try {
          result = await (attemptCtx === undefined ? first! : next.invoke(attemptCtx, index));
          if (this.retryOnResult === undefined || !this.retryOnResult(result)) {
            if (this.successes.hasListeners) this.successes.emit({ name: this.name, attempts: attempt });
            return result;
          }
          rejected = true;
        } catch (caught) {
          error = caught;
        }
      }

      const failure = rejected ? result : error;
      const stop = this.decide(ctx, failure, attempt, rejected, previousMs, verdict);
      if (typeof stop === 'string') {
        this.gaveUp(attempt, stop, error, rejected, result);
        if (rejected) return result as T;
        throw error;
      }
      const delayMs = stop;
      if (this.retries.hasListeners) {
        this.retries.emit(
          rejected
            ? { name: this.name, attempt, nextAttempt: attempt + 1, delayMs, error, result }
            : { name: this.name, attempt, nextAttempt: attempt + 1, delayMs, error },
        );
      }
      if (delayMs > 0) {
        try {
          await sleep(this.clock, delayMs, ctx.signal);
        } catch (reason) {
          this.gaveUp(attempt, 'aborted', reason, false, undefined);
          throw reason;
        }
      } else {
        // No wait, but still a turn of the event loop, so timers (an abort, a deadline) can stop a loop of
        // immediate retries that would otherwise run on microtasks alone.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      previousMs = delayMs;
      attemptCtx = { signal: ctx.signal, attempt: attempt + 1, deadlineAt: ctx.deadlineAt };
    }
  }

  /** The wait before the next call in ms, or why to give up (`known`: the verdict already reached). */
  private decide(
    ctx: PolicyContext,
    failure: unknown,
    attempt: number,
    rejectedResult: boolean,
    previousMs: number,
    known: Classification | undefined,
  ): number | GiveUpReason {
    const now = this.clock.now();
    const c = known ?? this.verdict(ctx, failure, attempt, rejectedResult, now);
    if (typeof c === 'string') return c;

    const hint = c.retryAfterMs;
    if (hint !== undefined && hint > this.maxDelayMs) return 'retry_after_too_long';
    let delay = this.backoff.next(attempt, previousMs);
    // A custom backoff returning NaN or a negative number means "no wait"; Infinity is capped below.
    if (!(delay >= 0)) delay = 0;
    if (hint !== undefined && hint > delay) delay = hint;
    if (delay > this.maxDelayMs) delay = this.maxDelayMs;

    if (ctx.deadlineAt !== Infinity && now + delay >= ctx.deadlineAt - this.marginMs) return 'deadline';
    return delay;
  }

  /** Whether the failure may be retried at all (before any backoff is drawn): its classification, or why not. */
  private verdict(
    ctx: PolicyContext,
    failure: unknown,
    attempt: number,
    rejectedResult: boolean,
    now: number,
  ): Classification | GiveUpReason {
    if (ctx.signal.aborted) return 'aborted';
    if (failure instanceof BreakwaterError && !rejectedResult && this.shouldRetry === undefined) {
      // What classify would conclude, read straight off the error (no classification object allocated).
      if (failure.kind !== 'transient' || NOT_REPEATED_BY_DEFAULT.has(failure.code)) return 'not_retryable';
    }
    const c = classify(failure, { ...this.classifyOptions, nowMs: now });
    if (!rejectedResult) {
      const ownLimit = c.code === 'rate_limited' || c.code === 'spend_limited';
      if (c.kind !== 'transient' || ownLimit) return 'not_retryable';
      const retryable =
        this.shouldRetry === undefined ? repeatableByDefault(c) : this.shouldRetry(failure, attempt, c);
      if (!retryable) return 'not_retryable';
    }
    return attempt >= this.maxAttempts ? 'exhausted' : c;
  }

  private gaveUp(
    attempts: number,
    reason: GiveUpReason,
    error: unknown,
    rejectedResult: boolean,
    result: unknown,
  ): void {
    if (!this.giveUps.hasListeners) return;
    this.giveUps.emit(
      rejectedResult
        ? { name: this.name, attempts, reason, error, result }
        : { name: this.name, attempts, reason, error },
    );
  }
}

/** Shorthand for `new RetryPolicy(options)`; a number means `{ maxAttempts }`. */
export function retry(options: RetryOptions | number = {}): RetryPolicy {
  return new RetryPolicy(typeof options === 'number' ? { maxAttempts: options } : options);
}
