import { EventSource, classify, defineOptions, o, type ClassifyOptions, type Clock } from '../core/index.js';
import { executeOne } from './invoke.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/** Computes the stand-in result from the failure; may be async. Its own rejection reaches the caller. */
export type FallbackHandler<R> = (error: unknown, ctx: PolicyContext) => R | PromiseLike<R>;

interface FallbackCommon {
  /**
   * Whether a failure is replaced. Default {@link defaultShouldFallback}, reading the failure with
   * `classifyOptions`: transient failures whose outcome is known; never bugs, permanent answers such as a
   * 404, or writes that may have happened. A custom predicate can build on the default by calling
   * `defaultShouldFallback(error, { method: 'POST' })` itself.
   */
  shouldFallback?: (error: unknown) => boolean;
  /**
   * How the default filter reads failures, as for retry: the request's HTTP `method`, whether it carries an
   * `idempotencyKey`. A connection reset after a POST then has an `unknown` outcome (the write may have
   * happened) and is rethrown, not replaced. Default none: with no method known, such a failure counts as
   * `failed` and is replaced. A custom `shouldFallback` does not see it.
   */
  classifyOptions?: Omit<ClassifyOptions, 'nowMs'>;
  /** Names the dependency in events (a non-empty string, default `fallback`). */
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

/** Defaults of {@link FallbackOptions} (the value or handler has none: it is always yours). */
export const FALLBACK_DEFAULTS = { name: 'fallback' } as const;

/** Checks {@link FallbackOptions} and applies {@link FALLBACK_DEFAULTS}. */
const parseOptions = defineOptions<
  FallbackCommon & { value?: unknown; fallback?: FallbackHandler<unknown> }
>()(
  'fallback',
  {
    value: o.any<unknown>(),
    fallback: o.fn<FallbackHandler<unknown>>().optional(),
    shouldFallback: o.fn<(error: unknown) => boolean>().optional(),
    classifyOptions: o.record<Omit<ClassifyOptions, 'nowMs'>>('an object or left out').optional(),
    name: o.string().min(1).default(FALLBACK_DEFAULTS.name),
    clock: o.clock(),
  },
  (_, report, input) => {
    const hasHandler = input.fallback !== undefined;
    // `{ value: undefined }` is a legitimate stand-in; `{ fallback, value: undefined }` is just a handler.
    const hasValue = 'value' in input && (input.value !== undefined || !hasHandler);
    if (hasValue === hasHandler) {
      report('value and fallback', 'exactly one given', hasValue ? ['value', 'fallback'] : []);
    }
  },
);

/** Emitted when a failure is replaced by the fallback. */
export interface FallbackEvent {
  readonly name: string;
  readonly error: unknown;
}

/**
 * The default failure filter: true when `classify(error, classifyOptions)` is `transient` with a `failed`
 * outcome (timeouts, 408/425/429/5xx-style unavailability, `circuit_open`, `bulkhead_full`, `rate_limited`,
 * `deadline_exceeded`, connection failures). False for `fatal` (TypeError and other bugs must surface), for
 * `permanent` failures (a 404 is a real answer, not an outage), and for an `unknown` outcome (a write that
 * may have happened must not be hidden behind a stand-in value).
 *
 * Call it from your own `shouldFallback` to narrow or widen the default, e.g.
 * `shouldFallback: (e) => isMyCacheMiss(e) || defaultShouldFallback(e, { method: 'POST' })`.
 * @param classifyOptions how to read the failure: the request's `method` and `idempotencyKey` (a connection
 *   reset after a POST is an `unknown` outcome, so false), and `nowMs` for an HTTP-date `Retry-After`
 *   (default `Date.now()`). Default none: the method is not known.
 */
export function defaultShouldFallback(error: unknown, classifyOptions: ClassifyOptions = {}): boolean {
  const c = classify(error, classifyOptions);
  return c.kind === 'transient' && c.outcome === 'failed';
}

/**
 * Replaces a failure with a stand-in result (docs/policies.md#fallback; outermost in the documented order). A
 * failure is replaced when `shouldFallback(error)` says so (by default {@link defaultShouldFallback}, reading
 * the failure with `classifyOptions`) and `ctx.signal` has not aborted (a caller that left gets its abort,
 * not a stand-in); otherwise it is rethrown unchanged.
 *
 * Typing: a policy in a pipeline cannot know the pipeline's result type, so the value (or the handler's
 * result) must be of the type `fn` resolves to; `execute<T>` returns `Promise<T>` on that assumption.
 *
 * @throws the original failure, unchanged, when it is not replaced; whatever the `fallback` handler throws.
 * @throws RangeError at construction unless exactly one of `value` and `fallback` is given (names them), or
 *   for another bad option (names it).
 */
export class FallbackPolicy<R = unknown> implements Policy {
  readonly name: string;
  private readonly handler: FallbackHandler<R> | undefined;
  private readonly value: R | undefined;
  private readonly shouldFallback: ((error: unknown) => boolean) | undefined;
  private readonly classifyOptions: Omit<ClassifyOptions, 'nowMs'> | undefined;
  private readonly clock: Clock;
  private readonly fallbacks = new EventSource<FallbackEvent>();
  /** Subscribe to failures being replaced. */
  readonly onFallback = this.fallbacks.on;

  constructor(options: FallbackOptions<R>) {
    const p = parseOptions(options);
    this.handler = p.fallback as FallbackHandler<R> | undefined;
    this.value = p.value as R | undefined;
    this.shouldFallback = p.shouldFallback;
    this.classifyOptions = p.classifyOptions;
    this.name = p.name;
    this.clock = p.clock;
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
          ? defaultShouldFallback(error, { ...this.classifyOptions, nowMs: this.clock.now() })
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
