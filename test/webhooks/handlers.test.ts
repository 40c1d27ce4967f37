import { createHmac } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import examples from '@octokit/webhooks-examples';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../src/core/index.js';
import { ConsecutiveWindow, constantBackoff } from '../../src/policy/index.js';
import { defineWebhookSource, githubVerifier, onWebhook, stripeVerifier } from '../../src/webhooks/index.js';
import {
  STRIPE_SECRET,
  deliverStripe,
  post,
  startIngress,
  stripeEvent,
  until,
  useCleanups,
} from './support.js';

/**
 * Handlers as jobs over real HTTP (docs/webhooks.md#handlers): ordering per key, the breaker, replay and the
 * dead letter, routing.
 */

const defer = useCleanups();
const verifier = stripeVerifier({ secrets: [STRIPE_SECRET] });
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface OrderEvent {
  id: string;
  type: string;
  data: { object: { order_id: string } };
}

describe('ordering key', () => {
  it('runs one order’s events one at a time, in arrival order, while other orders go on', async () => {
    const source = defineWebhookSource<OrderEvent>({
      name: 'payments',
      verifier,
      concurrency: 4,
      orderingKey: (event) => `order:${event.data.object.order_id}`,
    });
    const log: { order: string; id: string; phase: 'start' | 'end' }[] = [];
    const running = new Map<string, number>();
    const handler = onWebhook<OrderEvent>('payments', '*', async ({ event, eventId }) => {
      const order = event.data.object.order_id;
      running.set(order, (running.get(order) ?? 0) + 1);
      log.push({ order, id: eventId, phase: 'start' });
      expect(running.get(order)).toBe(1);
      // Later events of an order are quicker, so without the key they would overtake the earlier ones.
      await sleep(40 - Number(eventId.split('_')[2]) * 8);
      running.set(order, running.get(order)! - 1);
      log.push({ order, id: eventId, phase: 'end' });
    });
    const { url } = await startIngress(defer, { sources: [source], handlers: [handler] });
    const sent: Record<string, string[]> = { A: [], B: [], C: [] };
    for (let n = 0; n < 5; n++) {
      for (const order of ['A', 'B', 'C']) {
        const id = `evt_${order}_${n}`;
        const answer = await deliverStripe(
          url,
          'payments',
          stripeEvent(id, 'payment_intent.updated', { order_id: order }),
        );
        expect(answer.status).toBe(200);
        sent[order]!.push(id);
      }
    }
    await until(
      () => log.filter((e) => e.phase === 'end').length,
      (n) => n === 15,
      8_000,
    );
    for (const order of ['A', 'B', 'C']) {
      const mine = log.filter((e) => e.order === order);
      expect(mine.filter((e) => e.phase === 'start').map((e) => e.id)).toEqual(sent[order]);
      // Strictly start, end, start, end: never two of one order at once.
      expect(mine.map((e) => e.phase)).toEqual(Array(5).fill(['start', 'end']).flat());
    }
  });
});

describe('the breaker around a handler’s downstream', () => {
  it('once open, runs fail fast with circuit_open and are retried no earlier than half-open: the dependency is not hammered', async () => {
    let downstreamCalls = 0;
    // One run at a time: each failure is recorded before the next call is admitted, so exactly two calls open
    // it. (With room for more, a claim that takes two jobs at once runs both under a closed breaker: a third
    // call, which is the breaker working as specified, not the dependency being hammered.)
    const source = defineWebhookSource({
      name: 'payments',
      verifier,
      backoff: constantBackoff(10),
      concurrency: 1,
    });
    const handler = onWebhook(
      'payments',
      '*',
      async () => {
        downstreamCalls++;
        throw new BreakwaterError('upstream_unavailable', { message: 'the order database is down' });
      },
      { maxAttempts: 10, breaker: { window: new ConsecutiveWindow(2), openDurationMs: 60_000 } },
    );
    const { url, store } = await startIngress(defer, { sources: [source], handlers: [handler] });
    for (let i = 0; i < 6; i++) {
      expect((await deliverStripe(url, 'payments', stripeEvent(`evt_${i}`, 'charge.succeeded'))).status).toBe(
        200,
      );
    }
    const jobsOf = () => store.list({ type: 'webhook.payments' });
    const settled = await until(
      jobsOf,
      (jobs) =>
        jobs.length === 6 && jobs.every((j) => j.status === 'pending' && j.error?.code === 'circuit_open'),
      5_000,
    );
    // Two calls opened it (with a 10 ms backoff, a dependency without a breaker would see dozens by now).
    await sleep(300);
    expect(downstreamCalls).toBe(2);
    expect(handler.breaker!.state().state).toBe('open');
    const halfOpenAt = handler.breaker!.state().halfOpenAt!;
    for (const job of settled) expect(job.runAt).toBeGreaterThanOrEqual(halfOpenAt);
  });
});

