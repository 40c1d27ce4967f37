import type { FakeClock } from '../../src/core/index.js';

/**
 * Polls `check` until it passes or 5 s of real time pass, letting FakeClock-driven promises settle before
 * each try (`clock.tickAsync(0)`): for what crosses a real connection (a PostgreSQL NOTIFY, a reconnect)
 * while every timer of the code under test runs on the fake clock. Rethrows the last failure at the deadline.
 */
export async function eventually(clock: FakeClock, check: () => Promise<void> | void): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    await clock.tickAsync(0);
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise<void>((resolve) => setTimeout(resolve, 10));
    }
  }
}
