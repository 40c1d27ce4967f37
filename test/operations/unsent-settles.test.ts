/**
 * An operation the ledger never sent settles, and then ages out. GiftGenius's checkout action against the
 * real commerce service: two checkouts answered 503 open the commerce breaker, a third is refused by it
 * before anything is written, and nobody comes back for any of them. The recovery pass leaves them `pending`
 * until their recovery deadline, settles them `failed` there (`not_processed` for the two the service
 * answered, `not_sent` for the refused one), and a prune removes them once their retention has passed after
 * that; never before they settled. On SQLite and on PostgreSQL, with a fake clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createOrderAction, type OrderRequest } from '../../examples/giftgenius/checkout.js';
import { startCommerceService, type ServiceHandle } from '../../examples/giftgenius/services/index.js';
import { FakeClock, OperationLedger, createUpstream, type Upstream } from '../../src/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';

const T0 = Date.UTC(2026, 10, 30, 12);
const MINUTE = 60_000;
/** `createOrderAction`'s `recoveryMs`. */
const RECOVERY_MS = 10 * MINUTE;
const RETENTION = { operationsMs: 60 * MINUTE };

const opened: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const part of opened.splice(0).reverse()) await part.close().catch(() => undefined);
});

/** Opens the parts for one backend: the store on the fake clock, commerce, and its upstream with a breaker. */
async function parts(
  open: (clock: FakeClock) => Promise<Store>,
): Promise<{ clock: FakeClock; store: Store; commerce: ServiceHandle; upstream: Upstream }> {
  const clock = new FakeClock(T0);
  const store = await open(clock);
  opened.push(store);
  const commerce = await startCommerceService({ port: 0 });
  opened.push(commerce);
  const upstream = createUpstream({
    name: 'commerce',
    baseUrl: commerce.url,
    // The fake clock never fires this timeout: the service answers at once.
    timeoutMs: 5_000,
    clock,
    breaker: { consecutiveFailures: 2, openMs: 30_000 },
  });
  opened.push(upstream);
  return { clock, store, commerce, upstream };
}

async function proveUnsentSettles(open: (clock: FakeClock) => Promise<Store>): Promise<void> {
  const { clock, store, commerce, upstream } = await parts(open);
  const ledger = new OperationLedger({ store: store.operations, clock });
  const action = createOrderAction(upstream);
  ledger.define(action);
  const checkout = (customer: string) => {
    const request: OrderRequest = { product_id: 'p001', quantity: 1, customer_id: customer };
    return ledger.execute(action, request);
  };

  // Commerce answers 503 to everything: two checkouts are "not processed", and the breaker opens.
  commerce.faults.set({ status: 503 });
  const answered = [await checkout('cus_1'), await checkout('cus_2')];
  expect(answered.map((r) => [r.outcome, r.state, r.transport_observation])).toEqual([
    ['failed', 'pending', 'http_503'],
    ['failed', 'pending', 'http_503'],
  ]);
  expect(upstream.breaker?.state().state).toBe('open');
  // The tool answers `failed` for the third: the breaker refused it, nothing was written.
  const refused = await checkout('cus_3');
  expect(refused).toMatchObject({
    outcome: 'failed',
    state: 'pending',
    transport_observation: 'circuit_open',
    retry_allowed: true,
    attempts: 1,
    error: { code: 'circuit_open' },
  });
  commerce.faults.clear();
  const ids = [...answered, refused].map((r) => r.operation_id);
  const states = async () =>
    Promise.all(
      ids.map(async (id) => {
        const op = await store.operations.get(id);
        return op === undefined ? 'gone' : `${op.state}${op.error === null ? '' : ` ${op.error.code}`}`;
      }),
    );

  // Before the deadline nobody came back: the recovery pass neither resends nor settles, and a prune keeps
  // unsettled operations whatever their age.
  clock.tick(RECOVERY_MS - 1);
  expect(await ledger.recover()).toBe(0);
  expect((await store.retention.prune({ retention: { operationsMs: 1 } })).removed.operations).toBe(0);
  expect(await states()).toEqual([
    'pending upstream_unavailable',
    'pending upstream_unavailable',
    'pending circuit_open',
  ]);

  // At the deadline the recovery pass settles them `failed`, without a send.
  clock.tick(1);
  expect(await ledger.recover()).toBe(3);
  expect(await states()).toEqual(['failed not_processed', 'failed not_processed', 'failed not_sent']);
  const settledAt = clock.now();
  for (const id of ids) expect((await store.operations.get(id))?.settledAt).toBe(settledAt);
  // The ledger's result says so to anyone who resumes one now; nothing is sent.
  expect(await ledger.reconcile(refused.operation_id)).toMatchObject({
    outcome: 'failed',
    state: 'failed',
    retry_allowed: false,
    error: { code: 'not_sent' },
  });
  const orders = (await (await fetch(`${commerce.url}/orders`)).json()) as { orders: unknown[] };
  expect(orders.orders).toEqual([]);

  // Settled operations age out with retention like any other: kept until it has passed, then removed.
  clock.tick(RETENTION.operationsMs);
  expect((await store.retention.prune({ retention: RETENTION, dryRun: true })).removed.operations).toBe(0);
  clock.tick(1);
  const dry = await store.retention.prune({ retention: RETENTION, dryRun: true });
  expect(dry.removed.operations).toBe(3);
  const pruned = await store.retention.prune({ retention: RETENTION });
  expect(pruned.removed.operations).toBe(3);
  expect(await states()).toEqual(['gone', 'gone', 'gone']);
  expect(await ledger.recover()).toBe(0);
}

describe('a never-sent operation settles failed at its recovery deadline, then ages out', () => {
  it('SQLite', async () => {
    await proveUnsentSettles((clock) => openStore({ url: ':memory:', clock }));
  });
});

describePostgres('unsent-operation settlement')(
  'a never-sent operation settles failed at its recovery deadline, then ages out',
  () => {
    const schemas = testSchemas('bw_unsent');
    it('PostgreSQL', async () => {
      const schema = await schemas.create();
      await proveUnsentSettles((clock) => openStore({ url: TEST_DATABASE_URL, schema, clock }));
    });
  },
);
