/**
 * GiftGenius's three dependencies, with the policies of the defaults table
 * (docs/architecture.md#defaults): gift (timeout 4 s,
 * bulkhead 10, breaker 5 failures / 30 s open), commerce (3 s, bulkhead 3, breaker 3 / 20 s) and analytics
 * (bulkhead 50). Each has its own bulkhead and breaker, so a hanging gift service cannot take checkout down.
 * Breakers are per process unless `sharedBreakers` is given (`breakwater serve --shared-breakers`).
 */
import { createUpstream, type Upstream } from '../../src/entries/upstream.js';
import { type Clock } from '../../src/entries/index.js';
import { type CounterStore } from '../../src/entries/jobs.js';

/** Where the services are and how patient to be with them; tests shrink the times. */
export interface UpstreamSettings {
  giftUrl: string;
  commerceUrl: string;
  analyticsUrl: string;
  /** Per-attempt timeouts, ms (defaults 4 000 / 3 000 / 2 000). */
  giftTimeoutMs?: number;
  commerceTimeoutMs?: number;
  analyticsTimeoutMs?: number;
  /** Breaker open periods, ms (defaults 30 000 / 20 000). */
  giftOpenMs?: number;
  commerceOpenMs?: number;
  /**
   * `store.counters` of the store every instance shares: each breaker's open, isolated and closed state is
   * then shared with the other instances (read every second). Default: none, each process on its own.
   */
  sharedBreakers?: CounterStore;
  clock?: Clock;
}

/** The code and sentence of a checkout whose order may or may not exist (the model resumes it, never repeats it). */
export const CHECKOUT_UNKNOWN = {
  code: 'checkout_outcome_unknown',
  sentence:
    'No confirmation came back from the payment service, so the order may or may not have been placed; check its status by calling checkout again with the same operation_id before ordering again.',
} as const;

/**
 * What the model is told about the gift service, by what happened (docs/upstream.md, "Errors"). "try again
 * shortly" becomes "try again in about N seconds" when the wait is known (the breaker's, `Retry-After`).
 */
export const GIFT_ERRORS = {
  timeout: {
    code: 'gift_service_timeout',
    sentence: 'The gift recommendation service did not answer in time; try again shortly.',
  },
  open: {
    code: 'gift_service_unavailable',
    sentence:
      'The gift recommendation service is temporarily unavailable after repeated failures; try again shortly.',
  },
  busy: {
    code: 'gift_service_busy',
    sentence: 'The gift recommendation service is busy right now; try again shortly.',
  },
  unavailable: {
    code: 'gift_service_failing',
    sentence: 'The gift recommendation service is not working right now; try again shortly.',
  },
  error: {
    code: 'gift_service_error',
    sentence: 'The gift recommendation service could not handle this request.',
  },
} as const;

/** What the model is told about the payment (commerce) service, by what happened. */
export const COMMERCE_ERRORS = {
  timeout: {
    code: 'payment_service_timeout',
    sentence: 'The payment service did not answer in time; try again shortly.',
  },
  open: {
    code: 'payment_service_unavailable',
    sentence: 'The payment service is temporarily unavailable after repeated failures; try again shortly.',
  },
  busy: {
    code: 'payment_service_busy',
    sentence: 'The payment service is busy right now; try again shortly.',
  },
  unavailable: {
    code: 'payment_service_failing',
    sentence: 'The payment service is not working right now; try again shortly.',
  },
  error: { code: 'checkout_rejected', sentence: 'The shop could not accept this order.' },
  unknown: CHECKOUT_UNKNOWN,
} as const;

export interface GiftGeniusUpstreams {
  gift: Upstream;
  commerce: Upstream;
  analytics: Upstream;
}

export function createUpstreams(settings: UpstreamSettings): GiftGeniusUpstreams {
  const { clock } = settings;
  // One row per dependency (`breaker:gift`, …): instances share a breaker by its upstream's name.
  const shared = settings.sharedBreakers && { store: settings.sharedBreakers };
  const gift = createUpstream({
    name: 'gift',
    baseUrl: settings.giftUrl,
    timeoutMs: settings.giftTimeoutMs ?? 4_000,
    bulkhead: { maxConcurrent: 10, maxQueue: 20, queueTimeoutMs: 1_000 },
    breaker: { consecutiveFailures: 5, openMs: settings.giftOpenMs ?? 30_000, shared },
    // One retry: a second 4 s attempt still fits the 10 s tool deadline; a third would not.
    retry: { maxAttempts: 2 },
    errors: GIFT_ERRORS,
    clock,
  });
  const commerce = createUpstream({
    name: 'commerce',
    baseUrl: settings.commerceUrl,
    timeoutMs: settings.commerceTimeoutMs ?? 3_000,
    bulkhead: { maxConcurrent: 3, maxQueue: 5, queueTimeoutMs: 1_000 },
    breaker: { consecutiveFailures: 3, openMs: settings.commerceOpenMs ?? 20_000, shared },
    retry: { maxAttempts: 2 },
    errors: COMMERCE_ERRORS,
    clock,
  });
  const analytics = createUpstream({
    name: 'analytics',
    baseUrl: settings.analyticsUrl,
    timeoutMs: settings.analyticsTimeoutMs ?? 2_000,
    bulkhead: { maxConcurrent: 50, maxQueue: 0 },
    breaker: { consecutiveFailures: 10, openMs: 10_000, shared },
    retry: false,
    clock,
  });
  return { gift, commerce, analytics };
}
