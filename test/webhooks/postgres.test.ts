import { Client } from 'undici';
import { expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../support/postgres.js';
import { defineWebhookSource, onWebhook, stripeVerifier } from '../../src/webhooks/index.js';
import {
  STRIPE_SECRET,
  deliverStripe,
  startIngress,
  stripeEvent,
  stripeSignature,
  untilJobsFinished,
  useCleanups,
} from './support.js';

/**
 * The ingress on PostgreSQL (BREAKWATER_TEST_DATABASE_URL), in a fresh schema dropped after each test: the
 * inbox's unique constraint deduplicates concurrent deliveries across connections, and the backlog count
 * sheds load, as on SQLite.
 */

const defer = useCleanups();
const verifier = stripeVerifier({ secrets: [STRIPE_SECRET] });

describePostgres('webhook tests')('webhook ingress on PostgreSQL', () => {
  const schemas = testSchemas();

  async function freshStore(): Promise<Store> {
    const schema = await schemas.create();
    defer(() => schemas.drop(schema));
    const store = await openPostgresStore({ url, schema });
    defer(() => store.close());
    return store;
  }

  it('the same event on 8 connections at once: all 200, one stored, one job, handled once', async () => {
    const runs: string[] = [];
    const { url: base, store } = await startIngress(defer, {
      store: await freshStore(),
      sources: [defineWebhookSource({ name: 'payments', verifier })],
      handlers: [onWebhook('payments', '*', ({ eventId }) => void runs.push(eventId))],
    });
    const body = stripeEvent('evt_pg', 'charge.succeeded');
    const headers = { 'content-type': 'application/json', 'stripe-signature': stripeSignature(body) };
    const clients = Array.from({ length: 8 }, () => new Client(base));
    for (const c of clients) defer(() => c.close());
    await Promise.all(
      clients.map((c) => c.request({ path: '/healthz', method: 'GET' }).then((r) => r.body.dump())),
    );
    const answers = await Promise.all(
      clients.map(async (c) => {
        const response = await c.request({ path: '/webhooks/payments', method: 'POST', headers, body });
        return { status: response.statusCode, body: (await response.body.json()) as { duplicate: boolean } };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
    await untilJobsFinished(store, 'webhook.payments', 1);
    expect(runs).toEqual(['evt_pg']);
  });

  it('503 with Retry-After while the backlog is full', async () => {
    const { url: base } = await startIngress(defer, {
      store: await freshStore(),
      sources: [
        defineWebhookSource({ name: 'payments', verifier, maxBacklog: 1, backlogRetryAfterMs: 2_000 }),
      ],
      worker: false,
    });
    expect((await deliverStripe(base, 'payments', stripeEvent('evt_1', 'x'))).status).toBe(200);
    const full = await deliverStripe(base, 'payments', stripeEvent('evt_2', 'x'));
    expect(full).toMatchObject({ status: 503, body: { code: 'overloaded' } });
    expect(full.headers['retry-after']).toBe('2');
  });
});
