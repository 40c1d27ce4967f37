import { expect } from 'vitest';

/**
 * Resolves once `count()` stayed the same for three polls 50 ms apart: a writer that stalled (a provider
 * paused by backpressure). Fails after 10 s of real time if it never settles.
 */
export async function stalled(count: () => number): Promise<void> {
  let last = -1;
  let same = 0;
  await expect
    .poll(
      () => {
        const now = count();
        same = now === last ? same + 1 : 0;
        last = now;
        return same;
      },
      { interval: 50, timeout: 10_000 },
    )
    .toBe(3);
}
