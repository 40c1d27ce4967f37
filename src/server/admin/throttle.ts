/**
 * The admin login throttle: failed admin credentials (a wrong token at `POST /admin/login` or as a bearer on
 * an admin route) are counted per client address in a sliding window; once an address has
 * `maxFailures` in the window, every admin credential it presents, right or wrong, is refused with 429 until
 * the window holds none of them any more, so guessing cannot continue at speed. The address is `request.ip`: behind a
 * trusted proxy the client's own (see http/proxy.ts), else the socket's peer.
 */
import { BreakwaterError, defineOptions, o, type Clock } from '../../core/index.js';
import { MemoryRateLimitStore, rateLimitAlgorithm } from '../../policy/index.js';

/** Options of {@link createLoginThrottle}; validated at once (an OptionsError names every bad option). */
export interface LoginThrottleOptions {
  /** Failures an address may make within `windowMs` (integer >= 1, default 10). */
  maxFailures?: number;
  /** The sliding window, ms (integer >= 1, default 900 000: 15 minutes). */
  windowMs?: number;
  clock?: Clock;
}

/** Defaults of {@link LoginThrottleOptions}. */
export const LOGIN_THROTTLE_DEFAULTS = { maxFailures: 10, windowMs: 15 * 60_000 } as const;

/** Checks {@link LoginThrottleOptions} and applies {@link LOGIN_THROTTLE_DEFAULTS}. */
const parseOptions = defineOptions<LoginThrottleOptions>()('createLoginThrottle', {
  maxFailures: o.number().int().min(1).default(LOGIN_THROTTLE_DEFAULTS.maxFailures),
  windowMs: o.number().int().min(1).default(LOGIN_THROTTLE_DEFAULTS.windowMs),
  clock: o.clock(),
});

/** Most addresses whose refusal is remembered; past it the oldest is forgotten first. */
const MAX_BLOCKED = 10_000;

/** Counts failed admin credentials per address. */
export interface LoginThrottle {
  /**
   * @throws BreakwaterError `rate_limited` (429, `retryAfterMs`, `details.reason: 'login_throttled'`) while
   *   `address` has used up its failures.
   */
  refuseIfBlocked(address: string): void;
  /** Counts one failure of `address`. */
  recordFailure(address: string): void;
}

/**
 * Creates a throttle whose counters live in this process's memory (bounded).
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createLoginThrottle`) naming every bad option.
 */
export function createLoginThrottle(options: LoginThrottleOptions = {}): LoginThrottle {
  const { maxFailures, windowMs, clock } = parseOptions(options);
  const algorithm = rateLimitAlgorithm({ type: 'sliding_window', limit: maxFailures, windowMs });
  const failures = new MemoryRateLimitStore();
  /** Address → when its next failure would be counted again (ms since the epoch). */
  const blockedUntil = new Map<string, number>();

  return {
    refuseIfBlocked(address) {
      const until = blockedUntil.get(address);
      if (until === undefined) return;
      const waitMs = until - clock.now();
      if (waitMs <= 0) {
        blockedUntil.delete(address);
        return;
      }
      throw new BreakwaterError('rate_limited', {
        message: 'Too many failed admin logins from this address; try again later.',
        retryAfterMs: waitMs,
        details: { reason: 'login_throttled' },
      });
    },
    recordFailure(address) {
      const decision = failures.consume(address, algorithm, 1, clock.now());
      if (decision.allowed && decision.remaining > 0) return;
      if (blockedUntil.size >= MAX_BLOCKED) blockedUntil.delete(blockedUntil.keys().next().value!);
      blockedUntil.delete(address);
      const waitMs = decision.allowed ? decision.resetMs : decision.retryAfterMs;
      blockedUntil.set(address, clock.now() + Math.max(1, waitMs));
    },
  };
}