describe('replay and the dead letter', () => {
  it('a dead-lettered event is replayed by id from the admin API once its handler is fixed', async () => {
    let broken = true;
    const runs: number[] = [];
    const source = defineWebhookSource({ name: 'payments', verifier });
    const handler = onWebhook('payments', 'charge.succeeded', ({ attempt }) => {
      runs.push(attempt);
      if (broken) throw new BreakwaterError('invalid_payload', { message: 'unknown customer' });
      return { ok: true };
    });
    const { url, store } = await startIngress(defer, { sources: [source], handlers: [handler] });
    expect((await deliverStripe(url, 'payments', stripeEvent('evt_dl', 'charge.succeeded'))).status).toBe(
      200,
    );
    const first = (await store.getWebhook('payments', 'evt_dl'))!;
    // A permanent failure: dead-lettered at once.
    const dead = await until(
      () => store.get(first.jobId),
      (j) => j?.status === 'failed',
    );
    expect(dead!.error).toMatchObject({ code: 'invalid_payload', message: 'unknown customer' });

    broken = false;
    const replay = await post(`${url}/admin/webhooks/payments/evt_dl/replay`, '');
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({
      ok: true,
      source: 'payments',
      event_id: 'evt_dl',
      event_type: 'charge.succeeded',
      replays: 1,
    });
    const jobId = replay.body.job_id as string;
    expect(jobId).not.toBe(first.jobId);
    const done = await until(
      () => store.get(jobId),
      (j) => j?.status === 'completed',
    );
    expect(done!.result).toEqual({ handled: true, event_type: 'charge.succeeded', result: { ok: true } });
    expect(runs).toEqual([1, 1]);
    expect(await store.getWebhook('payments', 'evt_dl')).toMatchObject({ jobId, replays: 1 });

    // The admin views.
    const list = await request(`${url}/admin/webhooks?source=payments`);
    expect(list.statusCode).toBe(200);
    expect(await list.body.json()).toMatchObject({
      webhooks: [{ event_id: 'evt_dl', job_id: jobId, event_type: 'charge.succeeded' }],
      next_before_id: null,
    });
    const show = await request(`${url}/admin/webhooks/payments/evt_dl`);
    expect(await show.body.json()).toMatchObject({
      event_id: 'evt_dl',
      body: expect.stringContaining('"evt_dl"'),
    });
    const missing = await post(`${url}/admin/webhooks/payments/evt_nope/replay`, '');
    expect(missing).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const unknownSource = await post(`${url}/admin/webhooks/nope/evt_dl/replay`, '');
    expect(unknownSource.status).toBe(404);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && !a.internal && a.family === 'IPv4');
  it.skipIf(external === undefined)(
    'the admin API refuses clients that are not on loopback (403)',
    async () => {
      const source = defineWebhookSource({ name: 'payments', verifier });
      const { url } = await startIngress(defer, { sources: [source], host: external!.address });
      const replay = await post(`${url}/admin/webhooks/payments/evt_1/replay`, '');
      expect(replay).toMatchObject({ status: 403, body: { code: 'unauthorized', status: 403 } });
      const list = await request(`${url}/admin/webhooks`);
      expect(list.statusCode).toBe(403);
      // The public route is not restricted.
      expect((await deliverStripe(url, 'payments', stripeEvent('evt_1', 'x'))).status).toBe(200);
    },
  );
});

describe('GitHub’s published example payloads', () => {
  it('are accepted and routed by X-GitHub-Event', async () => {
    const secret = "It's a Secret to Everybody";
    const byType: Record<string, string[]> = {};
    const record = (name: string) => (ctx: { eventType: string; eventId: string }) => {
      (byType[name] ??= []).push(`${ctx.eventType}:${ctx.eventId}`);
    };
    const source = defineWebhookSource({
      name: 'github',
      verifier: githubVerifier({ secrets: [secret] }),
      concurrency: 8,
    });
    const { url } = await startIngress(defer, {
      sources: [source],
      handlers: [
        onWebhook('github', 'push', record('push')),
        onWebhook('github', 'issues', record('issues')),
        onWebhook('github', '*', record('other')),
      ],
    });
    let n = 0;
    const expected: Record<string, string[]> = {};
    for (const event of examples as unknown as { name: string; examples: unknown[] }[]) {
      const body = JSON.stringify(event.examples[0], null, 2);
      const delivery = `gh-${++n}`;
      const answer = await post(`${url}/webhooks/github`, body, {
        'x-github-event': event.name,
        'x-github-delivery': delivery,
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
      });
      expect(answer, event.name).toMatchObject({
        status: 200,
        body: { event_id: delivery, duplicate: false },
      });
      const bucket = event.name === 'push' || event.name === 'issues' ? event.name : 'other';
      (expected[bucket] ??= []).push(`${event.name}:${delivery}`);
    }
    expect(n).toBeGreaterThan(50);
    await until(
      () => Object.values(byType).flat().length,
      (count) => count === n,
      8_000,
    );
    for (const bucket of Object.keys(expected))
      expect(byType[bucket]?.sort()).toEqual(expected[bucket]!.sort());
  });
});
