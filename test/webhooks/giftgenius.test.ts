import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { startGiftGeniusServices } from '../../examples/giftgenius/services/index.js';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { post, tempDb, until, useCleanups } from './support.js';

/**
 * GiftGenius's payment webhooks through `startGateway` (what `npm start` runs): a signed
 * `payment_intent.succeeded` is recorded with the commerce service once, however often it is delivered.
 */

const defer = useCleanups();
const SECRET = 'whsec_giftgenius_e2e_test';

async function start(secret = SECRET): Promise<{ gateway: Gateway; commerceUrl: string; lines: string[] }> {
  const services = await startGiftGeniusServices({});
  defer(() => services.close());
  const lines: string[] = [];
  const gateway = await startGateway({
    app: createGiftGeniusApp({
      giftUrl: services.gift.url,
      commerceUrl: services.commerce.url,
      analyticsUrl: services.analytics.url,
      webhookSecret: secret,
      llmPort: 0,
    }),
    store: tempDb(defer),
    port: 0,
    graceMs: 200,
    log: (line) => lines.push(line),
  });
  defer(() => gateway.close());
  return { gateway, commerceUrl: services.commerce.url, lines };
}

async function json(url: string, init: Parameters<typeof request>[1] = {}) {
  const response = await request(url, init);
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

describe('GiftGenius payment webhooks', () => {
  it('a payment_intent.succeeded is recorded with the commerce service once, however often it arrives', async () => {
    const { gateway, commerceUrl } = await start();
    expect(gateway.webhooks?.sources).toEqual(['payments']);
    const order = await json(`${commerceUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'order-1' },
      body: JSON.stringify({ product_id: 'p001', quantity: 1, customer_id: 'cus_1' }),
    });
    expect(order.status).toBe(201);
    const orderId = order.body.order_id as string;

    const delivery = paymentDelivery(SECRET, {
      id: 'evt_paid_1',
      type: 'payment_intent.succeeded',
      orderId,
      customerId: 'cus_1',
      amountCents: 4_250,
    });
    const url = `${gateway.url}/webhooks/payments`;
    const answers = await Promise.all([
      post(url, delivery.body, delivery.headers),
      post(url, delivery.body, delivery.headers),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(answers.filter((a) => a.body.duplicate === false)).toHaveLength(1);

    const record = await gateway.store.getWebhook('payments', 'evt_paid_1');
    const job = await until(
      () => gateway.store.get(record!.jobId),
      (j) => j?.status === 'completed' || j?.status === 'failed',
    );
    expect(job).toMatchObject({
      status: 'completed',
      orderingKey: `order:${orderId}`,
      result: {
        handled: true,
        event_type: 'payment_intent.succeeded',
        result: { order_id: orderId, payment: 'paid', payment_intent_id: expect.any(String) },
      },
    });
    // Recorded under the event id as Idempotency-Key: one payment intent for the order.
    const recorded = await json(`${commerceUrl}/payment_intents?idempotency_key=evt_paid_1`);
    expect(recorded.body).toMatchObject({ order_id: orderId, amount_usd: 42.5, customer_id: 'cus_1' });

    // A replay of the event (an operator re-running it) finds the same record instead of making another.
    const replay = await post(`${gateway.url}/admin/webhooks/payments/evt_paid_1/replay`, '');
    expect(replay.status).toBe(202);
    const again = await until(
      () => gateway.store.get(replay.body.job_id as string),
      (j) => j?.status === 'completed',
    );
    expect(again!.result).toEqual(job!.result);
    const all = await json(`${commerceUrl}/payment_intents`);
    expect((all.body.payment_intents as unknown[]).length).toBe(1);
  });

  it('a failed payment for an order the shop does not know is dead-lettered; other types are stored unhandled', async () => {
    const { gateway } = await start();
    const url = `${gateway.url}/webhooks/payments`;
    const failed = paymentDelivery(SECRET, {
      id: 'evt_failed_1',
      type: 'payment_intent.payment_failed',
      orderId: 'ord_missing',
      customerId: 'cus_1',
      amountCents: 100,
    });
    expect((await post(url, failed.body, failed.headers)).status).toBe(200);
    const record = await gateway.store.getWebhook('payments', 'evt_failed_1');
    const dead = await until(
      () => gateway.store.get(record!.jobId),
      (j) => j?.status === 'failed',
    );
    expect(dead!.error).toMatchObject({ kind: 'permanent' });

    const created = paymentDelivery(SECRET, {
      id: 'evt_created_1',
      type: 'payment_intent.created',
      orderId: 'ord_missing',
      customerId: 'cus_1',
      amountCents: 100,
    });
    expect((await post(url, created.body, created.headers)).status).toBe(200);
    const unhandled = await gateway.store.getWebhook('payments', 'evt_created_1');
    const done = await until(
      () => gateway.store.get(unhandled!.jobId),
      (j) => j?.status === 'completed',
    );
    expect(done!.result).toEqual({ handled: false, event_type: 'payment_intent.created' });
  });

  it('prints the demo secret when none is set, and refuses a malformed one at startup, naming the source', async () => {
    const { lines } = await start(DEMO_WEBHOOK_SECRET);
    expect(lines.some((l) => l.includes(`signed with the demo secret ${DEMO_WEBHOOK_SECRET}`))).toBe(true);
    await expect(start('not-a-stripe-secret')).rejects.toThrow(/payments/);
  });
});
