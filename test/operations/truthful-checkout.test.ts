/**
 * GiftGenius's checkout as the model hears it, one layer below MCP: the real commerce upstream (GiftGenius's
 * own `createUpstreams`, its codes and sentences) against a real local HTTP server, the operation ledger on
 * SQLite, the `commerce.create_order` action, and `operationError` → `toolErrorInfo` as `checkout` answers.
 * Each fault the commerce service can answer is told for what it is: a 503/429 is a failure with the
 * service's wait (not `unknown`), an open breaker says its remaining time, and only a write that may have
 * happened is `unknown`. Time is the fake clock's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOrderAction, type OrderRequest } from '../../examples/giftgenius/checkout.js';
import {
  CHECKOUT_UNKNOWN,
  createUpstreams,
  type GiftGeniusUpstreams,
} from '../../examples/giftgenius/upstreams.js';
import { FakeClock } from '../../src/entries/testing.js';
import { OperationLedger, operationError } from '../../src/entries/operations.js';
import { toolErrorInfo } from '../../src/mcp/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { TestServer, json, reset, type Behaviour } from '../../src/upstream/test-support.js';

let server: TestServer;
let clock: FakeClock;
let store: Store;
let upstreams: GiftGeniusUpstreams;
let ledger: OperationLedger;
let createOrder: ReturnType<typeof createOrderAction>;

const ORDER: OrderRequest = { product_id: 'p001', quantity: 1, customer_id: 'cus_1' };

/** `/orders` answers POST with `post` and GET (the ledger's lookup) with `get`. */
function orders(post: Behaviour, get: Behaviour = json(404, { title: 'no order' })): void {
  server.on('/orders', (req, res, s) => (req.method === 'POST' ? post : get)(req, res, s));
}

/** What `checkout` answers the model for the checkout `args` (`operation_id` resumes one). */
async function checkout(args: { operation_id?: string } = {}) {
  const result = await ledger.execute(createOrder, ORDER, {
    operationId: args.operation_id,
  });
  if (result.outcome === 'succeeded') return { result, told: undefined };
  return { result, told: toolErrorInfo(operationError(result, { unknown: CHECKOUT_UNKNOWN })) };
}

function methods(): string[] {
  return server.seen.map((s) => s.method);
}

beforeEach(async () => {
  server = await TestServer.start();
  clock = new FakeClock(Date.UTC(2026, 10, 30, 12));
  store = await openStore({ url: ':memory:', clock });
  upstreams = createUpstreams({
    giftUrl: server.url,
    commerceUrl: server.url,
    analyticsUrl: server.url,
    clock,
  });
  ledger = new OperationLedger({ store: store.operations, clock, log: { warn: () => undefined } });
  createOrder = createOrderAction(upstreams.commerce);
});

afterEach(async () => {
  await Promise.all(Object.values(upstreams).map((u) => u.close()));
  await server.close();
  await store.close();
});

