/**
 * Backoffs for {@link RetryPolicy} (and anything else that waits between tries), cockatiel style: a backoff is
 * a swappable object that answers one question, "how long before the next try?". Backoffs are stateless and
 * can be shared by any number of concurrent executions: the per-execution state is the two numbers passed to
 * {@link Backoff.next} (which retry this is, and the previous delay), kept by the caller.
 */
import { defineOptions, o } from '../core/index.js';

/** A source of uniform random numbers in `[0, 1)`, like `Math.random`; inject a fixed one in tests. */
export type RandomSource = () => number;

/** "Give me the next delay": a stateless delay schedule. */
export interface Backoff {
  /**
   * The delay in ms (>= 0) before retry number `retry`.
   * @param retry 1 before the first retry (after the first call failed), 2 before the second, …
   * @param previousMs the delay actually waited before the previous retry of this execution, 0 before the
   *   first retry (decorrelated jitter grows from it; the other schedules ignore it).
   */
  next(retry: number, previousMs: number): number;
}

/** How an exponential delay is randomised (AWS Architecture Blog, "Exponential Backoff And Jitter"). */
export type Jitter = 'none' | 'full' | 'equal';

/** Defaults of every backoff's options, in ms. */
export const BACKOFF_DEFAULTS = {
  linear: { baseMs: 100, maxMs: 30_000 },
  exponential: { baseMs: 200, factor: 2, maxMs: 30_000, jitter: 'full' },
  decorrelated: { baseMs: 200, maxMs: 30_000 },
} as const;

const JITTERS: readonly Jitter[] = ['none', 'full', 'equal'];

const ms = o.number().nonnegative();

const parseLinear = defineOptions<LinearBackoffOptions>()('LinearBackoff', {
  baseMs: ms.default(BACKOFF_DEFAULTS.linear.baseMs),
  stepMs: ms.optional(),
  maxMs: ms.default(BACKOFF_DEFAULTS.linear.maxMs),
});

const parseExponential = defineOptions<ExponentialBackoffOptions>()('ExponentialBackoff', {
  baseMs: o.number().positive().default(BACKOFF_DEFAULTS.exponential.baseMs),
  factor: o.number().min(1).default(BACKOFF_DEFAULTS.exponential.factor),
  maxMs: ms.default(BACKOFF_DEFAULTS.exponential.maxMs),
  jitter: o.enum(JITTERS).default(BACKOFF_DEFAULTS.exponential.jitter),
  random: o.fn<RandomSource>().optional(),
});

const parseDecorrelated = defineOptions<DecorrelatedJitterBackoffOptions>()('DecorrelatedJitterBackoff', {
  baseMs: o.number().positive().default(BACKOFF_DEFAULTS.decorrelated.baseMs),
  maxMs: ms.default(BACKOFF_DEFAULTS.decorrelated.maxMs),
  random: o.fn<RandomSource>().optional(),
});

const parseConstant = defineOptions<{ delayMs: number }>()('ConstantBackoff', {
  delayMs: o.number().nonnegative(),
});

/** Waits the same `delayMs` before every retry. */
export class ConstantBackoff implements Backoff {
  readonly delayMs: number;

  /** @throws OptionsError (`RangeError`, `invalid_options`) if `delayMs` is not a finite number >= 0. */
  constructor(delayMs: number) {
    ({ delayMs: this.delayMs } = parseConstant({ delayMs }));
  }

  next(_retry: number, _previousMs: number): number {
    return this.delayMs;
  }
}

/** Options of {@link LinearBackoff}. */
export interface LinearBackoffOptions {
  /** Delay before the first retry in ms (default 100). */
  baseMs?: number;
  /** Added for every further retry, in ms (default `baseMs`, so delays are base, 2·base, 3·base, …). */
  stepMs?: number;
  /** Upper bound of any delay in ms (default 30 000). */
  maxMs?: number;
}

/** `min(maxMs, baseMs + stepMs · (retry − 1))`. */
export class LinearBackoff implements Backoff {
  readonly baseMs: number;
  readonly stepMs: number;
  readonly maxMs: number;

  /** @throws RangeError for a negative or non-finite option (names the option). */
  constructor(options: LinearBackoffOptions = {}) {
    const p = parseLinear(options);
    this.baseMs = p.baseMs;
    this.stepMs = p.stepMs ?? p.baseMs;
    this.maxMs = p.maxMs;
  }

