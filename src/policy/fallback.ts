import { EventSource, classify, type Clock, systemClock, clockOption } from '../core/index.js';
import { executeOne } from './invoke.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/** Computes the stand-in result from the failure; may be async. Its own rejection reaches the caller. */
export type FallbackHandler<R> = (error: unknown, ctx: PolicyContext) => R | PromiseLike<R>;

interface FallbackCommon {
  /**
   * Whether a failure is replaced (default {@link defaultShouldFallback}: transient failures whose outcome is
   * known, never bugs, permanent answers such as 404, or writes that may have happened).
   */
  shouldFallback?: (error: unknown) => boolean;
  /** Names the dependency in events (default `fallback`). */
  name?: string;
  /** Only used to read HTTP-date `Retry-After` hints while classifying (default the system clock). */
  clock?: Clock;
}

/**
 * Options of {@link FallbackPolicy}: exactly one of `value` (returned as it is) and `fallback` (called with the
 * failure and the context). Validated at construction.
 */
export type FallbackOptions<R> =
  | (FallbackCommon & { value: R; fallback?: never })
  | (FallbackCommon & { fallback: FallbackHandler<R>; value?: never });

/** Emitted when a failure is replaced by the fallback. */
export interface FallbackEvent {
  readonly name: string;
  readonly error: unknown;
}

/**
 * The default failure filter: true when `classify(error)` is `transient` with a `failed` outcome (timeouts,
 * 408/425/429/5xx-style unavailability, `circuit_open`, `bulkhead_full`, `rate_limited`, `deadline_exceeded`,
 * connection failures). False for `fatal` (TypeError and other bugs must surface), for `permanent` failures
 * (a 404 is a real answer, not an outage), and for an `unknown` outcome (a write that may have happened must
 * not be hidden behind a stand-in value).
 */
export function defaultShouldFallback(error: unknown, clock: Clock = systemClock): boolean {
  const c = classify(error, { nowMs: clock.now() });
  return c.kind === 'transient' && c.outcome === 'failed';
}

/**
 * Replaces a failure with a stand-in result (DESIGN: "Policies"; outermost in the documented order). A failure
 * is replaced when `shouldFallback(error)` says so and `ctx.signal` has not aborted (a caller that left gets
 * its abort, not a stand-in); otherwise it is rethrown unchanged.
 *
 * Typing: a policy in a pipeline cannot know the pipeline's result type, so the value (or the handler's
 * result) must be of the type `fn` resolves to; `execute<T>` returns `Promise<T>` on that assumption.
 *
 * @throws the original failure, unchanged, when it is not replaced; whatever the `fallback` handler throws.
 * @throws RangeError at construction unless exactly one of `value` and `fallback` is given (names them).
 */
export class FallbackPolicy<R = unknown> implements Policy {
  readonly name: string;
  private readonly handler: FallbackHandler<R> | undefined;
  private readonly value: R | undefined;
  private readonly shouldFallback: ((error: unknown) => boolean) | undefined;
  private readonly clock: Clock;
  private readonly fallbacks = new EventSource<FallbackEvent>();
  /** Subscribe to failures being replaced. */
  readonly onFallback = this.fallbacks.on;

  constructor(options: FallbackOptions<R>) {
    const hasHandler = options.fallback !== undefined;
    // `{ value: undefined }` is a legitimate stand-in; `{ fallback, value: undefined }` is just a handler.
    const hasValue = 'value' in options && (options.value !== undefined || !hasHandler);
    if (hasValue === hasHandler) {
      throw new RangeError('fallback: give exactly one of value and fallback');
    }
    const handler: unknown = options.fallback;
    if (hasHandler && typeof handler !== 'function') {
      throw new RangeError(`fallback: fallback must be a function, got ${typeof handler}`);
    }
    if (options.shouldFallback !== undefined && typeof options.shouldFallback !== 'function') {
      throw new RangeError(
        `fallback: shouldFallback must be a function, got ${typeof options.shouldFallback}`,
      );
    }
    this.handler = options.fallback;
    this.value = options.value;
    this.shouldFallback = options.shouldFallback;
    this.name = options.name ?? 'fallback';
    this.clock = clockOption('fallback', options.clock);
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  async run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    try {
      return await next.invoke(ctx, index);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      const replace =
        this.shouldFallback === undefined
          ? defaultShouldFallback(error, this.clock)
          : this.shouldFallback(error);
      if (!replace) throw error;
      if (this.fallbacks.hasListeners) this.fallbacks.emit({ name: this.name, error });
      if (this.handler === undefined) return this.value as unknown as T;
      return (await this.handler(error, ctx)) as unknown as T;
    }
  }
}

/** Shorthand for `new FallbackPolicy(options)`. */
export function fallback<R>(options: FallbackOptions<R>): FallbackPolicy<R> {
  return new FallbackPolicy(options);
}
