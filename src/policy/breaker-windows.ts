/**
 * Window strategies for the circuit breaker (docs/policies.md#windows): the object that decides,
 * from the calls it has seen while the breaker is closed, when the breaker should open. A strategy is a
 * swappable object with a tiny interface ({@link BreakerWindow}), in the cockatiel style, not a set of flags.
 *
 * - {@link ConsecutiveWindow}: opens after N failures in a row.
 * - {@link CountWindow}: failure rate and/or slow-call rate over the last N calls.
 * - {@link TimeWindow}: failure rate and/or slow-call rate over the last N ms, in fixed buckets.
 *
 * Every strategy keeps fixed-size counters (typed-array ring buffers): recording a call allocates nothing.
 * One window instance belongs to one breaker; do not share it.
 */
import { defineOptions, o, type Report } from '../core/index.js';

/** What a window currently judges on, as plain JSON. */
export interface WindowStats {
  /** Calls counted (successes and failures; ignored errors are never recorded). */
  readonly calls: number;
  /** Of those, failures. */
  readonly failures: number;
  /** Of those, slow calls (duration >= `slowCallDurationMs`; 0 when slow-call detection is off). */
  readonly slow: number;
}

/**
 * A breaker's window strategy. The breaker calls `recordSuccess`/`recordFailure` for every counted call that
 * completes while it is closed, then `shouldOpen`; it calls `reset` whenever it closes.
 *
 * `durationMs` is the call's duration, measured with the breaker's clock only when `slowCallDurationMs` is
 * set (otherwise 0). `nowMs` is the clock's time when `readsTime` is true or durations are measured
 * (otherwise 0, and the clock is not read). Both keep the closed-state success path free of clock reads
 * unless the strategy needs them.
 */
export interface BreakerWindow {
  recordSuccess(durationMs: number, nowMs: number): void;
  recordFailure(durationMs: number, nowMs: number): void;
  /** True when the breaker should open now. */
  shouldOpen(nowMs: number): boolean;
  /** Forgets every recorded call. */
  reset(): void;
  /** True when the window needs `nowMs` (time-based windows). */
  readonly readsTime?: boolean;
  /**
   * When set (ms), the breaker measures each call and passes its duration; a half-open trial this slow
   * counts as a failed trial.
   */
  readonly slowCallDurationMs?: number | undefined;
  /**
   * Why the last `shouldOpen` returned true (`consecutive_failures`, `failure_rate`, `slow_call_rate`);
   * used as the `reason` of the breaker's closed → open transition. Default `threshold`.
   */
  readonly openReason?: string;
  /** The counts the window currently judges on (for `state()`), as of `nowMs`. */
  stats?(nowMs: number): WindowStats;
}

/** Defaults of the window strategies. */
export const WINDOW_DEFAULTS = {
  /** {@link ConsecutiveWindow} threshold (failures in a row). */
  consecutiveFailures: 5,
  /** Fraction of failures (0–1] at or above which a rate window opens. */
  failureRateThreshold: 0.5,
  /** Fraction of slow calls (0–1] at or above which a rate window opens (only with `slowCallDurationMs`). */
  slowCallRateThreshold: 1,
  /** Calls a rate window needs before it judges rates (a {@link CountWindow} caps it at its `size`). */
  minimumCalls: 10,
  /** Bucket length of a {@link TimeWindow}, ms (capped at `windowMs`). */
  bucketMs: 1000,
} as const;

/**
 * Opens after `threshold` failures in a row; any counted success resets the run.
 * `new ConsecutiveWindow(5)` or `new ConsecutiveWindow({ threshold: 5 })`; default threshold 5.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction when `threshold` is not an
 *   integer >= 1.
 */
export class ConsecutiveWindow implements BreakerWindow {
  readonly threshold: number;
  readonly openReason = 'consecutive_failures';
  private failures = 0;

  constructor(options: number | { threshold?: number } = {}) {
    ({ threshold: this.threshold } = parseConsecutive(
      typeof options === 'number' ? { threshold: options } : options,
    ));
  }

