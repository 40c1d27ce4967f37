/**
 * GiftGenius end to end, the synchronous tools: the real gateway (`startGateway`, SQLite file), the three
 * example services on free ports, and the SDK's `Client` over Streamable HTTP. Faults are switched on the
 * services while the gateway runs.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import type { Gateway } from '../../src/gateway/index.js';
import {
  connect,
  getJson,
  startBackends,
  startGiftGenius,
  tempDb,
  until,
  useCleanups,
  type Backends,
  type McpClient,
} from './support.js';

const defer = useCleanups();
let backends: Backends;
let gw: Gateway;
let mcp: McpClient;

const GIFT_LATE = 'The gift recommendation service did not answer in time; try again shortly.';
const CHECKOUT_UNKNOWN_SENTENCE =
  'No confirmation came back from the payment service, so the order may or may not have been placed; check its status by calling checkout again with the same operation_id before ordering again.';

beforeEach(async () => {
  backends = await startBackends(defer);
  // A short commerce breaker, so a test that opens it can wait for it to let a trial call through.
  gw = await startGiftGenius(defer, backends, {
    dbPath: tempDb(defer),
    // Short commerce timeouts and breaker, so the lost-checkout stories take a second, not ten.
    settings: { commerceOpenMs: 200, commerceTimeoutMs: 1_000 },
    gateway: { graceMs: 200 },
  });
  mcp = await connect(defer, gw.mcpUrl);
});

/** Every order the commerce service holds. */
async function orders(): Promise<Array<Record<string, unknown>>> {
  const { status, body } = await getJson(`${backends.services.commerce.url}/orders`);
  expect(status).toBe(200);
  return body.orders;
}

/** Waits until no breaker of the gateway is open (half-open lets a trial call through). */
async function untilNoBreakerOpen(): Promise<void> {
  await until(async () => {
    const { body } = await getJson(`${gw.url}/readyz`);
    return !body.open_breakers.some((b: { state: string }) => b.state === 'open');
  }, 'the breakers to leave the open state');
}

