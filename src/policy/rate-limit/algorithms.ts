/**
 * Rate-limit algorithms as pure state machines (docs/policies.md#algorithms). Each one is
 * `step(state | undefined, nowMs, cost) → { state, decision }` over plain JSON-able state, so any store can
 * read the state, step it and write it back atomically (a SQLite or Postgres transaction, a Redis Lua script
 * that mirrors this file). Nothing here reads a clock or keeps anything between calls.
 *
 * Contract shared by every algorithm, which stores rely on:
 * - A denied step returns the input state unchanged (a denied request does not count): a store need not write.
 * - `decision.resetMs` ms after `nowMs`, with no further requests, the state is equivalent to `undefined`, so
 *   a store may drop it then (memory: sweep; SQL: `expires_at`; Redis: `PEXPIRE`).
 * - A state of the wrong shape (another algorithm's, or corrupt) is treated as `undefined`.
 * - Times are ms since the epoch; `retryAfterMs` and `resetMs` are whole ms, rounded up.
 */
import { defineOptions, invalidOption, o, oneOf } from '../../core/index.js';

/** The answer to "may this request go ahead?". */
export interface RateLimitDecision {
  readonly allowed: boolean;
  /** The configured limit (token bucket: its capacity). */
  readonly limit: number;
  /** Requests of cost 1 still allowed right now, after this one if it was allowed (token bucket: whole tokens). */
  readonly remaining: number;
  /** Ms from now until the window or bucket is fully reset (nothing counted, or the bucket full). */
  readonly resetMs: number;
  /** 0 when allowed; otherwise ms from now until this same request (same cost) would be allowed. */
  readonly retryAfterMs: number;
}

/** The result of one {@link RateLimitAlgorithm.step}: the state to store and the decision to return. */
export interface RateLimitStep<S> {
  readonly state: S;
  readonly decision: RateLimitDecision;
}

/** Fixed window: at most `limit` per window of `windowMs`, windows aligned to multiples of `windowMs` since the epoch. */
export interface FixedWindowConfig {
  readonly type: 'fixed_window';
  /** Requests (units of cost) per window; integer >= 1. */
  readonly limit: number;
  /** Window length in ms; integer >= 1. */
  readonly windowMs: number;
}

/** Sliding window (exact log): at most `limit` in any trailing `windowMs`. */
export interface SlidingWindowConfig {
  readonly type: 'sliding_window';
  /** Requests (units of cost) per trailing window; integer >= 1. State holds up to this many timestamps. */
  readonly limit: number;
  /** Window length in ms; integer >= 1. */
  readonly windowMs: number;
}

/** Token bucket: holds up to `capacity` tokens, refilled continuously at `refillTokens` per `refillIntervalMs`. */
export interface TokenBucketConfig {
  readonly type: 'token_bucket';
  /** Most tokens the bucket holds (the burst size), > 0; a new bucket starts full. */
  readonly capacity: number;
  /** Tokens added per `refillIntervalMs`, > 0, fractions allowed (default `capacity`). */
  readonly refillTokens?: number;
  /** The refill interval in ms, > 0. Refill is continuous: half an interval adds half of `refillTokens`. */
  readonly refillIntervalMs: number;
}

/** Plain-data description of an algorithm: what a policy is configured with and what a Redis script reads. */
export type RateLimitConfig = FixedWindowConfig | SlidingWindowConfig | TokenBucketConfig;

/** Fixed-window state: the start of the counted window (ms since the epoch) and the cost counted in it. */
export interface FixedWindowState {
  readonly windowStartMs: number;
  readonly count: number;
}

/** Sliding-window state: one timestamp (ms since the epoch) per counted unit of cost, ascending, at most `limit`. */
export interface SlidingWindowState {
  /** Counted units, oldest first (ms since the epoch); updated in place by `step`. */
  readonly timestamps: number[];
}

/** Token-bucket state: tokens left (fractional) as of `updatedAtMs` (ms since the epoch). */
export interface TokenBucketState {
  readonly tokens: number;
  readonly updatedAtMs: number;
}

/**
 * One algorithm: a `step` over JSON-able state `S`, deterministic in its inputs. `step` may reuse the storage
 * of the `state` it is given for the state it returns (the sliding window's log is updated in place rather
 * than copied per request), so a caller keeps only the returned state: the one given is consumed. A denied
 * step changes nothing that counts (at most it drops entries already out of the window).
 * @throws RangeError from `step` when `cost` is invalid for this algorithm (see {@link RateLimitAlgorithm.checkCost}).
 */
