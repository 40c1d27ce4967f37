/**
 * Where spend budgets are reserved and settled (docs/ai-gateway.md#spend-limits-and-their-guarantee;
 * docs/architecture.md#storage): the store's counters by default, or Redis (`RedisSpendStore`). Both keep the
 * rule of spend.ts: a reservation is granted only when spent + reserved + estimate <= budget, atomically per
 * key, so concurrent requests from any number of processes never overshoot a budget together.
 */
import type { CounterStore } from '../../store/index.js';
import { reserveStep, settleStep, type SpendState } from './spend.js';

/** What a reservation attempt found: the window's state after it (or as found, when refused). */
export interface SpendReservation extends SpendState {
  /** True when the estimate was reserved. */
  readonly ok: boolean;
}

/**
 * Storage of spend budget windows, one key per rule, scope value and window. Amounts are integers of
 * micro-USD; times ms since the epoch on the caller's clock. A window's state may be dropped at its end
 * (`windowEndMs`): its budget is over.
 */
export interface SpendStore {
  /**
   * Reserves `estimateMicroUsd` on `key` unless spent + reserved + estimate > `budgetMicroUsd`, atomically
   * with respect to every other call on the key. Writes nothing when refused.
   * @throws the store's error when it fails (an implementation may refuse with a `spend_limited`
   *   BreakwaterError instead, as `RedisSpendStore` does when Redis is unreachable).
   */
  reserve(
    key: string,
    estimateMicroUsd: number,
    budgetMicroUsd: number,
    windowEndMs: number,
    nowMs: number,
  ): Promise<SpendReservation>;
  /**
   * Removes a reservation of `reservedMicroUsd` (never below 0) and adds `costMicroUsd` (0 to only release
   * it), atomically. A window already dropped is left alone. Resolves the new state (undefined: no window).
   * @throws the store's error when it fails: the reservation then stays counted until the window ends.
   */
  settle(
    key: string,
    reservedMicroUsd: number,
    costMicroUsd: number,
    windowEndMs: number,
    nowMs: number,
  ): Promise<SpendState | undefined>;
}

/**
 * The default {@link SpendStore}: spend.ts's `reserveStep` / `settleStep` as updates of `counters` (the
 * SQLite or PostgreSQL store's `store.counters`, or memory). States expire `windowEndMs - nowMs` after the
 * store's own clock.
 */
export function counterSpendStore(counters: CounterStore): SpendStore {
  return {
    async reserve(key, estimateMicroUsd, budgetMicroUsd, windowEndMs, nowMs) {
      const { reserved, state } = await counters.update(
        key,
        reserveStep(estimateMicroUsd, budgetMicroUsd, windowEndMs - nowMs),
      );
      return { ok: reserved, ...state };
    },
    settle(key, reservedMicroUsd, costMicroUsd, windowEndMs, nowMs) {
      return counters.update(key, settleStep(reservedMicroUsd, costMicroUsd, windowEndMs - nowMs));
    },
  };
}
