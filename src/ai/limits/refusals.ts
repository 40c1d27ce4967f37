/**
 * The 429s of the limit check (limits.ts) and the `x-ratelimit-*` headers of a rate decision. A refusal is
 * built without a stack: a flood of refused requests should cost the gateway as little as possible.
 */
import { BreakwaterError } from '../../core/index.js';
import { rateLimitedError, type RateLimitDecision } from '../../policy/index.js';

/** `x-ratelimit-limit`, `-remaining` and `-reset` (whole seconds until the window is clear, rounded up). */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(Math.max(0, decision.remaining)),
    'x-ratelimit-reset': String(Math.ceil(decision.resetMs / 1000)),
  };
}

/** 429 `rate_limited` for `rule`, with `Retry-After` and `details { limit, remaining, reset_ms, rule }`. */
export function rateRefusal(decision: RateLimitDecision, rule: string): BreakwaterError {
  const base = rateLimitedError(decision, rule);
  return BreakwaterError.withoutStack('rate_limited', {
    message: `The rate limit "${rule}" (${decision.limit} requests) was reached; try again in ${Math.ceil(decision.retryAfterMs / 1000)} s.`,
    source: rule,
    retryAfterMs: decision.retryAfterMs,
    details: { ...base.details, rule },
  });
}

/**
 * `Retry-After` of a refusal made only by reservations of requests in flight (ms): what they do not spend is
 * freed as each one ends, usually within seconds, not at the end of the window.
 */
export const IN_FLIGHT_RETRY_AFTER_MS = 1_000;

/** What a spend refusal is about: the budget itself, or the caller's share of it in flight. */
export interface SpendRefusalInput {
  rule: string;
  estimateMicro: number;
  budgetMicro: number;
  /** Spent in the window (the budget), or 0 (the share: nothing is spent on it). */
  spentMicro: number;
  windowLeftMs: number;
  /** The caller's share of the budget was refused (`maxReservedShare`), not the budget. */
  share: boolean;
}

/**
 * The 429 `spend_limited` for one rule, `details.refusal` saying which case it is (not `reason`, which the
 * OpenAI-shaped answer would show as the error's `code` in place of `spend_limited`):
 * - `over_budget`: the estimate alone is over the whole budget; waiting will not help (permanent, no
 *   Retry-After);
 * - `over_share`: the estimate alone is over the share of the budget one caller may hold in flight
 *   (`maxReservedShare`); permanent, no Retry-After;
 * - `share_in_flight`: this caller's own requests in flight hold its whole share; Retry-After
 *   {@link IN_FLIGHT_RETRY_AFTER_MS} (or the window's end when sooner);
 * - `reserved_in_flight`: the money spent leaves room for the estimate, but requests in flight have reserved
 *   it; Retry-After {@link IN_FLIGHT_RETRY_AFTER_MS}, or the window's end when that comes sooner;
 * - `budget_spent`: what was spent leaves no room; Retry-After is the window's end.
 */
export function spendRefusal(r: SpendRefusalInput): BreakwaterError {
  const { rule } = r;
  const refuse = (refusal: string, message: string, retryAfterMs: number | undefined) =>
    BreakwaterError.withoutStack('spend_limited', {
      message,
      source: rule,
      ...(retryAfterMs === undefined ? { kind: 'permanent' as const } : { retryAfterMs }),
      details: { rule, refusal },
    });
  const inFlightMs = Math.min(IN_FLIGHT_RETRY_AFTER_MS, r.windowLeftMs);
  if (r.share) {
    if (r.estimateMicro > r.budgetMicro) {
      return refuse(
        'over_share',
        `This request's estimated maximum cost is over the share of the spend limit "${rule}" one caller may reserve at once; lower max_tokens (or n).`,
        undefined,
      );
    }
    return refuse(
      'share_in_flight',
      `Your requests still in flight hold your whole share of the spend limit "${rule}" (each holds its maximum cost until it ends); try again in ${Math.ceil(inFlightMs / 1000)} s.`,
      inFlightMs,
    );
  }
  if (r.estimateMicro > r.budgetMicro) {
    return refuse(
      'over_budget',
      `This request's estimated maximum cost is over the whole budget of the spend limit "${rule}"; lower max_tokens (or n).`,
      undefined,
    );
  }
  if (r.spentMicro + r.estimateMicro <= r.budgetMicro) {
    return refuse(
      'reserved_in_flight',
      `The spend limit "${rule}" is reserved by requests still in flight (each holds its maximum cost until it ends); try again in ${Math.ceil(inFlightMs / 1000)} s.`,
      inFlightMs,
    );
  }
  return refuse(
    'budget_spent',
    `The spend limit "${rule}" for this period has been reached; try again in ${Math.ceil(r.windowLeftMs / 1000)} s.`,
    r.windowLeftMs,
  );
}
