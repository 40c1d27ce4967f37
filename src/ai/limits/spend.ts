/**
 * Spend budgets as counter steps (docs/ai-gateway.md#spend-limits-and-their-guarantee). A budget window's
 * state is `{ spentMicroUsd, reservedMicroUsd }`: integers of micro-USD, so sums never drift. A request first
 * RESERVES its estimated maximum cost in one atomic update of the key (refused when spent + reserved +
 * estimate would pass the budget); after the answer it SETTLES: the reservation is removed and the real cost
 * added, in one more atomic update. Concurrent requests therefore see each other's reservations, and a burst
 * cannot overshoot the way check-then-record gateways do (they all read the same "spent" before any records).
 *
 * The guarantee holds as long as a real cost never exceeds its estimate: see `estimateMicroUsd` in
 * pricing.ts for what the estimate does not bound.
 *
 * A crash (or a lost store connection) between reserve and settle leaves the reservation counted until the
 * window ends and its state expires: the budget is under-used for the rest of that window, never overshot.
 */
import { UNCHANGED, type CounterStep } from '../../store/index.js';

/** The stored state of one budget window. */
export interface SpendState {
  spentMicroUsd: number;
  reservedMicroUsd: number;
}

/** What a reservation attempt found. */
export interface ReserveResult {
  reserved: boolean;
  /** The state after the reservation (or as found, when refused). */
  state: SpendState;
}

/** The window a time falls in: `[start, start + windowMs)`, aligned to multiples of `windowMs` since the epoch. */
export function spendWindowStart(nowMs: number, windowMs: number): number {
  return nowMs - (((nowMs % windowMs) + windowMs) % windowMs);
}

/**
 * Reserves `estimateMicroUsd` unless spent + reserved + estimate > `budgetMicroUsd`. Writes nothing when
 * refused. The state expires `remainingMs` after the store's now (the end of its window).
 */
export function reserveStep(
  estimateMicroUsd: number,
  budgetMicroUsd: number,
  remainingMs: number,
): CounterStep<ReserveResult> {
  return (state, now) => {
    const s = readState(state);
    if (s.spentMicroUsd + s.reservedMicroUsd + estimateMicroUsd > budgetMicroUsd) {
      return { state: UNCHANGED, expiresAt: null, result: { reserved: false, state: s } };
    }
    const next: SpendState = {
      spentMicroUsd: s.spentMicroUsd,
      reservedMicroUsd: s.reservedMicroUsd + estimateMicroUsd,
    };
    return { state: next, expiresAt: now + remainingMs, result: { reserved: true, state: next } };
  };
}

/**
 * Removes a reservation of `reservedMicroUsd` and adds `costMicroUsd` (0 to only release it). A window that
 * has already expired is left alone: its budget is over, and nothing counts in it any more.
 */
export function settleStep(
  reservedMicroUsd: number,
  costMicroUsd: number,
  remainingMs: number,
): CounterStep<SpendState | undefined> {
  return (state, now) => {
    if (!isSpendState(state)) return { state: UNCHANGED, expiresAt: null, result: undefined };
    const next: SpendState = {
      spentMicroUsd: state.spentMicroUsd + costMicroUsd,
      reservedMicroUsd: Math.max(0, state.reservedMicroUsd - reservedMicroUsd),
    };
    return { state: next, expiresAt: now + Math.max(1, remainingMs), result: next };
  };
}

/** A stored state, or an empty window for anything else (absent, expired, corrupt). */
export function readState(state: unknown): SpendState {
  return isSpendState(state) ? state : { spentMicroUsd: 0, reservedMicroUsd: 0 };
}

function isSpendState(state: unknown): state is SpendState {
  return (
    typeof state === 'object' &&
    state !== null &&
    Number.isSafeInteger((state as SpendState).spentMicroUsd) &&
    Number.isSafeInteger((state as SpendState).reservedMicroUsd)
  );
}