describe('GiftGenius tools over MCP', () => {
  it('lists the eight tools and suggest_gifts answers exactly what the catalog ranks', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_job',
      'checkout',
      'confirm_checkout',
      'get_job_status',
      'respond_to_job',
      'start_deep_analysis',
      'suggest_and_checkout',
      'suggest_gifts',
    ]);

    const request = { interests: ['coffee', 'travel'], budget_usd: 40, recipient: 'Sam', limit: 3 };
    const answer = await mcp.call('suggest_gifts', request);
    const expected = recommendGifts(loadCatalog(), request);
    expect(expected.map((g) => g.id)).toEqual(['p008', 'p009', 'p010']);
    expect(answer.isError).toBeUndefined();
    expect(answer.structuredContent).toEqual({ gifts: expected });
    expect(JSON.parse(answer.content[0]!.text!)).toEqual({ gifts: expected });
    expect(backends.giftProxy.requests()).toBe(1);

    // Analytics hears about it on the side, without holding the answer up.
    await until(
      async () => (await getJson(`${backends.services.analytics.url}/events`)).body.total === 1,
      'the analytics event',
    );
    const { body } = await getJson(`${backends.services.analytics.url}/events`);
    expect(body.events.map((e: { name: string; properties: unknown }) => [e.name, e.properties])).toEqual([
      ['gifts_suggested', { count: 3 }],
    ]);
  });

  it('suggest_and_checkout orders the best gift, one order at the shop', async () => {
    const answer = await mcp.call('suggest_and_checkout', {
      interests: ['tea'],
      budget_usd: 30,
      customer_id: 'cus_chain',
    });
    const [best] = recommendGifts(loadCatalog(), { interests: ['tea'], budget_usd: 30, limit: 1 });
    expect(answer.isError).toBeUndefined();
    expect(answer.structuredContent.gift).toEqual(best);
    expect(answer.structuredContent.order).toMatchObject({
      status: 'confirmed',
      product_id: best!.id,
      quantity: 1,
      customer_id: 'cus_chain',
      reconciled: false,
    });
    expect((await orders()).map((o) => o['order_id'])).toEqual([answer.structuredContent.order.order_id]);
  });

  it('a hanging gift service: timeouts, then circuit_open without a request, while checkout still works', async () => {
    const { services, giftProxy } = backends;
    services.gift.faults.set({ hang: true });
    const request = { interests: ['coffee'], budget_usd: 40 };
    const timeoutError = {
      code: 'gift_service_timeout',
      category: 'timeout',
      message: GIFT_LATE,
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    };

    // Call 1 runs beside a checkout: the gift service's hang does not hold commerce up (own bulkhead).
    const [first, order] = await Promise.all([
      mcp.call('suggest_gifts', request),
      mcp.call('checkout', { product_id: 'p001', customer_id: 'cus_iso' }),
    ]);
    expect(first.isError).toBe(true);
    expect(first.content).toEqual([{ type: 'text', text: GIFT_LATE }]);
    expect(first.structuredContent).toEqual({ error: timeoutError });
    expect(order.isError).toBeUndefined();
    expect(order.structuredContent).toMatchObject({ status: 'confirmed', product_id: 'p001' });
    // Each call is two attempts (one retry), each one a breaker failure.
    expect(giftProxy.requests()).toBe(2);

    const second = await mcp.call('suggest_gifts', request);
    expect(second.structuredContent).toEqual({ error: timeoutError });
    expect(giftProxy.requests()).toBe(4);

    // The fifth failure (this call's first attempt) opens the breaker; its retry is refused fast.
    const third = await mcp.call('suggest_gifts', request);
    expect(giftProxy.requests()).toBe(5);
    expect(third.structuredContent.error).toMatchObject({
      code: 'gift_service_unavailable',
      category: 'circuit_open',
      retryable: true,
      outcome: 'failed',
    });

    const started = performance.now();
    const fourth = await mcp.call('suggest_gifts', request);
    const elapsedMs = performance.now() - started;
    console.info(`e2e: circuit_open answered in ${elapsedMs.toFixed(1)} ms`);
    expect(giftProxy.requests()).toBe(5);
    const error = fourth.structuredContent.error;
    expect(error).toMatchObject({
      code: 'gift_service_unavailable',
      category: 'circuit_open',
      retryable: true,
    });
    expect(error.retry_after_ms).toBeGreaterThan(0);
    expect(error.retry_after_ms).toBeLessThanOrEqual(30_000);
    expect(error.message).toMatch(
      /^The gift recommendation service is temporarily unavailable after repeated failures; try again in about \d+ seconds\.$/,
    );

    // Readiness stays green and names the open breaker (one failing dependency is not an outage).
    const ready = await getJson(`${gw.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.open_breakers.map((b: { name: string; state: string }) => [b.name, b.state])).toEqual([
      ['gift', 'open'],
    ]);

    // Commerce has its own breaker and bulkhead: checkout still works with the gift breaker open.
    const later = await mcp.call('checkout', { product_id: 'p002', quantity: 2, customer_id: 'cus_iso' });
    expect(later.isError).toBeUndefined();
    expect((await orders()).map((o) => [o['order_id'], o['product_id'], o['quantity']])).toEqual([
      [order.structuredContent.order_id, 'p001', 1],
      [later.structuredContent.order_id, 'p002', 2],
    ]);
    // Every timed-out attempt was abandoned, none is left hanging at the gift service.
    await until(() => services.gift.faults.hanging() === 0, 'the hanging gift requests to end');
  });

  it('checkout when commerce commits and drops the answer: reconciled by its key, exactly one order', async () => {
    backends.services.commerce.faults.set({ commitThenDrop: true });
    const answer = await mcp.call('checkout', { product_id: 'p003', quantity: 2, customer_id: 'cus_drop' });
    backends.services.commerce.faults.clear();

    expect(answer.isError).toBeUndefined();
    const order = answer.structuredContent;
    expect(order).toMatchObject({
      status: 'confirmed',
      product_id: 'p003',
      quantity: 2,
      customer_id: 'cus_drop',
      reconciled: true,
    });
    expect(order.operation_id).toMatch(/^op_/);
    expect(order.idempotency_key).toBe(order.operation_id);
    expect((await orders()).map((o) => o['order_id'])).toEqual([order.order_id]);
  });

  it('checkout when commerce hangs: outcome unknown with an operation_id; resuming it places one order', async () => {
    const commerce = backends.services.commerce;
    commerce.faults.set({ hang: true });
    const args = { product_id: 'p004', quantity: 1, customer_id: 'cus_hang' };
    const lost = await mcp.call('checkout', args);
    expect(lost.isError).toBe(true);
    const error = lost.structuredContent.error;
    expect(error).toEqual({
      code: 'checkout_outcome_unknown',
      category: 'outcome_unknown',
      message: CHECKOUT_UNKNOWN_SENTENCE,
      retryable: false,
      retry_after_ms: null,
      outcome: 'unknown',
      operation_id: expect.stringMatching(/^op_/),
      reconcile: { method: 'GET', path: `/orders?idempotency_key=${error.operation_id}` },
      transport_observation: 'timeout',
    });
    // The ledger holds it as unknown, with the failed lookup as evidence.
    const held = await gw.store.operations.get(error.operation_id);
    expect([held?.state, held?.attempts, (held?.evidence as { last_lookup?: string }).last_lookup]).toEqual([
      'unknown',
      1,
      'lookup failed: timeout',
    ]);

    // Only once nothing hangs any more is the fault cleared, so no abandoned request is handled late.
    await until(() => commerce.faults.hanging() === 0, 'the hanging commerce requests to end');
    commerce.faults.clear();
    expect(await orders()).toEqual([]);
    await untilNoBreakerOpen();

    const resumed = await mcp.call('checkout', { ...args, operation_id: error.operation_id });
    expect(resumed.isError).toBeUndefined();
    expect(resumed.structuredContent).toMatchObject({
      ...args,
      status: 'confirmed',
      operation_id: error.operation_id,
      idempotency_key: error.operation_id,
    });
    expect((await orders()).map((o) => o['order_id'])).toEqual([resumed.structuredContent.order_id]);
  });

  it('a late twin of a lost checkout places the order: the resume finds it by lookup, one order', async () => {
    const commerce = backends.services.commerce;
    commerce.faults.set({ hang: true });
    const body = { product_id: 'p005', quantity: 1, customer_id: 'cus_race' };
    const lost = await mcp.call('checkout', body);
    const key = lost.structuredContent.error.operation_id as string;
    await until(() => commerce.faults.hanging() === 0, 'the abandoned requests to end');
    // The first request's twin (delayed in the network) reaches the shop late and holds the key there.
    const twin = fetch(`${commerce.url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    twin.catch(() => undefined); // it fails only when the test does: the services close under it
    await until(() => commerce.faults.hanging() === 1, 'the twin to hang');

    commerce.faults.clear(); // the twin is handled now: the order is placed under the operation's key
    expect((await twin).status).toBe(201);
    await untilNoBreakerOpen();
    const resumed = await mcp.call('checkout', { ...body, operation_id: key });
    expect(resumed.structuredContent).toMatchObject({
      ...body,
      status: 'confirmed',
      operation_id: key,
      reconciled: true,
    });
    expect((await orders()).map((o) => o['order_id'])).toEqual([resumed.structuredContent.order_id]);
    const held = await gw.store.operations.get(key);
    expect([held?.state, held?.attempts, held?.observation]).toEqual(['succeeded', 1, 'lookup_succeeded']);
  });
});
