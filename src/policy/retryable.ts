import type { Classification } from '../core/index.js';

/**
 * Codes our own policies never repeat by default: our own limits (`rate_limited`, `spend_limited`: retrying
 * your own 429 only adds load) and an open breaker (`circuit_open`: it has just said the dependency is down
 * for a while, and its point is to answer in milliseconds).
 */
export const NOT_REPEATED_BY_DEFAULT: ReadonlySet<string> = new Set([
  'rate_limited',
  'spend_limited',
  'circuit_open',
]);

/**
 * Whether retry and hedging repeat a failure when no `shouldRetry` / `shouldHedge` is given:
 * `classify(error).retryable` (transient, and not an unknown outcome of a non-idempotent write), minus
 * {@link NOT_REPEATED_BY_DEFAULT}.
 */
export function repeatableByDefault(c: Classification): boolean {
  return c.retryable && !NOT_REPEATED_BY_DEFAULT.has(c.code);
}
