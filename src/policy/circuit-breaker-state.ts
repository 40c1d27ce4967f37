/**
 * The circuit breaker's internal state as a tagged union (not exported from the policy folder): each state
 * holds only its own fields, where flags and NaN sentinels used to stand in for them.
 */
/** Ms until an open breaker half-opens (>= 1). */
export function untilHalfOpen(s: Open, now: number): number {
  return Math.max(1, Math.ceil(s.halfOpenAt - now));
}

/**
 * The breaker's state as a tagged union: each state holds only its own fields (no NaN sentinels).
 * `openMs` is the open period this state came from; half-open's trial counts change in place.
 */
export type BreakerState = Closed | Open | HalfOpen | Isolated;
export interface Closed {
  readonly kind: 'closed';
}
export interface Open {
  readonly kind: 'open';
  readonly openedAt: number;
  readonly halfOpenAt: number;
  readonly openMs: number;
}
export interface HalfOpen {
  readonly kind: 'half-open';
  readonly openedAt: number;
  readonly halfOpenAt: number;
  readonly openMs: number;
  trialsInFlight: number;
  /** When the running trials started: stamped when a trial is admitted while none runs. */
  trialsSince: number;
  trialSuccesses: number;
}
export interface Isolated {
  readonly kind: 'isolated';
  readonly openedAt: number;
}

/** The one closed state: `current === CLOSED` is the closed fast path's whole check. */
export const CLOSED: Closed = Object.freeze({ kind: 'closed' });

export function halfOpen(openedAt: number, halfOpenAt: number, openMs: number): HalfOpen {
  return {
    kind: 'half-open',
    openedAt,
    halfOpenAt,
    openMs,
    trialsInFlight: 0,
    trialsSince: NaN,
    trialSuccesses: 0,
  };
}
