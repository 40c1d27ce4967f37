import { AsyncLocalStorage } from 'node:async_hooks';
import { systemClock, type Clock } from './clock.js';
import { BreakwaterError } from './errors.js';

interface DeadlineScope {
  /** Absolute expiry, ms since the epoch on `clock`. */
  readonly at: number;
  readonly clock: Clock;
}

const storage = new AsyncLocalStorage<DeadlineScope>();

/**
 * Deadline propagation (docs/architecture.md#deadlines). A deadline is carried by `AsyncLocalStorage` through
 * every await below {@link Deadline.run}; nested deadlines take the smaller. The deadline does not interrupt
 * work by itself: a policy's `execute` reads {@link Deadline.at} once, when it starts, into `ctx.deadlineAt`,
 * and the policies inside fit their waits to it: timeout and retry to `deadlineAt − now − margin` (default
 * margin 50 ms, kept back so the outer layer can still answer), failing fast with `deadline_exceeded` when no
 * useful time is left; bulkhead queueing and hedging to `deadlineAt` itself. The deadline is absolute on the
 * clock it was made with: give policies the same clock.
 */
export const Deadline = {
  /**
   * Runs `fn` under a deadline `timeoutMs` ms from now, or the enclosing deadline if that is sooner.
   * @throws RangeError if `timeoutMs` is negative or NaN (a programming error).
   */
  run<T>(timeoutMs: number, fn: () => T, clock: Clock = systemClock): T {
    if (!(timeoutMs >= 0)) {
      throw new RangeError(`Deadline.run: timeoutMs must be a number >= 0, got ${timeoutMs}`);
    }
    return Deadline.runAt(clock.now() + timeoutMs, fn, clock);
  },

  /**
   * Runs `fn` under a deadline at absolute time `atMs` (ms since the epoch), or the enclosing one if sooner.
   * @throws RangeError if `atMs` is NaN (a programming error; it would make every check pass).
   */
  runAt<T>(atMs: number, fn: () => T, clock: Clock = systemClock): T {
    if (Number.isNaN(atMs)) throw new RangeError('Deadline.runAt: atMs must be a number, got NaN');
    const parent = storage.getStore();
    if (parent !== undefined && parent.at - parent.clock.now() <= atMs - clock.now()) {
      return fn();
    }
    return storage.run({ at: atMs, clock }, fn);
  },

  /**
   * Runs `fn` with no deadline in force, whatever the caller's: for work that outlives the request that
   * started it (a job's run, a background flush), which must not inherit that request's remaining time.
   */
  exit<T>(fn: () => T): T {
    return storage.exit(fn);
  },

  /** Ms left before the current deadline (0 once passed), or `Infinity` when none is set. */
  remaining(): number {
    const scope = storage.getStore();
    if (scope === undefined) return Infinity;
    return Math.max(0, scope.at - scope.clock.now());
  },

  /** The current absolute deadline (ms since the epoch on its clock), or `undefined`. */
  at(): number | undefined {
    return storage.getStore()?.at;
  },

  /**
   * Throws `deadline_exceeded` when `marginMs` ms or less remain (so `check()` throws once the deadline is
   * reached). Never throws outside a deadline.
   * @throws BreakwaterError `deadline_exceeded`
   */
  check(marginMs = 0): void {
    if (Deadline.remaining() <= marginMs) throw deadlineExceeded();
  },
};

/** The `deadline_exceeded` error (transient, HTTP 504). */
export function deadlineExceeded(source?: string): BreakwaterError {
  return new BreakwaterError('deadline_exceeded', { source });
}
