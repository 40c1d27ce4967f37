/**
 * The matrix gateway's clock: core's `FakeClock`, moved forward by the real time that passes (checked every
 * millisecond), so sockets, per-attempt timeouts and tool deadlines run as they would in production. On top
 * of that a test may `jump` over a long wait (a breaker's open period, a `Retry-After`, a job's retry
 * backoff) without spending it, and `pause` time while it arranges a state (a full bulkhead) that must not
 * be disturbed by a timer firing.
 */
import { FakeClock } from '../../../src/entries/testing.js';

export interface SteppedClock {
  readonly clock: FakeClock;
  /** Moves time forward by `ms` at once, firing every timer due meanwhile (promises settle between them). */
  jump(ms: number): Promise<void>;
  /** Stops time: no timer fires until `resume()` (real time spent meanwhile is not added). */
  pause(): void;
  resume(): void;
  /** Stops following real time; idempotent. */
  stop(): void;
}

/** Starts a FakeClock at the real time that follows real time until `stop()`. */
export function steppedClock(): SteppedClock {
  const clock = new FakeClock(Date.now());
  let last = performance.now();
  let paused = false;
  let jumping = false;
  const follow = setInterval(() => {
    const now = performance.now();
    const elapsed = Math.floor(now - last);
    if (paused || jumping || elapsed < 1) {
      if (paused) last = now;
      return;
    }
    last += elapsed;
    clock.tick(elapsed);
  }, 1);
  return {
    clock,
    async jump(ms) {
      jumping = true;
      try {
        await clock.tickAsync(ms);
      } finally {
        jumping = false;
      }
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      last = performance.now();
    },
    stop: () => clearInterval(follow),
  };
}
