import { BreakwaterError, EventSource, type Clock, rejectSoon, defineOptions, o } from '../../core/index.js';
import { executeOne } from '../invoke.js';
import type { Next, Policy, PolicyContext, PolicyFn } from '../types.js';
import {
  rateLimitAlgorithm,
  type RateLimitAlgorithm,
  type RateLimitConfig,
  type RateLimitDecision,
} from './algorithms.js';
import { MemoryRateLimitStore } from './memory-store.js';
import type { RateLimitStore } from './store.js';

/** Options of {@link RateLimitPolicy}; validated at construction. */
export interface RateLimitOptions {
  /** The algorithm and its limits, e.g. `{ type: 'sliding_window', limit: 5, windowMs: 60_000 }` (required). */
  algorithm: RateLimitConfig;
  /**
   * The counter a call through the policy consumes: a fixed string, or a function of the call's context (for
   * example reading a tenant from `AsyncLocalStorage`). Default: `name`. Keys share the store's namespace, so
   * two limiters on one store need distinct keys (prefix them).
   */
  key?: string | ((ctx: PolicyContext) => string);
  /** Cost of one call through the policy (default 1; windows: integer 1..limit; token bucket: > 0, <= capacity). */
  cost?: number;
  /** Where counters live (default: a new {@link MemoryRateLimitStore} of this policy's own). */
  store?: RateLimitStore;
  /** Names the limit in errors and events, and is the default key (non-empty string, default `rate-limit`). */
  name?: string;
  clock?: Clock;
}

/** Defaults of {@link RateLimitOptions} (`store` defaults to a new memory store, `key` to `name`). */
export const RATE_LIMIT_DEFAULTS = { name: 'rate-limit', cost: 1 } as const;

/** Checks {@link RateLimitOptions} but `algorithm` (checked by the algorithm it builds). */
const parseOptions = defineOptions<RateLimitOptions>()('rateLimit', {
  algorithm: o.any<RateLimitConfig>(),
  key: o
    .custom<string | ((ctx: PolicyContext) => string)>(
      (k) => typeof k === 'function' || (typeof k === 'string' && k.length > 0),
      'a non-empty string or a function',
    )
    .optional(),
  cost: o.any<number>().default(RATE_LIMIT_DEFAULTS.cost),
  store: o
    .methods<RateLimitStore>('a RateLimitStore with consume() and reset()', 'consume', 'reset')
    .optional(),
  name: o.string().min(1).default(RATE_LIMIT_DEFAULTS.name),
  clock: o.clock(),
});

/** Emitted for every decision (`onDecision`) and for every denial (`onRejected`). */
export interface RateLimitDecisionEvent {
  readonly name: string;
  readonly key: string;
  readonly cost: number;
  readonly decision: RateLimitDecision;
}

