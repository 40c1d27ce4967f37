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
import { FakeClock } from '../../src/entries/testing.js';
import { OperationLedger, type OperationAction, type OperationResult } from '../../src/entries/operations.js';
import { createUpstream, type Upstream } from '../../src/entries/upstream.js';
import { openStore, type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { connect, startBackends, startGiftGenius, tempDb, useCleanups } from '../e2e/support.js';

const T0 = Date.UTC(2026, 10, 30, 12);
const MINUTE = 60_000;
/** `createOrderAction`'s `recoveryMs`. */
const RECOVERY_MS = 10 * MINUTE;
const RETENTION = { operationsMs: 60 * MINUTE };

const defer = useCleanups();
/** `state` and, when it has one, its error's code. */
function described(op: { state: string; error: unknown }): string {
  const code = (op.error as { code?: string } | null)?.code;
  return code === undefined ? op.state : `${op.state} ${code}`;
}

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

/** One refund through a ledger of its own, to a port nobody listens on; resolves its result. */
async function refundOnce(store: Store, clock: FakeClock): Promise<OperationResult> {
  const refunds = createUpstream({
    name: 'refunds',
    baseUrl: 'http://127.0.0.1:1',
    timeoutMs: 5_000,
    clock,
    breaker: false,
  });
  opened.push(refunds);
  const refund: OperationAction<{ order_id: string }, unknown> = {
    name: 'refunds.create',
    target: 'POST refunds /refunds',
    retryAllowed: true,
    recoveryMs: RECOVERY_MS,
    send: async ({ operationId, request, signal }) =>
      (await refunds.post('/refunds', request, { idempotencyKey: operationId, signal, retry: false })).body,
  };
  return new OperationLedger({ store: store.operations, clock }).execute(refund, { order_id: 'ord_1' });
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
  // A script that ran once on the same store and exited: its refund could not connect (never sent), and no
  // process running now defines its action.
  const orphan = await refundOnce(store, clock);
  expect([orphan.outcome, orphan.state, orphan.transport_observation]).toEqual([
    'failed',
    'pending',
    'ECONNREFUSED',
  ]);
  const ids = [...answered, refused, orphan].map((r) => r.operation_id);
  const states = async () =>
    Promise.all(
      ids.map(async (id) => {
        const op = await store.operations.get(id);
        return op === undefined ? 'gone' : described(op);
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
    'pending upstream_unavailable',
  ]);

  // At the deadline the recovery pass settles them `failed`, without a send; the orphan too.
  clock.tick(1);
  expect(await ledger.recover()).toBe(4);
  expect(await states()).toEqual([
    'failed not_processed',
    'failed not_processed',
    'failed not_sent',
    'failed not_sent',
  ]);
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
  expect(dry.removed.operations).toBe(4);
  const pruned = await store.retention.prune({ retention: RETENTION });
  expect(pruned.removed.operations).toBe(4);
  expect(await states()).toEqual(['gone', 'gone', 'gone', 'gone']);
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

describe('on a GiftGenius gateway, its recovery loop and pruner on a fake clock (SQLite)', () => {
  it('the checkout tool answers failed with the breaker open; settled at the deadline, pruned after retention', async () => {
    const clock = new FakeClock(T0);
    const backends = await startBackends(defer);
    const pruneEveryMs = 10 * MINUTE;
    const gw = await startGiftGenius(defer, backends, {
      dbPath: tempDb(defer),
      gateway: { clock, env: {}, pruneEveryMs, retention: RETENTION },
    });
    const mcp = await connect(defer, gw.mcpUrl);
    backends.services.commerce.faults.set({ status: 503 });
    const answers = [];
    for (const customer of ['cus_1', 'cus_2', 'cus_3', 'cus_4']) {
      const answer = await mcp.call('checkout', { product_id: 'p001', customer_id: customer });
      answers.push(answer.structuredContent.error);
    }
    backends.services.commerce.faults.clear();
    // Commerce's breaker opens at its third failure (3 / 20 s): the fourth checkout was never sent.
    expect(answers.map((error) => [error.category, error.outcome, error.transport_observation])).toEqual([
      ['upstream_unavailable', 'failed', 'http_503'],
      ['upstream_unavailable', 'failed', 'http_503'],
      ['upstream_unavailable', 'failed', 'http_503'],
      ['circuit_open', 'failed', 'circuit_open'],
    ]);
    const operations = async () => (await gw.store.operations.list({})).map(described);
    // Fake time passes in steps; each step lets the passes its timers started finish on the real store.
    const step = async (ms: number) => {
      await clock.tickAsync(ms);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await clock.tickAsync(0);
    };
    const NEWEST_FIRST_PENDING = [
      'pending circuit_open',
      'pending upstream_unavailable',
      'pending upstream_unavailable',
      'pending upstream_unavailable',
    ];
    expect(await operations()).toEqual(NEWEST_FIRST_PENDING);

    // The recovery loop (every 5 s) leaves them alone until their deadline, then settles them.
    await step(RECOVERY_MS - 5_000);
    expect(await operations()).toEqual(NEWEST_FIRST_PENDING);
    const settled = [
      'failed not_sent',
      'failed not_processed',
      'failed not_processed',
      'failed not_processed',
    ];
    for (let n = 0; n < 10 && (await operations()).join() !== settled.join(); n++) await step(5_000);
    expect(await operations()).toEqual(settled);
    const settledAt = Math.max(...(await gw.store.operations.list({})).map((op) => op.settledAt ?? 0));
    expect(settledAt).toBeGreaterThanOrEqual(T0 + RECOVERY_MS);

    // The pruner (every 10 min) keeps them until their retention (1 h) has passed, then removes them.
    while (clock.now() < settledAt + RETENTION.operationsMs - pruneEveryMs) await step(pruneEveryMs / 2);
    expect(gw.pruner.lastReport?.removed.operations).toBe(0);
    expect(await operations()).toHaveLength(4);
    for (let n = 0; n < 10 && (await operations()).length > 0; n++) await step(pruneEveryMs / 2);
    expect(await operations()).toEqual([]);
    expect(clock.now()).toBeGreaterThan(settledAt + RETENTION.operationsMs);
    expect(gw.pruner.lastReport?.removed.operations).toBe(4);
  });
});
