import type { RateLimitAlgorithm, RateLimitDecision, RateLimitStore } from '../../policy/index.js';
import { UNCHANGED, type CounterStore } from '../../store/index.js';

/**
 * A {@link RateLimitStore} over the store's counters (`store.counters` of the SQLite or PostgreSQL store), so
 * the AI gateway's rate rules hold across every process sharing the storage
 * (docs/ai-gateway.md#rate-limits-fixed-versus-sliding; docs/architecture.md#storage).
 *
 * `consume` runs `algorithm.step(state, nowMs, cost)` as the counter's step, so the read, the decision and the
 * write are one atomic update of the key (SQLite: the write lock, group-committed; PostgreSQL: the row lock):
 * concurrent requests on one key never both take the last unit. An allowed decision stores the new state,
 * kept until `decision.resetMs` after the store's clock (the algorithms' contract: by then the state is
 * equivalent to none, so the store may drop it); a denied one writes nothing (`UNCHANGED`: a refused request
 * does not count, and the key's expiry stays). The decision uses the caller's `nowMs`, as the
 * {@link RateLimitStore} contract says; the expiry the store's own clock, which is what it compares against.
 *
 * Keys are used as given (1..512 characters without NUL): the caller namespaces them, since the same counters
 * also hold spend budgets.
 *
 * `consume` rejects with a RangeError for an invalid `cost` (checked before the store is touched) or a bad
 * key, and with the store's error when it fails or is closed; `reset` deletes the key.
 */
export function counterRateLimitStore(counters: CounterStore): RateLimitStore {
  return {
    consume(
      key: string,
      algorithm: RateLimitAlgorithm,
      cost: number,
      nowMs: number,
    ): Promise<RateLimitDecision> {
      try {
        algorithm.checkCost(cost);
      } catch (error) {
        return Promise.reject(error);
      }
      return counters.update(key, (state, storeNowMs) => {
        const { state: next, decision } = algorithm.step(state, nowMs, cost);
        return decision.allowed
          ? { state: next, expiresAt: storeNowMs + decision.resetMs, result: decision }
          : { state: UNCHANGED, expiresAt: null, result: decision };
      });
    },
    reset(key: string): Promise<void> {
      return counters.delete(key);
    },
  };
}