export interface RateLimitAlgorithm<S = unknown> {
  /** The normalized configuration (defaults filled in). */
  readonly config: RateLimitConfig;
  /** The limit every decision reports (token bucket: `capacity`). */
  readonly limit: number;
  /** Decides a request of `cost` at `nowMs` against `state` (`undefined`: nothing counted yet). */
  step(state: S | undefined, nowMs: number, cost: number): RateLimitStep<S>;
  /**
   * Throws a RangeError naming `label` when `cost` can never be valid: windows take an integer from 1 to
   * `limit`, the token bucket a number > 0 and <= `capacity` (a request larger than the limit could never pass).
   */
  checkCost(cost: number, label?: string): void;
}

/**
 * Slack for floating-point noise in token arithmetic (e.g. `0.1 + 0.2`): a bucket within this many tokens of
 * the cost counts as having it, so a retry at exactly `retryAfterMs` is allowed.
 */
const TOKEN_EPSILON = 1e-9;

const ALGORITHM_TYPES: readonly RateLimitConfig['type'][] = [
  'fixed_window',
  'sliding_window',
  'token_bucket',
];

/** A window's shape: both a count and a length are whole numbers >= 1. */
const windowShape = { limit: o.number().int().min(1), windowMs: o.number().int().min(1) };
const parseFixed = defineOptions<Omit<FixedWindowConfig, 'type'>>()('FixedWindow', windowShape);
const parseSliding = defineOptions<Omit<SlidingWindowConfig, 'type'>>()('SlidingWindow', windowShape);
const parseTokenBucket = defineOptions<Omit<TokenBucketConfig, 'type'>>()('TokenBucket', {
  capacity: o.number().positive(),
  refillTokens: o.number().positive().optional(),
  refillIntervalMs: o.number().positive(),
});

/**
 * Fixed window. Counts cost per window `[k·windowMs, (k+1)·windowMs)`; the count starts over at each boundary.
 *
 * The burst at a boundary is inherent: with 5 per minute, 5 requests in the last second of one window and 5
 * more in the first second of the next all pass, so up to `2 · limit` can pass within a few ms. Use
 * {@link SlidingWindow} when any trailing window must hold at most `limit`. In exchange, state is two numbers.
 *
 * A denied request gets `retryAfterMs` = `resetMs` = ms to the next window boundary.
 */
export class FixedWindow implements RateLimitAlgorithm<FixedWindowState> {
  readonly config: FixedWindowConfig;
  readonly limit: number;
  readonly windowMs: number;

  /** @throws OptionsError (`RangeError`, `invalid_options`) naming `limit` and/or `windowMs` when invalid. */
  constructor(config: Omit<FixedWindowConfig, 'type'>) {
    ({ limit: this.limit, windowMs: this.windowMs } = parseFixed(config));
    this.config = { type: 'fixed_window', limit: this.limit, windowMs: this.windowMs };
  }

  checkCost(cost: number, label = 'cost'): void {
    checkIntegerCost('FixedWindow', cost, this.limit, label);
  }

  step(state: FixedWindowState | undefined, nowMs: number, cost: number): RateLimitStep<FixedWindowState> {
    this.checkCost(cost);
    const { limit, windowMs } = this;
    let windowStartMs = nowMs - mod(nowMs, windowMs);
    let count = 0;
    // `>=`: if another instance's clock ran ahead and opened a later window, keep counting in it.
    if (isFixedWindowState(state) && state.windowStartMs >= windowStartMs) {
      windowStartMs = state.windowStartMs;
      count = state.count;
    }
    const resetMs = windowStartMs + windowMs - nowMs;
    if (count + cost <= limit) {
      const next: FixedWindowState = { windowStartMs, count: count + cost };
      return {
        state: next,
        decision: { allowed: true, limit, remaining: limit - next.count, resetMs, retryAfterMs: 0 },
      };
    }
    return {
      state: state ?? { windowStartMs, count },
      decision: { allowed: false, limit, remaining: limit - count, resetMs, retryAfterMs: resetMs },
    };
  }
}

/**
 * Sliding window, exact (a sliding log). A request at time `t` counts in the windows `(now − windowMs, now]`
 * with `t` inside; a request is allowed when the cost counted in the trailing window plus its own cost is at
 * most `limit`. So no interval of `windowMs` ever holds more than `limit`, with no boundary burst.
 *
 * State is one timestamp per counted unit, so it is bounded at `limit` entries per key. The log is updated in
 * place: in memory a request costs the entries that left the window plus its own, not a copy of the log; a
 * store that keeps state as JSON (a database counter) still reads and writes the whole log per request, so
 * there, for limits above a few thousand, prefer {@link TokenBucket}. A denied request gets `retryAfterMs` = ms until
 * enough of the oldest counted requests leave the window (for cost 1: the oldest one), exactly.
 */