  recordSuccess(): void {
    this.failures = 0;
  }

  recordFailure(): void {
    this.failures++;
  }

  shouldOpen(): boolean {
    return this.failures >= this.threshold;
  }

  reset(): void {
    this.failures = 0;
  }

  /** The current run of failures (`calls` and `failures` are both its length). */
  stats(): WindowStats {
    return { calls: this.failures, failures: this.failures, slow: 0 };
  }
}

/** Thresholds shared by {@link CountWindow} and {@link TimeWindow}. */
export interface RateWindowOptions {
  /**
   * Opens when `failures / calls >= failureRateThreshold`, a fraction in (0, 1]; default 0.5. `false`
   * judges the slow-call rate only (then `slowCallDurationMs` is required).
   */
  failureRateThreshold?: number | false;
  /** A call lasting at least this many ms is slow (> 0). Unset: no slow-call detection, no clock reads. */
  slowCallDurationMs?: number;
  /** Opens when `slow / calls >= slowCallRateThreshold`, a fraction in (0, 1]; default 1. */
  slowCallRateThreshold?: number;
  /** Rates are judged only once the window holds this many calls (integer >= 1); default 10. */
  minimumCalls?: number;
}

/** Validated thresholds; `Infinity` disables a rate. */
interface Thresholds {
  failureRate: number;
  slowRate: number;
  slowMs: number | undefined;
  minimumCalls: number;
}

const parseConsecutive = defineOptions<{ threshold?: number }>()('ConsecutiveWindow', {
  threshold: o.number().int().min(1).default(WINDOW_DEFAULTS.consecutiveFailures),
});

/** The schema of {@link RateWindowOptions}, shared by the count and time windows. */
const rateShape = {
  failureRateThreshold: o
    .custom<number | false>(
      (v) => v === false || (typeof v === 'number' && v > 0 && v <= 1),
      'a fraction in (0, 1] or false',
    )
    .default(WINDOW_DEFAULTS.failureRateThreshold),
  slowCallDurationMs: o.number().positive().optional(),
  slowCallRateThreshold: o.fraction().optional(),
  minimumCalls: o.number().int().min(1).optional(),
};

/** Judging the slow-call rate alone, or with its own threshold, needs slow calls to be measured. */
function checkRates(
  p: { failureRateThreshold: number | false; slowCallDurationMs?: number; slowCallRateThreshold?: number },
  report: Report,
): void {
  if (
    p.slowCallDurationMs === undefined &&
    (p.failureRateThreshold === false || p.slowCallRateThreshold !== undefined)
  ) {
    report(
      'slowCallDurationMs',
      'set with failureRateThreshold false or a slowCallRateThreshold',
      p.slowCallDurationMs,
    );
  }
}

const parseCount = defineOptions<RateWindowOptions & { size: number }>()(
  'CountWindow',
  { size: o.number().int().min(1), ...rateShape },
  (p, report) => {
    checkRates(p, report);
    const { size, minimumCalls } = p;
    if (minimumCalls !== undefined && Number.isInteger(size) && size >= 1 && minimumCalls > size)
      report('minimumCalls', `an integer in [1, ${size}]`, minimumCalls);
  },
);

/** `bucketMs` as given, else `min(1 s, windowMs)`. */
const bucketOf = (windowMs: number, bucketMs: number | undefined): number =>
  bucketMs ?? Math.min(WINDOW_DEFAULTS.bucketMs, windowMs);

const parseTime = defineOptions<RateWindowOptions & { windowMs: number; bucketMs?: number }>()(
  'TimeWindow',
  { windowMs: o.number().int().min(1), bucketMs: o.number().int().gt(0).optional(), ...rateShape },
  (p, report) => {
    checkRates(p, report);
    const { windowMs } = p;
    const bucketMs = bucketOf(windowMs, p.bucketMs);
    if (Number.isInteger(windowMs) && windowMs >= 1 && windowMs % bucketMs !== 0)
      report('bucketMs', `an integer > 0 that divides windowMs (${windowMs})`, bucketMs);
  },
);

