import type { RateLimitAlgorithm, RateLimitDecision } from './algorithms.js';

/**
 * Where rate-limit counters live (docs/policies.md#the-store-interface): memory for one
 * process, SQLite, PostgreSQL or Redis so limits hold across instances.
 *
 * An implementation reads the key's state, runs `algorithm.step(state, nowMs, cost)` and writes the new state,
 * atomically with respect to every other consumer of the same key (a SQL transaction with the row locked, a
 * Redis Lua script mirroring the algorithms). It writes only when `decision.allowed` (a denied request does
 * not count), and may drop a key's state `decision.resetMs` ms after `nowMs` (the state is then equivalent to
 * none). A key is meant for one algorithm configuration; a state of another algorithm's shape is ignored.
 *
 * `consume` may answer synchronously: the memory store does, so a policy over it pays no promise hop. Callers
 * must accept both (`await` works on either).
 */
export interface RateLimitStore {
  /**
   * Decides a request of `cost` on `key` at `nowMs` (ms since the epoch, from the caller's clock) and counts
   * it when allowed.
   * @throws RangeError when `cost` is invalid for `algorithm`; any store failure (I/O) as the store's own error.
   */
  consume(
    key: string,
    algorithm: RateLimitAlgorithm,
    cost: number,
    nowMs: number,
  ): RateLimitDecision | Promise<RateLimitDecision>;
  /** Forgets everything counted on `key`. */
  reset(key: string): void | Promise<void>;
}
