/**
 * The lost-response proof (issue: "Idempotency keys, operations with an honest unknown outcome"): 1,000
 * checkouts through the operation ledger to the real commerce service, behind a proxy that lets the order
 * commit and then drops the response for about 20% of them, and drops about 5% of the requests before they
 * reach commerce (resends too). Afterwards commerce holds exactly one order per succeeded operation and none
 * for the others, every operation is settled by its answer or a lookup (or escalated), and no request was
 * ever resent without a lookup in between.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOrderAction, type OrderRequest } from '../../examples/giftgenius/checkout.js';
import { startCommerceService, type ServiceHandle } from '../../examples/giftgenius/services/index.js';
import { FakeClock } from '../../src/entries/testing.js';
import { OperationLedger, type OperationResult } from '../../src/entries/operations.js';
import { createUpstream, type Upstream } from '../../src/entries/upstream.js';
import { openStore, type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { startLossyProxy, type LossyProxy, type ProxyFate } from './lossy-proxy.js';

const CHECKOUTS = 1_000;
const CONCURRENCY = 16;

/** A stable share in [0, 1) of a string: the proxy's fate for a key does not depend on timing. */
function share(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
}

let commerce: ServiceHandle;
let proxy: LossyProxy;
let upstream: Upstream;
let store: Store;

beforeEach(async () => {
  commerce = await startCommerceService({ port: 0 });
  const posts = new Map<string, number>();
  proxy = await startLossyProxy(commerce.url, (method, key): ProxyFate => {
    if (method !== 'POST' || key === undefined) return 'pass';
    const n = (posts.get(key) ?? 0) + 1;
    posts.set(key, n);
    const draw = share(`${key}#${n}`);
    if (n === 1) return draw < 0.2 ? 'drop_response' : draw < 0.25 ? 'drop_request' : 'pass';
    return draw < 0.05 ? 'drop_request' : 'pass';
  });
  upstream = createUpstream({
    name: 'commerce',
    baseUrl: proxy.url,
    timeoutMs: 5_000,
    bulkhead: { maxConcurrent: 32, maxQueue: 64 },
    // A lossy network is the point here: a breaker opening would turn the story into "not sent".
    breaker: false,
  });
});

afterEach(async () => {
  await upstream.close();
  await proxy.close();
  await commerce.close();
  await store?.close();
});

async function ordersByKey(): Promise<Map<string, string[]>> {
  const response = await fetch(`${commerce.url}/orders`);
  const { orders } = (await response.json()) as { orders: { order_id: string; idempotency_key: string }[] };
  const byKey = new Map<string, string[]>();
  for (const order of orders)
    byKey.set(order.idempotency_key, [...(byKey.get(order.idempotency_key) ?? []), order.order_id]);
  return byKey;
}

/**
 * The proof on one backend: `open` gives the ledger's store (its clock is the fake one, so deadlines can be
 * passed without waiting; the network timeouts stay real).
 */
async function proveLostResponses(open: (clock: FakeClock) => Promise<Store>): Promise<void> {
  const clock = new FakeClock(Date.UTC(2026, 10, 30, 12));
  store = await open(clock);
  const ledger = new OperationLedger({ store: store.operations, clock });
  const action = createOrderAction(upstream);

  const results: OperationResult[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CHECKOUTS) {
        const i = next++;
        const request: OrderRequest = { product_id: 'p001', quantity: 1 + (i % 3), customer_id: `cus_${i}` };
        results.push(await ledger.execute(action, request));
      }
    }),
  );
  expect(results).toHaveLength(CHECKOUTS);

  // What is still open is looked at by recovery passes (lookups; resends where allowed), then escalated.
  clock.tick(31_000);
  await ledger.recover(CHECKOUTS);
  clock.tick(10 * 60_000);
  await ledger.recover(CHECKOUTS);

  const operations = await store.operations.list({ limit: CHECKOUTS });
  expect(operations).toHaveLength(CHECKOUTS);
  const orders = await ordersByKey();
  const states: Record<string, number> = {};
  for (const op of operations) {
    states[op.state] = (states[op.state] ?? 0) + 1;
    const placed = orders.get(op.id) ?? [];
    if (op.state === 'succeeded') {
      // Exactly one order under the operation's key, and it is the one the ledger recorded.
      expect(placed).toEqual([(op.result as { order_id: string }).order_id]);
    } else {
      // Failed (a lookup proved nothing was accepted) or escalated: no order at the shop.
      expect(['failed', 'needs_attention']).toContain(op.state);
      expect(placed).toEqual([]);
    }
    // Never resent blindly: between two POSTs of one key there is always a lookup.
    const seen = proxy.log.get(op.id) ?? [];
    const methods = seen.map((entry) => entry.split(':')[0]).join(' ');
    expect(methods).not.toMatch(/POST POST/);
    expect(op.attempts).toBe(seen.filter((entry) => entry.startsWith('POST')).length);
  }
  const total = [...orders.values()].reduce((n, ids) => n + ids.length, 0);
  expect(total).toBe(states['succeeded']);
  // The proxy really lost answers and requests, and the ledger settled them by lookups.
  const fates = [...proxy.log.values()].flat();
  const dropped = fates.filter((f) => f === 'POST:drop_response').length;
  const lostRequests = fates.filter((f) => f === 'POST:drop_request').length;
  console.info(
    `lost-response proof: states ${JSON.stringify(states)}, responses dropped ${dropped}, requests dropped ${lostRequests}`,
  );
  expect(dropped).toBeGreaterThan(100);
  expect(lostRequests).toBeGreaterThan(20);
  const reconciled = operations.filter((op) => op.observation === 'lookup_succeeded').length;
  expect(reconciled).toBe(dropped);
}

/** 1,000 checkouts over real sockets: a bound for a loaded machine, not a speed check. */
const LOADED_MACHINE_MS = 60_000;

describe('lost responses: 1,000 checkouts through a lossy proxy', () => {
  it(
    'SQLite: one order per succeeded operation, none resent without a lookup, all settled or escalated',
    async () => {
      await proveLostResponses((clock) => openStore({ url: ':memory:', clock }));
    },
    LOADED_MACHINE_MS,
  );
});

describePostgres('lost responses on PostgreSQL')(
  'lost responses: 1,000 checkouts through a lossy proxy',
  () => {
    const schemas = testSchemas('bw_lost');
    it(
      'PostgreSQL: one order per succeeded operation, none resent without a lookup, all settled or escalated',
      async () => {
        const schema = await schemas.create();
        await proveLostResponses((clock) => openStore({ url: TEST_DATABASE_URL, schema, clock }));
      },
      LOADED_MACHINE_MS,
    );
  },
);
