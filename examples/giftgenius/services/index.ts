import { startAnalyticsService } from './analytics.js';
import { loadCatalog } from './catalog.js';
import { startCommerceService } from './commerce.js';
import { startGiftService } from './gift.js';
import type { ServiceHandle } from './service.js';

export { startAnalyticsService, DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT } from './analytics.js';
export type { AnalyticsEvent, AnalyticsServiceOptions } from './analytics.js';
export { loadCatalog, indexCatalog } from './catalog.js';
export type { Product } from './catalog.js';
export { startCommerceService, IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER } from './commerce.js';
export type { CommerceServiceOptions, Order, PaymentIntent } from './commerce.js';
export { NO_FAULTS, parseFaults } from './faults.js';
export type { FaultSettings, FaultSwitch, Faults } from './faults.js';
export { startGiftService, recommendGifts, DEFAULT_LIMIT, MAX_LIMIT } from './gift.js';
export type { GiftServiceOptions, Recommendation, RecommendationRequest } from './gift.js';
export { PROBLEM_CONTENT_TYPE } from './problem.js';
export type { ServiceProblem } from './problem.js';
export type { ServiceHandle, ServiceOptions } from './service.js';

/** The fixed ports `main.ts` uses unless overridden (GIFT_PORT, COMMERCE_PORT, ANALYTICS_PORT). */
export const DEFAULT_PORTS = Object.freeze({ gift: 8791, commerce: 8792, analytics: 8793 });

/**
 * Where the three services listen: `host` (default 127.0.0.1) and a port per service; a port left out or 0
 * picks a free one. `random` (values in [0, 1), default `Math.random`) drives every service's `errorRate`.
 */
export interface GiftGeniusServicesOptions {
  host?: string;
  ports?: { gift?: number; commerce?: number; analytics?: number };
  random?: () => number;
}

/** The three running services, and `close()` for all of them. */
export interface GiftGeniusServices {
  gift: ServiceHandle;
  commerce: ServiceHandle;
  analytics: ServiceHandle;
  close(): Promise<void>;
}

/**
 * Starts the gift recommender, commerce and analytics services of the GiftGenius example, all on the
 * shipped catalog. If one cannot start, the ones already started are closed before the error is thrown.
 *
 * @throws Error naming the service and port when one cannot listen (for example the port is in use).
 */
export async function startGiftGeniusServices(
  options: GiftGeniusServicesOptions = {},
): Promise<GiftGeniusServices> {
  const { host = '127.0.0.1', ports = {}, random } = options;
  const catalog = loadCatalog();
  const started: ServiceHandle[] = [];
  const start = async (handle: Promise<ServiceHandle>): Promise<ServiceHandle> => {
    const service = await handle;
    started.push(service);
    return service;
  };
  try {
    const gift = await start(startGiftService({ host, port: ports.gift ?? 0, random, catalog }));
    const commerce = await start(startCommerceService({ host, port: ports.commerce ?? 0, random, catalog }));
    const analytics = await start(startAnalyticsService({ host, port: ports.analytics ?? 0, random }));
    return {
      gift,
      commerce,
      analytics,
      async close() {
        await Promise.all(started.map((service) => service.close()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((service) => service.close()));
    throw error;
  }
}
