const settled = Promise.resolve();

/**
 * A promise that rejects with `error` one microtask from now. `Promise.reject(error)` rejects a promise that
 * has no handler yet, which makes Node record a possible unhandled rejection and then take it back when the
 * caller attaches its handler: about a microsecond per rejection. On fast-fail paths (an open breaker, a
 * full bulkhead, a rate limit) the caller always attaches its handler in the same tick, so rejecting a
 * microtask later skips that bookkeeping. A rejection nobody handles is still reported as unhandled.
 */
export function rejectSoon<T = never>(error: unknown): Promise<T> {
  return settled.then(() => {
    throw error;
  });
}
