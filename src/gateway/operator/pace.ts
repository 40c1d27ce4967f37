/**
 * What keeps a storm from flooding the terminal: a {@link Pacer} lets a few lines per key through in each
 * interval and sums up the rest at its end; a {@link TrailingCount} tells "repeatedly" from "once".
 */
import type { Clock, TimerHandle } from '../../core/index.js';

/** Options of a {@link Pacer}. */
export interface PacerOptions {
  clock: Clock;
  /** Lines let through per key in each interval (integer >= 1). */
  burst: number;
  /** The interval, ms; it starts at the first line of a key after the previous one ended. */
  intervalMs: number;
  /**
   * Called at the end of an interval in which lines were held back, with how many: the place for one line
   * saying so (and what the state is now). Without it, held-back lines are only dropped.
   */
  summary?: (key: string, held: number) => void;
}

interface Interval {
  readonly start: number;
  lines: number;
  held: number;
  timer: TimerHandle | undefined;
}

/**
 * At most `burst` lines per key per interval. Memory: one entry per key seen, so keys must come from
 * configuration (a dependency, a job type, a declared source, a rule), never from traffic.
 */
export class Pacer {
  private readonly intervals = new Map<string, Interval>();

  constructor(private readonly options: PacerOptions) {}

  /** True when a line for `key` may be printed now; false counts it as held back. */
  allow(key: string): boolean {
    const { clock, burst, intervalMs, summary } = this.options;
    const now = clock.now();
    let interval = this.intervals.get(key);
    if (interval !== undefined && now >= interval.start + intervalMs) {
      this.end(key, interval);
      interval = undefined;
    }
    if (interval === undefined) {
      interval = { start: now, lines: 0, held: 0, timer: undefined };
      this.intervals.set(key, interval);
    }
    if (interval.lines < burst) {
      interval.lines++;
      return true;
    }
    if (interval.held++ === 0 && summary !== undefined) {
      const ending = interval;
      interval.timer = clock.setTimeout(() => this.end(key, ending), interval.start + intervalMs - now);
    }
    return false;
  }

  /** Clears the timers; held-back lines are not summed up. */
  dispose(): void {
    for (const interval of this.intervals.values()) {
      if (interval.timer !== undefined) this.options.clock.clearTimeout(interval.timer);
    }
    this.intervals.clear();
  }

  private end(key: string, interval: Interval): void {
    if (interval.timer !== undefined) this.options.clock.clearTimeout(interval.timer);
    interval.timer = undefined;
    if (this.intervals.get(key) === interval) this.intervals.delete(key);
    if (interval.held > 0) {
      const held = interval.held;
      interval.held = 0;
      this.options.summary?.(key, held);
    }
  }
}

/**
 * Events in the trailing `windowMs`, counted in buckets of `bucketMs` (so "in the last 60 s" is exact to
 * the second with the defaults). Fixed memory: one counter per bucket.
 */
export class TrailingCount {
  private readonly counts: Int32Array;
  private readonly epochs: Float64Array;

  constructor(
    readonly windowMs = 60_000,
    private readonly bucketMs = 1_000,
  ) {
    const buckets = Math.ceil(windowMs / bucketMs);
    this.counts = new Int32Array(buckets);
    this.epochs = new Float64Array(buckets).fill(-Infinity);
  }

  /** Counts one event at `now` (ms). */
  add(now: number): void {
    const epoch = Math.floor(now / this.bucketMs);
    const i = epoch % this.counts.length;
    if (this.epochs[i] !== epoch) {
      this.epochs[i] = epoch;
      this.counts[i] = 0;
    }
    this.counts[i]!++;
  }

  /** Events in the buckets covering the last `windowMs` up to `now`. */
  count(now: number): number {
    const oldest = Math.floor(now / this.bucketMs) - this.counts.length;
    let sum = 0;
    for (let i = 0; i < this.counts.length; i++) if (this.epochs[i]! > oldest) sum += this.counts[i]!;
    return sum;
  }
}
