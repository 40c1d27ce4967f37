/**
 * `/metrics` of a running GiftGenius gateway (`startGateway`, what `npm start` runs) after a scripted
 * scenario: exact counter values for the checkout's upstream call and operation, the webhook delivery and
 * its duplicate, and an AI gateway request with its tokens and cost.
 */
import { describe, expect, it } from 'vitest';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { connect, startBackends, startGiftGenius, tempDb, useCleanups } from './support.js';

const defer = useCleanups();

/** The samples of one metric as `labels → value`, labels in exposition order. */
function samples(text: string, name: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match?.[1] === name) found.set(match[2] ?? '', Number(match[3]));
  }
  return found;
}

describe('GiftGenius /metrics', () => {
  it('counts what happened: a checkout, a webhook and its duplicate, an AI request', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer) });
    const mcp = await connect(defer, gw.mcpUrl);

    const scrape = async (): Promise<string> => {
      const answer = await fetch(`${gw.url}/metrics`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return answer.text();
    };
    const order = await mcp.call('checkout', { product_id: 'p001', customer_id: 'cus_metrics' });
    expect(order.isError).toBeUndefined();
    // Before the webhook: its handler calls commerce too.
    const afterCheckout = await scrape();
    expect(samples(afterCheckout, 'breakwater_operation_outcomes_total')).toEqual(
      new Map([['{action="commerce.create_order",outcome="succeeded"}', 1]]),
    );
    expect(
      samples(afterCheckout, 'breakwater_upstream_request_duration_seconds_count').get(
        '{dependency="commerce",method="POST",status_class="2xx",outcome="success"}',
      ),
    ).toBe(1);
    const delivery = paymentDelivery(DEMO_WEBHOOK_SECRET, {
      id: 'evt_metrics_1',
      type: 'payment_intent.succeeded',
      orderId: order.structuredContent.order_id,
      customerId: 'cus_metrics',
      amountCents: 1_999,
    });
    for (let i = 0; i < 2; i++) {
      const answer = await fetch(`${gw.url}/webhooks/payments`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      expect(answer.status).toBe(200);
    }
    const completion = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/gift-ranker',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      }),
    });
    const usage = (
      (await completion.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }
    ).usage;

    const text = await scrape();
    expect(samples(text, 'breakwater_webhook_deliveries_total')).toEqual(
      new Map([
        ['{source="payments",result="accepted"}', 1],
        ['{source="payments",result="duplicate"}', 1],
        ['{source="payments",result="rejected"}', 0],
      ]),
    );
    const step = 'route="direct",step="direct",provider="sim",model="gift-ranker"';
    expect(samples(text, 'breakwater_ai_requests_total')).toEqual(new Map([[`{${step},outcome="ok"}`, 1]]));
    expect(samples(text, 'breakwater_ai_tokens_total').get(`{${step},kind="prompt"}`)).toBe(
      usage.prompt_tokens,
    );
    expect(samples(text, 'breakwater_ai_tokens_total').get(`{${step},kind="completion"}`)).toBe(
      usage.completion_tokens,
    );
    expect(samples(text, 'breakwater_ai_cost_usd_total').get(`{${step}}`)).toBeCloseTo(
      (usage.prompt_tokens * 2.5 + usage.completion_tokens * 10) / 1_000_000,
      12,
    );
  });
});