/**
 * Limits the rate of calls (docs/policies.md#rate-limiters) with a fixed window, sliding window or token
 * bucket whose counters live in a {@link RateLimitStore}. A call through the policy consumes `cost` from its
 * key; when denied, `fn` is never called and nothing is counted.
 *
 * Callers that are not a pipeline (the AI gateway, webhook ingress) use {@link RateLimitPolicy.consume} for the
 * decision itself or {@link RateLimitPolicy.acquire} to get the same rejection a call would.
 *
 * Over the memory store (synchronous) a call costs no extra promise hop; over an asynchronous store, one. A
 * failing store (I/O) rejects the call with the store's error: the limit is never silently skipped.
 *
 * @throws BreakwaterError `rate_limited` (429, transient, `retryAfterMs` from the decision, `details`
 *   `{ limit, remaining, reset_ms }` for `x-ratelimit-*` headers) when denied.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class RateLimitPolicy implements Policy {
  readonly name: string;
  readonly algorithm: RateLimitAlgorithm;
  readonly store: RateLimitStore;
  readonly cost: number;
  private readonly key: string | ((ctx: PolicyContext) => string);
  private readonly clock: Clock;
  private readonly decisions = new EventSource<RateLimitDecisionEvent>();
  private readonly rejections = new EventSource<RateLimitDecisionEvent>();
  /** Subscribe to every decision (allowed or not). */
  readonly onDecision = this.decisions.on;
  /** Subscribe to denials. */
  readonly onRejected = this.rejections.on;

  constructor(options: RateLimitOptions) {
    // The algorithm checks its own config (and the cost against it), naming `rateLimit: algorithm.type`
    // or its class; the rest is checked at once.
    this.algorithm = rateLimitAlgorithm(options.algorithm);
    const p = parseOptions(options);
    this.name = p.name;
    this.algorithm.checkCost(p.cost, 'cost');
    this.cost = p.cost;
    this.key = p.key ?? p.name;
    this.store = p.store ?? new MemoryRateLimitStore();
    this.clock = p.clock;
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    let key: string;
    let result: RateLimitDecision | Promise<RateLimitDecision>;
    try {
      key = typeof this.key === 'string' ? this.key : this.key(ctx);
      result = this.store.consume(key, this.algorithm, this.cost, this.clock.now());
    } catch (error) {
      return Promise.reject(error);
    }
    if (isPromiseLike(result)) {
      return Promise.resolve(result).then((decision) => this.admit(decision, key, ctx, next, index));
    }
    return this.admit(result, key, ctx, next, index);
  }

  /**
   * Decides a request of `cost` on `key` now and counts it when allowed; never rejects for a denial (look at
   * `allowed`). For callers outside a pipeline.
   * @throws RangeError (as a rejection) when `cost` is invalid for the algorithm; a store failure as its error.
   */
  consume(key: string, cost: number = this.cost): Promise<RateLimitDecision> {
    try {
      // Checked here too so a bad cost never costs a round trip to a remote store.
      this.algorithm.checkCost(cost);
      const result = this.store.consume(key, this.algorithm, cost, this.clock.now());
      if (isPromiseLike(result)) {
        return Promise.resolve(result).then((decision) => this.observe(decision, key, cost));
      }
      return Promise.resolve(this.observe(result, key, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Like {@link RateLimitPolicy.consume}, but a denial rejects with the same `rate_limited` error a call through
   * the policy gets. Resolves with the (allowed) decision, for `x-ratelimit-*` headers.
   * @throws BreakwaterError `rate_limited` when denied.
   */
  async acquire(key: string, cost: number = this.cost): Promise<RateLimitDecision> {
    const decision = await this.consume(key, cost);
    if (!decision.allowed) throw rateLimitedError(decision, this.name);
    return decision;
  }

  /** Forgets everything counted on `key`. */
  async reset(key: string): Promise<void> {
    await this.store.reset(key);
  }

  private admit<T>(
    decision: RateLimitDecision,
    key: string,
    ctx: PolicyContext,
    next: Next<T>,
    index: number,
  ): Promise<T> {
    this.observe(decision, key, this.cost);
    if (!decision.allowed) return rejectSoon(rateLimitedError(decision, this.name));
    return next.invoke(ctx, index);
  }

  private observe(decision: RateLimitDecision, key: string, cost: number): RateLimitDecision {
    if (this.decisions.hasListeners) this.decisions.emit({ name: this.name, key, cost, decision });
    if (!decision.allowed && this.rejections.hasListeners) {
      this.rejections.emit({ name: this.name, key, cost, decision });
    }
    return decision;
  }
}

/**
 * The `rate_limited` error for a denied decision: HTTP 429, transient, `retryAfterMs` from the decision,
 * `source: name`, and `details` `{ limit, remaining, reset_ms }` (what `x-ratelimit-limit`, `-remaining` and
 * `-reset` are made from). The key is left out on purpose: it may be a user id or an API key.
 */
export function rateLimitedError(decision: RateLimitDecision, name: string): BreakwaterError {
  return BreakwaterError.withoutStack('rate_limited', {
    message: `${name}: rate limit of ${decision.limit} reached; try again in ${decision.retryAfterMs} ms.`,
    source: name,
    retryAfterMs: decision.retryAfterMs,
    details: { limit: decision.limit, remaining: decision.remaining, reset_ms: decision.resetMs },
  });
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T>).then === 'function';
}

/** Shorthand for `new RateLimitPolicy(options)`. */
export function rateLimit(options: RateLimitOptions): RateLimitPolicy {
  return new RateLimitPolicy(options);
}
