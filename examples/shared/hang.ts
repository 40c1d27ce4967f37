/**
 * What the examples' fault switches (the GiftGenius services' `hang`, the simulated LLM provider's `hang`)
 * share: requests parked while a hang is on, released when it goes off or when their client leaves, and an
 * abortable pause for injected latency.
 */

/** Requests parked while a hang is on. */
export class HangGate {
  private readonly waiters = new Set<() => void>();

  /** How many requests are parked now. */
  get size(): number {
    return this.waiters.size;
  }

  /**
   * Waits while `hanging()` holds. Resolves true once released ({@link releaseAll} with the hang off), false
   * when `signal` aborts first (the client left or the service is closing).
   */
  async wait(hanging: () => boolean, signal: AbortSignal): Promise<boolean> {
    while (hanging()) {
      if (signal.aborted) return false;
      const released = await new Promise<boolean>((resolve) => {
        const finish = (value: boolean): void => {
          this.waiters.delete(onRelease);
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        };
        const onRelease = (): void => finish(true);
        const onAbort = (): void => finish(false);
        this.waiters.add(onRelease);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      if (!released) return false;
    }
    return !signal.aborted;
  }

  /** Wakes every parked request: each looks at the hang again. */
  releaseAll(): void {
    for (const release of [...this.waiters]) release();
  }
}

/** Resolves true after `ms` (at once for 0 or less), false as soon as `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