export class SlidingWindow implements RateLimitAlgorithm<SlidingWindowState> {
  readonly config: SlidingWindowConfig;
  readonly limit: number;
  readonly windowMs: number;

  /** @throws OptionsError (`RangeError`, `invalid_options`) naming `limit` and/or `windowMs` when invalid. */
  constructor(config: Omit<SlidingWindowConfig, 'type'>) {
    ({ limit: this.limit, windowMs: this.windowMs } = parseSliding(config));
    this.config = { type: 'sliding_window', limit: this.limit, windowMs: this.windowMs };
  }

  checkCost(cost: number, label = 'cost'): void {
    checkIntegerCost('SlidingWindow', cost, this.limit, label);
  }

  step(
    state: SlidingWindowState | undefined,
    nowMs: number,
    cost: number,
  ): RateLimitStep<SlidingWindowState> {
    this.checkCost(cost);
    const { limit, windowMs } = this;
    const valid = isSlidingWindowState(state);
    const log = valid ? state.timestamps : [];
    const next = valid ? state : { timestamps: log };
    const cutoff = nowMs - windowMs;
    let expired = 0;
    while (expired < log.length && log[expired]! <= cutoff) expired++;
    // A log longer than `limit` (the limit was lowered) counts only its newest `limit` entries.
    const first = log.length - expired > limit ? log.length - limit : expired;
    const count = log.length - first;

    // The log is updated in place (see RateLimitAlgorithm.step): a copy per request cost O(limit) time and
    // memory (docs/performance.md#core-policies-and-the-http-edge). Usually one entry leaves
    // per request.
    if (count + cost <= limit) {
      dropOldest(log, first);
      for (let i = 0; i < cost; i++) insertSorted(log, nowMs);
      return {
        state: next,
        decision: {
          allowed: true,
          limit,
          remaining: limit - log.length,
          resetMs: log[log.length - 1]! + windowMs - nowMs,
          retryAfterMs: 0,
        },
      };
    }
    // Enough of the oldest counted units must leave to make room for `cost`; the last of them decides.
    const mustLeave = count + cost - limit;
    const retryAfterMs = log[first + mustLeave - 1]! + windowMs - nowMs;
    const resetMs = log[log.length - 1]! + windowMs - nowMs;
    // Denied: only what is out of the window leaves (entries beyond a lowered limit still count for a
    // higher one set again later).
    dropOldest(log, expired);
    return {
      state: next,
      decision: { allowed: false, limit, remaining: limit - count, resetMs, retryAfterMs },
    };
  }
}

/** Removes the `n` oldest entries of `log`, in place. */
function dropOldest(log: number[], n: number): void {
  if (n === 1) log.shift();
  else if (n > 1) log.splice(0, n);
}

/**
 * Token bucket. Holds up to `capacity` tokens (a new bucket is full); refills continuously at
 * `refillTokens / refillIntervalMs` tokens per ms, with fractional tokens kept exactly as numbers; a request
 * takes `cost` tokens or is denied. Allows bursts up to `capacity`, then a steady `refillTokens` per interval.
 *
 * A denied request gets `retryAfterMs` = ms until the bucket holds `cost` tokens, rounded up to whole ms;
 * `resetMs` = ms until it is full again. `remaining` is the whole tokens left.
 */
export class TokenBucket implements RateLimitAlgorithm<TokenBucketState> {
  readonly config: Required<TokenBucketConfig>;
  readonly limit: number;
  readonly capacity: number;
  readonly refillTokens: number;
  readonly refillIntervalMs: number;

  /**
   * @throws OptionsError (`RangeError`, `invalid_options`) naming each of `capacity`, `refillTokens`,
   *   `refillIntervalMs` that is invalid.
   */
  constructor(config: Omit<TokenBucketConfig, 'type'>) {
    const p = parseTokenBucket(config);
    this.capacity = p.capacity;
    this.refillTokens = p.refillTokens ?? p.capacity;
    this.refillIntervalMs = p.refillIntervalMs;
    this.limit = this.capacity;
    this.config = {
      type: 'token_bucket',
      capacity: this.capacity,
      refillTokens: this.refillTokens,
      refillIntervalMs: this.refillIntervalMs,
    };
  }

