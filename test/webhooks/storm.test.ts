import { describe, expect, it } from 'vitest';
import { defineWebhookSource, onWebhook, stripeVerifier } from '../../src/webhooks/index.js';
import { planStorm, sendStorm } from './storm-support.js';
import { STRIPE_SECRET, startIngress, until, useCleanups } from './support.js';

/**
 * The webhook storm (docs/webhooks.md#storm-behaviour), bounded for CI: BREAKWATER_STORM_DELIVERIES
 * deliveries (default 20 000), 30% duplicates, 5% bad signatures, shuffled, over 64 connections, against the
 * ingress on the real server with a SQLite file and a worker in this process. Limits are set so they are
 * crossed: a rate limit per second and a backlog the worker cannot keep under while the storm lasts. The
 * sender retries 429/503 after their Retry-After, as payment platforms do, so every good event ends up
 * acknowledged.
 */

const defer = useCleanups();
const TOTAL = Number(process.env.BREAKWATER_STORM_DELIVERIES ?? 20_000);

interface PaymentEvent {
  id: string;
  type: string;
  data: { object: { metadata: { order_id: string } } };
}

describe('webhook storm', () => {
  it(`${TOTAL} deliveries, 30% duplicates, 5% bad signatures, 64 connections: none bad accepted, each event handled exactly once, limits answered with Retry-After, memory bounded`, async () => {
    const plan = planStorm(TOTAL, { duplicateShare: 0.3, badShare: 0.05, orders: 500, seed: 7 });
    const effects = new Map<string, number>();
    const source = defineWebhookSource<PaymentEvent>({
      name: 'payments',
      verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
      rateLimit: { limit: 1_000, windowMs: 1_000, algorithm: 'fixed_window' },
      maxBacklog: 2_000,
      backlogRetryAfterMs: 1_000,
      concurrency: 16,
      orderingKey: (event) => event.data.object.metadata.order_id,
    });
    const handler = onWebhook<PaymentEvent>('payments', '*', async ({ eventId, event }) => {
      expect(event.id).toBe(eventId);
      effects.set(eventId, (effects.get(eventId) ?? 0) + 1);
    });
    // The worker starts only once the backlog limit has been hit, so the 503s do not depend on how fast this
    // machine runs handlers compared with how fast it takes deliveries.
    const { url, store, jobs } = await startIngress(defer, {
      sources: [source],
      handlers: [handler],
      backlogCacheMs: 100,
      worker: false,
    });

    const heapBefore = process.memoryUsage().heapUsed;
    const started = Date.now();
    const report = await sendStorm(url, 'payments', plan, {
      connections: 64,
      onLimited: (status) => {
        if (status === 503) jobs.start();
      },
    });
    const sentMs = Date.now() - started;
    console.log(
      `storm: ${TOTAL} deliveries sent in ${sentMs} ms; final ${JSON.stringify(report.finalByStatus)}; ` +
        `429 ×${report.limited[429]}, 503 ×${report.limited[503]}`,
    );

    // Nothing bad got in, every good event was acknowledged, exactly once as new.
    expect(report.badAccepted).toEqual([]);
    expect(report.transportErrors).toBe(0);
    expect(report.finalByStatus).toEqual({ 200: TOTAL - plan.badIds.length, 401: plan.badIds.length });
    expect(report.acknowledged.size).toBe(plan.goodIds.length);
    expect([...report.firstAccepts.values()].every((n) => n === 1)).toBe(true);
    expect(report.firstAccepts.size).toBe(plan.goodIds.length);
    // The limits were crossed and answered with Retry-After.
    expect(report.limited[429]).toBeGreaterThan(0);
    expect(report.limited[503]).toBeGreaterThan(0);
    expect(report.limited.withoutRetryAfter).toBe(0);

    // Every accepted event is handled, each exactly once; none of the bad ones.
    await until(
      () => effects.size,
      (n) => n === plan.goodIds.length,
      60_000,
    );
    const stats = await until(
      () => store.stats(),
      (s) => s.counts.pending === 0 && s.counts.in_progress === 0,
      10_000,
    );
    expect(stats.counts).toMatchObject({ completed: plan.goodIds.length, failed: 0 });
    expect([...effects.values()].every((n) => n === 1)).toBe(true);
    for (const id of plan.badIds) expect(effects.has(id)).toBe(false);
    expect(await store.getWebhook('payments', plan.badIds[0]!)).toBeUndefined();

    // Loosely bounded: the storm's bodies are not kept anywhere in this process (20 000 bodies alone are
    // about 6 MB; a leak of requests or replies would be far more).
    const heapAfter = process.memoryUsage().heapUsed;
    console.log(`storm: heap ${(heapBefore / 1e6).toFixed(0)} → ${(heapAfter / 1e6).toFixed(0)} MB`);
    expect(heapAfter - heapBefore).toBeLessThan(150 * 1024 * 1024);
  }, 120_000);
});
