import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCommerceService } from './commerce.js';
import type { ServiceHandle } from './service.js';
import { call, until } from './testing.js';

let commerce: ServiceHandle;

beforeEach(async () => {
  commerce = await startCommerceService();
});

afterEach(async () => {
  await commerce.close();
});

const ORDER = { product_id: 'p001', quantity: 3, customer_id: 'cus_1' };
const order = (body: unknown, key?: string) =>
  call('POST', `${commerce.url}/orders`, body, key === undefined ? {} : { 'idempotency-key': key });
const byKey = (key: string, path = '/orders') =>
  call('GET', `${commerce.url}${path}?idempotency_key=${encodeURIComponent(key)}`);
const countOrders = async () => (await call('GET', `${commerce.url}/orders`)).body.orders.length as number;

describe('POST /orders', () => {
  it('confirms an order priced from the catalog', async () => {
    const answer = await order(ORDER, 'k1');
    expect(answer.status).toBe(201);
    expect(answer.headers.get('location')).toBe('/orders/ord_000001');
    expect(answer.headers.get('idempotent-replayed')).toBeNull();
    const { created_at: createdAt, ...rest } = answer.body;
    expect(rest).toEqual({
      order_id: 'ord_000001',
      status: 'confirmed',
      product_id: 'p001',
      product_name: 'Classic Pour-Over Coffee Kit',
      quantity: 3,
      unit_price_usd: 30.99,
      amount_usd: 92.97,
      currency: 'usd',
      customer_id: 'cus_1',
      idempotency_key: 'k1',
    });
    expect(Number.isNaN(Date.parse(createdAt))).toBe(false);
    expect((await call('GET', `${commerce.url}/orders/ord_000001`)).body).toEqual(answer.body);
  });

  it('replays the stored answer for the same key and body, in any key order, without a second order', async () => {
    const first = await order(ORDER, 'k1');
    const again = await order({ customer_id: 'cus_1', quantity: 3, product_id: 'p001' }, 'k1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe('/orders/ord_000001');
    expect(again.body).toEqual(first.body);
    expect(await countOrders()).toBe(1);
  });

  it('answers 422 for the same key with a different body, and for the key on another endpoint', async () => {
    await order(ORDER, 'k1');
    const changed = await order({ ...ORDER, quantity: 4 }, 'k1');
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({
      type: 'https://giftgenius.example/problems/idempotency_key_mismatch',
      title: 'Idempotency key reused with a different request',
      status: 422,
      code: 'idempotency_key_mismatch',
      detail:
        'This Idempotency-Key was already used with a different request; use a new key for a new request.',
      idempotency_key: 'k1',
    });
    const elsewhere = await call(
      'POST',
      `${commerce.url}/payment_intents`,
      { amount_usd: 5, customer_id: 'cus_1' },
      { 'idempotency-key': 'k1' },
    );
    expect(elsewhere.status).toBe(422);
    expect(await countOrders()).toBe(1);
  });

  it('answers 409 while a request with the same key is still running, then the first one completes', async () => {
    commerce.faults.set({ hang: true });
    const first = order(ORDER, 'k1');
    await until(() => commerce.faults.hanging() === 1);
    const second = await order(ORDER, 'k1');
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('idempotency_in_progress');
    commerce.faults.clear();
    expect((await first).status).toBe(201);
    expect((await byKey('k1')).body.order_id).toBe('ord_000001');
  });

  it('answers 400 idempotency_key_missing without the header and 400 for a malformed key', async () => {
    const missing = await order(ORDER);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      type: 'https://giftgenius.example/problems/idempotency_key_missing',
      title: 'Idempotency key missing',
      status: 400,
      code: 'idempotency_key_missing',
      detail: 'This request needs an Idempotency-Key header.',
    });
    const spaced = await order(ORDER, 'has space');
    expect([spaced.status, spaced.body.code]).toEqual([400, 'invalid_request']);
    expect(await countOrders()).toBe(0);
  });

  it('does not keep a key whose request was invalid, so a corrected request can use it', async () => {
    const bad = await order({ ...ORDER, quantity: 0 }, 'k1');
    expect([bad.status, bad.body.detail]).toEqual([400, 'quantity must be an integer from 1 to 100.']);
    const unknown = await order({ ...ORDER, product_id: 'p999' }, 'k1');
    expect([unknown.status, unknown.body.code]).toEqual([400, 'product_not_found']);
    const noCustomer = await order({ product_id: 'p001', quantity: 1 }, 'k1');
    expect(noCustomer.body.detail).toBe('customer_id is required and must be a non-empty string.');
    expect((await order(ORDER, 'k1')).status).toBe(201);
  });

  it('does not keep a key whose request met an injected 503, so a retry with it goes through', async () => {
    commerce.faults.set({ errorRate: 1 });
    const refused = await order(ORDER, 'k1');
    expect([refused.status, refused.body.code]).toEqual([503, 'service_unavailable']);
    commerce.faults.clear();
    const retried = await order(ORDER, 'k1');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it.each([
    [500, 'internal_error', 0],
    [503, 'service_unavailable', 45],
    [429, 'rate_limited', 50],
  ])(
    'stores no order and keeps the key free when it answers an injected %i',
    async (status, code, retryAfterS) => {
      commerce.faults.set({ status, retryAfterS });
      const refused = await order(ORDER, 'k1');
      expect([refused.status, refused.body.code, refused.headers.get('retry-after')]).toEqual([
        status,
        code,
        retryAfterS === 0 ? null : String(retryAfterS),
      ]);
      commerce.faults.clear();
      expect(await countOrders()).toBe(0);
      const retried = await order(ORDER, 'k1');
      expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([201, null]);
      expect(await countOrders()).toBe(1);
    },
  );
});

describe('status lookup by idempotency key', () => {
  it('answers the order accepted under a key, and 404 when nothing was', async () => {
    const created = await order(ORDER, 'k1');
    const found = await byKey('k1');
    expect(found.status).toBe(200);
    expect(found.body).toEqual(created.body);
    const none = await byKey('k2');
    expect(none.status).toBe(404);
    expect(none.body).toEqual({
      type: 'https://giftgenius.example/problems/not_found',
      title: 'Not found',
      status: 404,
      code: 'not_found',
      detail: 'No order was accepted under this idempotency key.',
      idempotency_key: 'k2',
    });
    expect((await byKey('k1', '/payment_intents')).status).toBe(404);
  });

  it('answers 404 order_not_found for an unknown order id', async () => {
    const answer = await call('GET', `${commerce.url}/orders/ord_999999`);
    expect([answer.status, answer.body.code]).toEqual([404, 'order_not_found']);
  });

  it('finds an order whose answer was dropped after the commit (commitThenDrop)', async () => {
    commerce.faults.set({ commitThenDrop: true });
    await expect(order(ORDER, 'k1')).rejects.toThrow(TypeError);
    // Reads still answer while the fault is on: this is how a caller reconciles an unknown outcome.
    const found = await byKey('k1');
    expect(found.status).toBe(200);
    expect(found.body.order_id).toBe('ord_000001');
    commerce.faults.clear();
    const replayed = await order(ORDER, 'k1');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(found.body);
    expect(await countOrders()).toBe(1);
  });

  it('commits and drops the answer while its status lookups fail (statusOn: reads)', async () => {
    commerce.faults.set({ commitThenDrop: true, status: 503, statusOn: 'reads' });
    await expect(order(ORDER, 'k1')).rejects.toThrow(TypeError);
    const lookup = await byKey('k1');
    expect([lookup.status, lookup.body.code]).toEqual([503, 'service_unavailable']);
    expect((await call('GET', `${commerce.url}/orders/ord_000001`)).status).toBe(503);
    commerce.faults.clear();
    // The write did happen: once lookups work again they find it.
    expect((await byKey('k1')).body).toMatchObject({ order_id: 'ord_000001', idempotency_key: 'k1' });
    expect(await countOrders()).toBe(1);
  });
});

describe('POST /payment_intents', () => {
  it('creates a payment intent for an order and replays it for the same key', async () => {
    await order(ORDER, 'k-order');
    const body = { amount_usd: 92.97, customer_id: 'cus_1', order_id: 'ord_000001' };
    const headers = { 'idempotency-key': 'k-pay' };
    const created = await call('POST', `${commerce.url}/payment_intents`, body, headers);
    expect(created.status).toBe(201);
    const { created_at: _createdAt, ...rest } = created.body;
    expect(rest).toEqual({
      payment_intent_id: 'pi_000001',
      status: 'succeeded',
      amount_usd: 92.97,
      currency: 'usd',
      customer_id: 'cus_1',
      order_id: 'ord_000001',
      idempotency_key: 'k-pay',
    });
    const again = await call('POST', `${commerce.url}/payment_intents`, body, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(created.body);
    expect((await byKey('k-pay', '/payment_intents')).body).toEqual(created.body);
    expect((await call('GET', `${commerce.url}/payment_intents/pi_000001`)).body).toEqual(created.body);
    expect((await call('GET', `${commerce.url}/payment_intents`)).body.payment_intents).toHaveLength(1);
  });

  it('rejects an unknown order, an amount with fractions of a cent, and a missing key', async () => {
    const url = `${commerce.url}/payment_intents`;
    const unknown = await call(
      'POST',
      url,
      { amount_usd: 5, customer_id: 'c', order_id: 'ord_9' },
      { 'idempotency-key': 'a' },
    );
    expect([unknown.status, unknown.body.code]).toEqual([400, 'order_not_found']);
    const fraction = await call(
      'POST',
      url,
      { amount_usd: 5.001, customer_id: 'c' },
      { 'idempotency-key': 'b' },
    );
    expect(fraction.body.detail).toBe('amount_usd must have at most two decimals (whole cents).');
    const keyless = await call('POST', url, { amount_usd: 5, customer_id: 'c' });
    expect(keyless.body.code).toBe('idempotency_key_missing');
  });
});
