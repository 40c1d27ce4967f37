import { describe, expect, it } from 'vitest';
import { defineWebhookSource, onWebhook, stripeVerifier } from '../../src/webhooks/index.js';
import {
  STRIPE_SECRET,
  deliverStripe,
  post,
  startIngress,
  stripeEvent,
  until,
  useCleanups,
} from './support.js';

/**
 * Admission control over real HTTP (docs/webhooks.md#status-codes): 429 over the rate limit, 503 over the
 * backlog, both with Retry-After.
 */

const defer = useCleanups();
const verifier = stripeVerifier({ secrets: [STRIPE_SECRET] });

describe('admission control', () => {
  it('429 rate_limited with Retry-After once the source’s rate is crossed, before the signature is even checked', async () => {
    const source = defineWebhookSource({
      name: 'payments',
      verifier,
      rateLimit: { limit: 3, windowMs: 60_000, algorithm: 'fixed_window' },
    });
    const { url, store } = await startIngress(defer, { sources: [source] });
    for (let i = 0; i < 3; i++) {
      expect((await deliverStripe(url, 'payments', stripeEvent(`evt_${i}`, 'x'))).status).toBe(200);
    }
    const limited = await deliverStripe(url, 'payments', stripeEvent('evt_3', 'x'));
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body).toMatchObject({
      code: 'rate_limited',
      retryable: true,
      limit: 3,
      remaining: 0,
      retry_after_ms: expect.any(Number),
    });
    expect(Math.ceil((limited.body.retry_after_ms as number) / 1000)).toBe(retryAfter);
    // Refused before reading the body: an unsigned delivery gets the same 429, not a 401.
    expect((await post(`${url}/webhooks/payments`, '{}')).status).toBe(429);
    expect((await store.listWebhooks()).map((r) => r.eventId).sort()).toEqual(['evt_0', 'evt_1', 'evt_2']);
  });

  it('503 overloaded with Retry-After while the backlog is at its limit, 200 again once the worker caught up', async () => {
    const source = defineWebhookSource({
      name: 'payments',
      verifier,
      maxBacklog: 2,
      backlogRetryAfterMs: 7_000,
    });
    const handled: string[] = [];
    const { url, store, jobs } = await startIngress(defer, {
      sources: [source],
      handlers: [onWebhook('payments', '*', ({ eventId }) => void handled.push(eventId))],
      backlogCacheMs: 50,
      worker: false,
    });
    expect((await deliverStripe(url, 'payments', stripeEvent('evt_a', 'x'))).status).toBe(200);
    expect((await deliverStripe(url, 'payments', stripeEvent('evt_b', 'x'))).status).toBe(200);
    const full = await deliverStripe(url, 'payments', stripeEvent('evt_c', 'x'));
    expect(full.status).toBe(503);
    expect(full.headers['retry-after']).toBe('7');
    expect(full.body).toMatchObject({
      code: 'overloaded',
      retryable: true,
      retry_after_ms: 7_000,
      max_backlog: 2,
      detail: 'The payments webhook backlog is full (2 events waiting); try again in about 7 seconds.',
    });
    // A duplicate of a stored event is refused too while full: admission comes before the inbox lookup.
    expect((await deliverStripe(url, 'payments', stripeEvent('evt_a', 'x'))).status).toBe(503);
    expect(await store.webhookBacklog('payments')).toBe(2);

    jobs.start();
    await until(
      () => handled.length,
      (n) => n === 2,
    );
    // The count is re-read at most every 50 ms: within a few tries the delivery is admitted.
    const answer = await until(
      () => deliverStripe(url, 'payments', stripeEvent('evt_c', 'x')),
      (a) => a.status !== 503,
      2_000,
    );
    expect(answer).toMatchObject({ status: 200, body: { duplicate: false, event_id: 'evt_c' } });
  });
});
