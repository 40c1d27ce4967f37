/**
 * GiftGenius's confirmation job (examples/giftgenius/confirm.ts) on a real jobs runtime, operation ledger and
 * SQLite store with a fake clock, and a scripted commerce action: a checkout left unknown past its recovery
 * deadline is settled with the customer's answer to "place it again?".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CREATE_ORDER, type Order, type OrderRequest } from '../../examples/giftgenius/checkout.js';
import {
  CONFIRM_CHECKOUT_JOB,
  PLACE_AGAIN,
  defineCheckoutConfirm,
} from '../../examples/giftgenius/confirm.js';
import { BreakwaterError } from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';
import { createJobs, type Jobs, type Store } from '../../src/entries/jobs.js';
import { OperationLedger, type LookupResult, type OperationAction } from '../../src/entries/operations.js';
import { openSqliteStore } from '../../src/entries/sqlite.js';

const REQUEST: OrderRequest = { product_id: 'p001', quantity: 1, customer_id: 'cus_ada' };
const ADA = 'key:ada';

let store: Store;
let jobs: Jobs;
let clock: FakeClock;

afterEach(async () => {
  await jobs?.stop({ graceMs: 0 });
  await store?.close();
});

/** Commerce, scripted: each send and lookup takes the next answer; `sent` lists the idempotency keys sent. */
function commerce() {
  const sent: string[] = [];
  const sends: (() => Promise<Order>)[] = [];
  const lookups: (() => Promise<LookupResult<Order>>)[] = [];
  const order = (key: string): Order => ({
    order_id: `ord_${key.slice(-4)}`,
    status: 'placed',
    amount_usd: 19.99,
    product_id: 'p001',
    quantity: 1,
  });
  const action: OperationAction<OrderRequest, Order> = {
    name: CREATE_ORDER,
    target: 'POST commerce /orders',
    retryAllowed: true,
    recoveryMs: 60_000,
    reconcile: (id) => ({ method: 'GET', path: `/orders?idempotency_key=${id}` }),
    send: async ({ operationId }) => {
      sent.push(operationId);
      const step = sends.shift();
      if (step === undefined) return order(operationId);
      return step();
    },
    lookup: async () => {
      const step = lookups.shift();
      if (step === undefined) throw new Error('unexpected lookup');
      return step();
    },
  };
  return { action, sent, sends, lookups, order };
}

const cutOff = async (): Promise<never> => {
  throw new BreakwaterError('outcome_unknown', { kind: 'transient', outcome: 'unknown' });
};
const down = async (): Promise<never> => {
  throw new BreakwaterError('upstream_unavailable', { kind: 'transient' });
};

/** A checkout of ADA cut off in flight, then left past its recovery deadline: the ledger cannot tell. */
async function uncertainCheckout() {
  clock = new FakeClock();
  store = await openSqliteStore({ path: ':memory:', clock });
  jobs = createJobs({ store, clock, owner: 'w1' });
  const shop = commerce();
  const operations = new OperationLedger({ store: store.operations, clock, actions: [shop.action] });
  defineCheckoutConfirm(jobs, store, operations, shop.action);
  shop.sends.push(cutOff);
  const first = await operations.execute(shop.action, REQUEST, { owner: ADA });
  expect(first.outcome).toBe('unknown');
  await clock.tickAsync(60_000);
  jobs.start();
  const id = await jobs.enqueue(CONFIRM_CHECKOUT_JOB, { operation_id: first.operation_id }, { owner: ADA });
  return { shop, operationId: first.operation_id, id };
}

async function until(id: string, status: string): Promise<void> {
  for (let i = 0; i < 100 && (await jobs.get(id))?.status !== status; i++) await clock.tickAsync(0);
  expect((await jobs.get(id))?.status).toBe(status);
}

describe('GiftGenius: confirming a checkout whose outcome is unknown', () => {
  it('asks; yes and a lookup that confirms no order: places it again under a new idempotency key', async () => {
    const { shop, operationId, id } = await uncertainCheckout();
    shop.lookups.push(down);
    await until(id, 'input_required');
    expect(await jobs.inputRequest(id)).toMatchObject({ key: 'place-again', message: PLACE_AGAIN.message });

    shop.lookups.push(async () => ({ state: 'not_found' }));
    await jobs.respond(id, 'place-again', { action: 'accept', content: { place_again: true } });
    await until(id, 'completed');
    const result = (await jobs.get(id))!.result as { operation_id: string; order: Order };
    expect(result).toMatchObject({ status: 'placed_again', previous_operation_id: operationId });
    expect(result.operation_id).not.toBe(operationId);
    // The first send under the old key (cut off), then one under the new operation's key, never a third.
    expect(shop.sent).toEqual([operationId, result.operation_id]);
    expect(result.order).toEqual(shop.order(result.operation_id));
    expect((await store.operations.get(operationId))!.state).toBe('failed');
  });

  it('asks; declined: ends without placing anything', async () => {
    const { shop, operationId, id } = await uncertainCheckout();
    shop.lookups.push(down, down);
    await until(id, 'input_required');
    await jobs.respond(id, 'place-again', { action: 'decline' });
    await until(id, 'completed');
    expect((await jobs.get(id))!.result).toEqual({
      status: 'not_placed',
      operation_id: operationId,
      reason: 'declined',
    });
    expect(shop.sent).toEqual([operationId]);
  });

  it('yes, but the order turns out to exist: nothing is placed again', async () => {
    const { shop, operationId, id } = await uncertainCheckout();
    shop.lookups.push(down, down, async () => ({ state: 'succeeded', result: shop.order(operationId) }));
    await until(id, 'input_required');
    await jobs.respond(id, 'place-again', { action: 'accept', content: { place_again: true } });
    await until(id, 'completed');
    expect((await jobs.get(id))!.result).toEqual({
      status: 'placed',
      operation_id: operationId,
      order: shop.order(operationId),
    });
    expect(shop.sent).toEqual([operationId]);
  });

  it('a lookup that finds the order settles it without asking', async () => {
    const { shop, operationId, id } = await uncertainCheckout();
    shop.lookups.push(async () => ({ state: 'succeeded', result: shop.order(operationId) }));
    await until(id, 'completed');
    expect((await jobs.get(id))!.result).toMatchObject({ status: 'placed', operation_id: operationId });
    expect(await jobs.inputRequest(id)).toBeNull();
  });

  it("another customer's confirmation of the checkout fails as not found", async () => {
    const { operationId } = await uncertainCheckout();
    const id = await jobs.enqueue(CONFIRM_CHECKOUT_JOB, { operation_id: operationId }, { owner: 'key:bob' });
    await until(id, 'failed');
    expect((await jobs.get(id))!.error).toMatchObject({
      code: 'not_found',
      message: `No checkout has the operation id ${operationId}.`,
    });
  });
});
