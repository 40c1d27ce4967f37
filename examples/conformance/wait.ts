/**
 * Waits `ms`, or rejects with the signal's reason when `signal` aborts first (a tool's deadline or the client's
 * cancel), so a fixture that pauses stops at once when its call ends.
 */
export function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}