/** Thresholds of valid (parsed) options; `maxMinimum` caps the default `minimumCalls`. */
function thresholds(
  p: {
    failureRateThreshold: number | false;
    slowCallDurationMs?: number;
    slowCallRateThreshold?: number;
    minimumCalls?: number;
  },
  maxMinimum: number,
): Thresholds {
  const slowMs = p.slowCallDurationMs;
  return {
    failureRate: p.failureRateThreshold === false ? Infinity : p.failureRateThreshold,
    slowRate:
      slowMs === undefined ? Infinity : (p.slowCallRateThreshold ?? WINDOW_DEFAULTS.slowCallRateThreshold),
    slowMs,
    minimumCalls: p.minimumCalls ?? Math.min(WINDOW_DEFAULTS.minimumCalls, maxMinimum),
  };
}

/**
 * The rate judgement shared by the count and time windows. Rates are compared as `count / calls >= t`
 * (not `count >= t * calls`) so that, e.g., 3 of 10 meets a 0.3 threshold despite binary rounding.
 */
function judge(t: Thresholds, calls: number, failures: number, slow: number): string | undefined {
  if (calls < t.minimumCalls || calls === 0) return undefined;
  if (failures / calls >= t.failureRate) return 'failure_rate';
  if (slow / calls >= t.slowRate) return 'slow_call_rate';
  return undefined;
}

const FAILURE = 1;
const SLOW = 2;

/**
 * Failure rate and/or slow-call rate over the last `size` calls (a ring buffer of one byte per call).
 * Opens when at least `minimumCalls` calls are held (default `min(10, size)`) and either rate reaches its
 * threshold; see {@link RateWindowOptions}.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option;
 *   `minimumCalls` must be at most `size`.
 */
export class CountWindow implements BreakerWindow {
  readonly size: number;
  readonly slowCallDurationMs: number | undefined;
  private readonly t: Thresholds;
  private readonly ring: Uint8Array;
  private head = 0;
  private calls = 0;
  private failures = 0;
  private slow = 0;
  private reason = 'failure_rate';

  constructor(options: RateWindowOptions & { size: number }) {
    const p = parseCount(options);
    const size = p.size;
    this.size = size;
    this.t = thresholds(p, size);
    this.slowCallDurationMs = this.t.slowMs;
    this.ring = new Uint8Array(size);
  }

  get openReason(): string {
    return this.reason;
  }

  recordSuccess(durationMs: number): void {
    this.push(this.t.slowMs !== undefined && durationMs >= this.t.slowMs ? SLOW : 0);
  }

  recordFailure(durationMs: number): void {
    this.push(this.t.slowMs !== undefined && durationMs >= this.t.slowMs ? FAILURE | SLOW : FAILURE);
  }

  shouldOpen(): boolean {
    const reason = judge(this.t, this.calls, this.failures, this.slow);
    if (reason === undefined) return false;
    this.reason = reason;
    return true;
  }

  reset(): void {
    this.ring.fill(0);
    this.head = 0;
    this.calls = 0;
    this.failures = 0;
    this.slow = 0;
  }

  stats(): WindowStats {
    return { calls: this.calls, failures: this.failures, slow: this.slow };
  }

  private push(flags: number): void {
    const head = this.head;
    if (this.calls === this.size) {
      const old = this.ring[head]!;
      this.failures -= old & FAILURE;
      this.slow -= old >> 1;
    } else this.calls++;
    this.ring[head] = flags;
    this.failures += flags & FAILURE;
    this.slow += flags >> 1;
    this.head = head + 1 === this.size ? 0 : head + 1;
  }
}