  next(retry: number, _previousMs: number): number {
    return Math.min(this.maxMs, this.baseMs + this.stepMs * (retry - 1));
  }
}

/** Options of {@link ExponentialBackoff}. */
export interface ExponentialBackoffOptions {
  /** Delay before the first retry, before jitter, in ms (> 0, default 200). */
  baseMs?: number;
  /** Growth per retry (>= 1, default 2). */
  factor?: number;
  /** Upper bound of the un-jittered delay in ms (default 30 000). */
  maxMs?: number;
  /**
   * Default `full`: `random(0, d)`, which spreads a crowd of retrying clients best (AWS blog). `equal`:
   * `d/2 + random(0, d/2)`, which never retries at once. `none`: exactly `d`.
   */
  jitter?: Jitter;
  /** A function returning uniform numbers in `[0, 1)` (default `Math.random`). */
  random?: RandomSource;
}

/**
 * `d = min(maxMs, baseMs · factor^(retry − 1))`, then jittered, rounded to whole ms. With the defaults the
 * un-jittered delays are 200, 400, 800, … ms up to 30 s.
 */
export class ExponentialBackoff implements Backoff {
  readonly baseMs: number;
  readonly factor: number;
  readonly maxMs: number;
  readonly jitter: Jitter;
  private readonly random: RandomSource;

  /** @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option. */
  constructor(options: ExponentialBackoffOptions = {}) {
    const p = parseExponential(options);
    this.baseMs = p.baseMs;
    this.factor = p.factor;
    this.maxMs = p.maxMs;
    this.jitter = p.jitter;
    this.random = p.random ?? Math.random;
  }

  next(retry: number, _previousMs: number): number {
    // factor^n overflows to Infinity for large n; min() then caps it (baseMs > 0, so never NaN).
    const d = Math.min(this.maxMs, this.baseMs * Math.pow(this.factor, retry - 1));
    switch (this.jitter) {
      case 'none':
        return Math.round(d);
      case 'full':
        return Math.round(this.random() * d);
      case 'equal':
        return Math.round(d / 2 + (this.random() * d) / 2);
    }
  }
}

/** Options of {@link DecorrelatedJitterBackoff}. */
export interface DecorrelatedJitterBackoffOptions {
  /** Smallest delay and the first retry's lower bound, in ms (> 0, default 200). */
  baseMs?: number;
  /** Upper bound ("cap") of any delay in ms (default 30 000). */
  maxMs?: number;
  /** A function returning uniform numbers in `[0, 1)` (default `Math.random`). */
  random?: RandomSource;
}

/**
 * AWS "decorrelated jitter": `sleep = min(cap, random_between(base, previous · 3))`, with `previous = base`
 * before the first retry; rounded to whole ms. Each delay depends on the one before it, which the caller
 * passes back as `previousMs`, so the object itself holds no state.
 */
export class DecorrelatedJitterBackoff implements Backoff {
  readonly baseMs: number;
  readonly maxMs: number;
  private readonly random: RandomSource;

  /** @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option. */
  constructor(options: DecorrelatedJitterBackoffOptions = {}) {
    const p = parseDecorrelated(options);
    this.baseMs = p.baseMs;
    this.maxMs = p.maxMs;
    this.random = p.random ?? Math.random;
  }

  next(_retry: number, previousMs: number): number {
    const previous = Math.max(this.baseMs, previousMs);
    const upper = previous * 3;
    return Math.round(Math.min(this.maxMs, this.baseMs + this.random() * (upper - this.baseMs)));
  }
}

/** Shorthand for `new ConstantBackoff(delayMs)`. */
export function constantBackoff(delayMs: number): ConstantBackoff {
  return new ConstantBackoff(delayMs);
}

/** Shorthand for `new LinearBackoff(options)`. */
export function linearBackoff(options?: LinearBackoffOptions): LinearBackoff {
  return new LinearBackoff(options);
}

/** Shorthand for `new ExponentialBackoff(options)`. */
export function exponentialBackoff(options?: ExponentialBackoffOptions): ExponentialBackoff {
  return new ExponentialBackoff(options);
}

/** Shorthand for `new DecorrelatedJitterBackoff(options)`. */
export function decorrelatedJitterBackoff(
  options?: DecorrelatedJitterBackoffOptions,
): DecorrelatedJitterBackoff {
  return new DecorrelatedJitterBackoff(options);
}