  checkCost(cost: number, label = 'cost'): void {
    if (!(cost > 0) || !(cost <= this.capacity)) {
      throw invalidOption('TokenBucket', label, `a number > 0 and <= capacity (${this.capacity})`, cost);
    }
  }

  step(state: TokenBucketState | undefined, nowMs: number, cost: number): RateLimitStep<TokenBucketState> {
    this.checkCost(cost);
    const { capacity } = this;
    let tokens = capacity;
    let updatedAtMs = nowMs;
    if (isTokenBucketState(state)) {
      // Never move backwards: a clock behind the stored one (another instance) refills nothing.
      const elapsed = nowMs - state.updatedAtMs;
      tokens = elapsed > 0 ? Math.min(capacity, state.tokens + this.refilled(elapsed)) : state.tokens;
      updatedAtMs = Math.max(nowMs, state.updatedAtMs);
    }
    // The bucket's time runs from `updatedAtMs`; a caller whose clock is behind it must also wait out the lag,
    // or its retry hint would come too early and a store would expire a live bucket.
    const lagMs = updatedAtMs - nowMs;
    if (tokens + TOKEN_EPSILON >= cost) {
      const left = Math.max(0, tokens - cost);
      return {
        state: { tokens: left, updatedAtMs },
        decision: {
          allowed: true,
          limit: capacity,
          remaining: wholeTokens(left),
          resetMs: lagMs + this.msToRefill(capacity - left),
          retryAfterMs: 0,
        },
      };
    }
    return {
      state: state ?? { tokens, updatedAtMs },
      decision: {
        allowed: false,
        limit: capacity,
        remaining: wholeTokens(tokens),
        resetMs: lagMs + this.msToRefill(capacity - tokens),
        retryAfterMs: Math.max(1, lagMs + this.msToRefill(cost - tokens)),
      },
    };
  }

  /** Tokens added over `elapsedMs`; multiply before dividing so integral rates stay exact. */
  private refilled(elapsedMs: number): number {
    return (elapsedMs * this.refillTokens) / this.refillIntervalMs;
  }

  /** Whole ms until `tokens` more have been added (0 when none are needed). */
  private msToRefill(tokens: number): number {
    if (tokens <= TOKEN_EPSILON) return 0;
    return Math.max(0, Math.ceil((tokens * this.refillIntervalMs) / this.refillTokens - TOKEN_EPSILON));
  }
}

/**
 * Builds the algorithm a config describes.
 * @throws RangeError naming the option when the config is invalid (or `type` is unknown).
 */
export function rateLimitAlgorithm(config: RateLimitConfig): RateLimitAlgorithm {
  oneOf('rateLimit', 'algorithm.type', config?.type, ALGORITHM_TYPES);
  switch (config.type) {
    case 'fixed_window':
      return new FixedWindow(config);
    case 'sliding_window':
      return new SlidingWindow(config);
    case 'token_bucket':
      return new TokenBucket(config);
  }
}

/** Per call (from `step`), so a plain check: the helper is only reached to build the error. */
function checkIntegerCost(owner: string, cost: number, limit: number, label: string): void {
  if (!Number.isInteger(cost) || cost < 1 || cost > limit) {
    throw invalidOption(owner, label, `an integer from 1 to limit (${limit})`, cost);
  }
}

/** Non-negative remainder (also for times before the epoch). */
function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

function wholeTokens(tokens: number): number {
  return Math.floor(tokens + TOKEN_EPSILON);
}

/** Inserts `t` keeping `log` ascending; appends in O(1) when time moves forward, as it almost always does. */
function insertSorted(log: number[], t: number): void {
  let i = log.length;
  while (i > 0 && log[i - 1]! > t) i--;
  if (i === log.length) log.push(t);
  else log.splice(i, 0, t);
}

function isFixedWindowState(state: unknown): state is FixedWindowState {
  return (
    typeof state === 'object' &&
    state !== null &&
    typeof (state as FixedWindowState).windowStartMs === 'number' &&
    typeof (state as FixedWindowState).count === 'number'
  );
}

function isSlidingWindowState(state: unknown): state is SlidingWindowState {
  return (
    typeof state === 'object' && state !== null && Array.isArray((state as SlidingWindowState).timestamps)
  );
}

function isTokenBucketState(state: unknown): state is TokenBucketState {
  return (
    typeof state === 'object' &&
    state !== null &&
    typeof (state as TokenBucketState).tokens === 'number' &&
    typeof (state as TokenBucketState).updatedAtMs === 'number'
  );
}