/**
 * Failure rate and/or slow-call rate over the last `windowMs` ms, counted in `windowMs / bucketMs` buckets
 * aligned to multiples of `bucketMs` on the clock (default 1 s buckets). A call counts in the bucket of the
 * time it completed and leaves the window at `bucketStart + windowMs`: a failure at 12:00:00.300 with a 10 s
 * window of 1 s buckets is counted until 12:00:09.999 and gone at 12:00:10.000. The window therefore spans
 * between `windowMs − bucketMs` and `windowMs` of history. Opens when it holds at least `minimumCalls` calls
 * (default 10) and either rate reaches its threshold; see {@link RateWindowOptions}.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option;
 *   `windowMs` must be a multiple of `bucketMs`.
 */
export class TimeWindow implements BreakerWindow {
  readonly windowMs: number;
  readonly bucketMs: number;
  readonly readsTime = true;
  readonly slowCallDurationMs: number | undefined;
  private readonly t: Thresholds;
  private readonly buckets: number;
  private readonly callCounts: Uint32Array;
  private readonly failureCounts: Uint32Array;
  private readonly slowCounts: Uint32Array;
  /** Index (`floor(now / bucketMs)`) of the newest bucket; -Infinity when empty. */
  private epoch = -Infinity;
  private calls = 0;
  private failures = 0;
  private slow = 0;
  private reason = 'failure_rate';

  constructor(options: RateWindowOptions & { windowMs: number; bucketMs?: number }) {
    const p = parseTime(options);
    const windowMs = p.windowMs;
    const bucketMs = bucketOf(windowMs, p.bucketMs);
    this.windowMs = windowMs;
    this.bucketMs = bucketMs;
    this.buckets = windowMs / bucketMs;
    this.t = thresholds(p, Infinity);
    this.slowCallDurationMs = this.t.slowMs;
    this.callCounts = new Uint32Array(this.buckets);
    this.failureCounts = new Uint32Array(this.buckets);
    this.slowCounts = new Uint32Array(this.buckets);
  }

  get openReason(): string {
    return this.reason;
  }

  recordSuccess(durationMs: number, nowMs: number): void {
    this.push(false, this.t.slowMs !== undefined && durationMs >= this.t.slowMs, nowMs);
  }

  recordFailure(durationMs: number, nowMs: number): void {
    this.push(true, this.t.slowMs !== undefined && durationMs >= this.t.slowMs, nowMs);
  }

  shouldOpen(nowMs: number): boolean {
    this.advance(nowMs);
    const reason = judge(this.t, this.calls, this.failures, this.slow);
    if (reason === undefined) return false;
    this.reason = reason;
    return true;
  }

  reset(): void {
    this.callCounts.fill(0);
    this.failureCounts.fill(0);
    this.slowCounts.fill(0);
    this.epoch = -Infinity;
    this.calls = 0;
    this.failures = 0;
    this.slow = 0;
  }

  stats(nowMs: number): WindowStats {
    this.advance(nowMs);
    return { calls: this.calls, failures: this.failures, slow: this.slow };
  }

  private push(failed: boolean, slow: boolean, nowMs: number): void {
    this.advance(nowMs);
    // A clock that stepped back records into the newest bucket instead of resurrecting an expired one.
    const i = this.epoch % this.buckets;
    this.callCounts[i]!++;
    this.calls++;
    if (failed) {
      this.failureCounts[i]!++;
      this.failures++;
    }
    if (slow) {
      this.slowCounts[i]!++;
      this.slow++;
    }
  }

  /** Moves the newest bucket to `nowMs`, emptying every bucket that left the window on the way. */
  private advance(nowMs: number): void {
    const epoch = Math.floor(nowMs / this.bucketMs);
    if (epoch <= this.epoch) return;
    if (epoch - this.epoch >= this.buckets) {
      this.reset();
    } else {
      for (let e = this.epoch + 1; e <= epoch; e++) this.clear(e % this.buckets);
    }
    this.epoch = epoch;
  }

  private clear(i: number): void {
    this.calls -= this.callCounts[i]!;
    this.failures -= this.failureCounts[i]!;
    this.slow -= this.slowCounts[i]!;
    this.callCounts[i] = 0;
    this.failureCounts[i] = 0;
    this.slowCounts[i] = 0;
  }
}
