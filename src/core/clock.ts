import { invalidOption } from './options.js';
import { neverAbortedSignal } from './signals.js';

/**
 * Time as an injected dependency (docs/architecture.md#time-and-the-clock). Every policy reads a `Clock`;
 * tests pass a {@link FakeClock} and never sleep on real time.
 */

/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/** A source of time and timers. `now()` is milliseconds since the Unix epoch. */
export interface Clock {
  now(): number;
  /**
   * Calls `callback` once after `delayMs` ms (negative or NaN counts as 0; `Infinity` never fires, which
   * matters because {@link Deadline.remaining} is `Infinity` outside a deadline).
   */
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Node's largest timer delay; a longer one (or `Infinity`) would fire after 1 ms with a warning. */
const MAX_TIMER_MS = 2_147_483_647;

/** A delay longer than Node's timers allow, re-armed in steps of at most {@link MAX_TIMER_MS}. */
class LongTimer {
  timer: NodeJS.Timeout | undefined;
}

function normalizeDelay(delayMs: number): number {
  return delayMs > 0 ? delayMs : 0; // also maps NaN to 0
}

/**
 * The process clock: `Date.now()` and Node timers. Timers are not `unref`'d: a pending retry wait or timeout
 * keeps the process alive, as the caller awaiting it expects (every policy clears its timers when done).
 */
export const systemClock: Clock = {
  now: Date.now,
  setTimeout(callback, delayMs) {
    const delay = normalizeDelay(delayMs);
    if (delay <= MAX_TIMER_MS) return setTimeout(callback, delay);
    const long = new LongTimer();
    const due = Date.now() + delay;
    const arm = (): void => {
      const left = due - Date.now();
      long.timer =
        left <= MAX_TIMER_MS ? setTimeout(callback, Math.max(0, left)) : setTimeout(arm, MAX_TIMER_MS);
    };
    arm();
    return long;
  },
  clearTimeout(handle) {
    clearTimeout(handle instanceof LongTimer ? handle.timer : (handle as NodeJS.Timeout));
  },
};

/**
 * Checks a `clock` option: `undefined` means {@link systemClock}; anything else must have `now()`,
 * `setTimeout()` and `clearTimeout()`.
 * @param owner names the policy or component in the error as users call it (`timeout`, `circuitBreaker`).
 * @throws RangeError naming the option when it is not a clock.
 */
export function clockOption(owner: string, clock: Clock | undefined): Clock {
  if (clock === undefined) return systemClock;
  const c = clock as Partial<Clock> | null;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.now !== 'function' ||
    typeof c.setTimeout !== 'function' ||
    typeof c.clearTimeout !== 'function'
  ) {
    throw invalidOption(owner, 'clock', 'a Clock with now(), setTimeout() and clearTimeout()', clock);
  }
  return clock;
}

interface FakeTimer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A deterministic clock for tests. Time moves only when told to; timers due at the same instant fire in the
 * order they were set. Use {@link FakeClock.tickAsync} when the code under test awaits promises between
 * timers: it lets pending microtasks and I/O callbacks settle before and after each timer fires.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: FakeTimer[] = [];

  /** @param startMs initial `now()` in ms since the epoch (default 2026-01-01T00:00:00Z). */
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  /** The fake time in ms since the epoch; it moves only through `tick`, `tickAsync` and `runAllAsync`. */
  now(): number {
    return this.current;
  }

  /** Schedules `callback` at `now() + delayMs` (negative or NaN: now; `Infinity`: never); returns its handle. */
  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const timer: FakeTimer = { id: ++this.seq, at: this.current + normalizeDelay(delayMs), callback };
    // Keep the list sorted by (at, id); insertion is linear but test timer counts are small.
    let i = this.timers.length;
    while (i > 0 && this.timers[i - 1]!.at > timer.at) i--;
    this.timers.splice(i, 0, timer);
    return timer.id;
  }

  /** Cancels a pending timer; an unknown, fired or already cleared handle is ignored. */
  clearTimeout(handle: TimerHandle): void {
    const index = this.timers.findIndex((t) => t.id === handle);
    if (index >= 0) this.timers.splice(index, 1);
  }

  /** Number of timers set and not yet fired or cleared. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers synchronously in order.
   * @throws RangeError if `ms` is negative or NaN (time never moves backwards).
   */
  tick(ms: number): void {
    const target = this.current + checkStep(ms);
    for (let next = this.timers[0]; next !== undefined && next.at <= target; next = this.timers[0]) {
      this.timers.shift();
      this.current = next.at;
      next.callback();
    }
    this.current = target;
  }

  /**
   * Moves time forward by `ms`, letting promises settle before and after every timer that fires.
   * @throws RangeError if `ms` is negative or NaN.
   */
  async tickAsync(ms: number): Promise<void> {
    const target = this.current + checkStep(ms);
    await settle();
    for (let next = this.timers[0]; next !== undefined && next.at <= target; next = this.timers[0]) {
      this.timers.shift();
      // A tick() made while promises settled may have moved time past this timer: never back.
      this.current = Math.max(this.current, next.at);
      next.callback();
      await settle();
    }
    this.current = Math.max(this.current, target);
    await settle();
  }

  /**
   * Fires every pending timer (and those they set), up to `limit` timers, letting promises settle. Timers set
   * with an infinite delay never fire.
   */
  async runAllAsync(limit = 10_000): Promise<void> {
    await settle();
    for (let fired = 0; fired < limit && this.timers.length > 0 && this.timers[0]!.at !== Infinity; fired++) {
      const next = this.timers.shift()!;
      this.current = Math.max(this.current, next.at);
      next.callback();
      await settle();
    }
  }
}

function checkStep(ms: number): number {
  if (!(ms >= 0)) throw new RangeError(`FakeClock: cannot move time by ${ms} ms`);
  return ms;
}

/** Lets every queued microtask (and promise chain built from them) run. */
async function settle(): Promise<void> {
  // A macrotask turn drains the whole microtask queue, including chains several awaits deep.
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Waits `ms` on `clock`. Rejects with the signal's reason if `signal` aborts first; the timer and the abort
 * listener are removed on every path.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  // The shared never-aborting signal can never fire: listening to it would only pile up listeners.
  if (signal === neverAbortedSignal) signal = undefined;
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal!.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