describe('checkout: what the model is told, by what commerce answered', () => {
  it.each([
    [503, '20', 20_000, 'The payment service is busy right now; try again in about 20 seconds.'],
    [429, '7', 7_000, 'The payment service is busy right now; try again in about 7 seconds.'],
  ])(
    'HTTP %i with Retry-After %s: failed with the service wait, never unknown; no lookup',
    async (status, after, ms, sentence) => {
      orders(json(status, { title: 'busy' }, { 'retry-after': after }));
      const { result, told } = await checkout();
      expect(told).toEqual({
        code: 'payment_service_busy',
        category: 'upstream_unavailable',
        message: sentence,
        retryable: true,
        retry_after_ms: ms,
        outcome: 'failed',
        operation_id: result.operation_id,
        reconcile: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
        transport_observation: `http_${status}`,
      });
      expect([result.state, result.retry_allowed, result.attempts]).toEqual(['pending', true, 1]);
      expect(methods()).toEqual(['POST']);

      // After the wait, resuming it sends again under the same key: one order.
      clock.tick(ms);
      orders(json(201, { order_id: 'ord_1', status: 'confirmed', amount_usd: 12, ...ORDER }));
      const resumed = await checkout({ operation_id: result.operation_id });
      expect([resumed.result.outcome, resumed.result.attempts]).toEqual(['succeeded', 2]);
      expect(server.seen.map((s) => s.headers['idempotency-key'])).toEqual([
        result.operation_id,
        result.operation_id,
      ]);
    },
  );

  it("an open commerce breaker: circuit_open with the breaker's remaining open time, nothing sent", async () => {
    orders(json(503, { title: 'busy' }));
    // Three counted failures open commerce's breaker (3 consecutive, 20 s open).
    for (let i = 0; i < 3; i++) expect((await checkout()).told?.category).toBe('upstream_unavailable');
    clock.tick(5_000);
    const { result, told } = await checkout();
    expect(told).toEqual({
      code: 'payment_service_unavailable',
      category: 'circuit_open',
      message:
        'The payment service is temporarily unavailable after repeated failures; try again in about 15 seconds.',
      retryable: true,
      retry_after_ms: 15_000,
      outcome: 'failed',
      operation_id: result.operation_id,
      reconcile: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
      transport_observation: 'circuit_open',
    });
    expect([result.state, result.retry_allowed]).toEqual(['pending', true]);
    expect(methods()).toEqual(['POST', 'POST', 'POST']);
  });

  it('a 503 without Retry-After: busy, and no wait is invented', async () => {
    orders(json(503, {}));
    const { told } = await checkout();
    expect([told?.code, told?.message, told?.retry_after_ms, told?.outcome]).toEqual([
      'payment_service_busy',
      'The payment service is busy right now; try again shortly.',
      null,
      'failed',
    ]);
  });

  it('a 500 to the order may have placed it: unknown, looked up, resent only after "not found"', async () => {
    orders(json(500, {}));
    const { result, told } = await checkout();
    // Each lookup found nothing, so it was resent (allowed) and answered 500 again; the third 500 opened the
    // breaker, which refused the last lookup: still unknown after 3 attempts.
    expect(methods()).toEqual(['POST', 'GET', 'POST', 'GET', 'POST']);
    expect([result.state, result.attempts]).toEqual(['unknown', 3]);
    expect([result.outcome, told?.code, told?.message, told?.retry_after_ms]).toEqual([
      'unknown',
      'checkout_outcome_unknown',
      CHECKOUT_UNKNOWN.sentence,
      null,
    ]);
  });

  it('the connection reset after the order was written: unknown with the lookup; resuming finds one order', async () => {
    // The lookup itself is refused (422): the ledger cannot settle it and keeps it unknown.
    orders(reset, json(422, { detail: 'lookups are off' }));
    const { result, told } = await checkout();
    expect(told).toEqual({
      code: 'checkout_outcome_unknown',
      category: 'outcome_unknown',
      message: CHECKOUT_UNKNOWN.sentence,
      retryable: false,
      retry_after_ms: null,
      outcome: 'unknown',
      operation_id: result.operation_id,
      reconcile: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
      transport_observation: told?.transport_observation,
    });
    expect(told?.transport_observation).toMatch(/^(?:UND_ERR_SOCKET|ECONNRESET)$/);
    expect(told?.message).not.toMatch(/in time/);
    expect(methods()).toEqual(['POST', 'GET']);

    const placed = { order_id: 'ord_7', status: 'confirmed', amount_usd: 12, ...ORDER };
    orders(json(201, placed), json(200, placed));
    const resumed = await checkout({ operation_id: result.operation_id });
    expect([resumed.result.outcome, resumed.result.transport_observation]).toEqual([
      'succeeded',
      'lookup_succeeded',
    ]);
    expect(methods()).toEqual(['POST', 'GET', 'GET']);
  });
});
