import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BreakwaterError, FakeClock, sleep } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { OperationLedger, type OperationAction } from '../../src/operations/index.js';
import { constantBackoff, rateLimit } from '../../src/policy/index.js';
import { closeGracefully, createMetrics, createServer, METRIC_FAMILIES } from '../../src/server/index.js';
import {
  buckets,
  histogram,
  parseExposition,
  series,
  type Family,
} from '../../src/server/metrics/test-support.js';
import { openStore } from '../../src/store/index.js';
import { createUpstream } from '../../src/upstream/index.js';
import { TestServer, hang, json, rejection, until, type Behaviour } from '../../src/upstream/test-support.js';
import { createWebhookIngress, defineWebhookSource, stripeVerifier } from '../../src/webhooks/index.js';
import { useCleanups } from '../support/cleanups.js';
import { STRIPE_SECRET, post, stripeEvent, stripeSignature } from '../webhooks/support.js';

/**
 * The proof of `/metrics` (docs/operations-guide.md#metrics-reference): real parts on one fake clock —
 * upstreams against a local HTTP server, a jobs runtime and an operation ledger on an in-memory SQLite store,
 * a webhook ingress on the real server — play a scripted scenario; `/metrics` is then scraped over HTTP and
 * every counter is checked exactly, label set by label set. Durations are exact too: the test server moves
 * the fake clock while it "works".
 */

const defer = useCleanups();

/** Lets promise chains and store I/O settle without moving fake time. */
async function flush(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 5; i++) await clock.tickAsync(0);
}

async function scrape(base: string): Promise<Map<string, Family>> {
  const answer = await request(`${base}/metrics`);
  expect(answer.statusCode).toBe(200);
  expect(answer.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(await answer.body.text());
}

describe('GET /metrics after a scripted scenario', () => {
  it('counts exactly what happened: upstreams, jobs, operations, webhooks, rate limits', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    /** A behaviour that takes `ms` of fake time before answering. */
    const after =
      (ms: number, behaviour: Behaviour): Behaviour =>
      (req: IncomingMessage, res: ServerResponse, server: TestServer) => {
        clock.tick(ms);
        behaviour(req, res, server);
      };

    const store = await openStore({ url: ':memory:', clock });
    defer(() => store.close());
    const jobs = createJobs({ store, clock, owner: 'w1', leaseMs: 30_000, heartbeatMs: 10_000 });
    defer(() => jobs.stop({ graceMs: 0 }));
    const payments = defineWebhookSource({
      name: 'payments',
      verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
      schema: z.object({ id: z.string(), type: z.string() }).passthrough(),
    });
    // A receiving process: no jobs runtime for the webhook handlers, so their jobs stay pending (the queue).
    const ingress = createWebhookIngress({ store, sources: [payments], clock });
    const metrics = createMetrics({ clock });
    const http = createServer({ jobs, store, routes: [ingress.routes, metrics.routes] });
    defer(() => closeGracefully(http, { graceMs: 1_000 }));
    await http.listen({ host: '127.0.0.1', port: 0 });
    const address = http.server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;

    const server = await TestServer.start();
    defer(() => server.close());
    const gift = createUpstream({
      name: 'gift',
      baseUrl: server.url,
      timeoutMs: 1_000,
      breaker: { consecutiveFailures: 3, openMs: 30_000 },
      retry: { maxAttempts: 2, backoff: constantBackoff(0) },
      clock,
    });
    const commerce = createUpstream({
      name: 'commerce',
      baseUrl: server.url,
      timeoutMs: 500,
      bulkhead: { maxConcurrent: 1 },
      breaker: false,
      retry: false,
      clock,
    });
    defer(() => Promise.all([gift.close(), commerce.close()]));
    const checkout = rateLimit({
      name: 'checkout',
      algorithm: { type: 'fixed_window', limit: 2, windowMs: 60_000 },
      clock,
    });
    const ledger = new OperationLedger({ store: store.operations, clock });

    metrics.observeUpstream(gift);
    metrics.observeUpstream(commerce);
    metrics.observeRateLimit(checkout);
    metrics.observeJobs(jobs, store);
    metrics.observeWebhooks(ingress);
    metrics.observeOperations(ledger);

    // 1. The gift service answers once (120 ms), then fails with 503s until its breaker opens.
    server.on('/recommend', after(120, json(200, { gifts: [] })), after(80, json(503, { title: 'busy' })));
    await gift.get('/recommend');
    // 503, retried, 503: the retry gives up (exhausted); the breaker has seen 2 failures.
    await rejection(gift.get('/recommend'));
    // 503 (the 3rd failure opens the breaker), retry, circuit_open: not retried.
    expect(await rejection(gift.get('/recommend'))).toMatchObject({ code: 'circuit_open' });
    // Open: a fast honest error, nothing sent.
    expect(await rejection(gift.get('/recommend'))).toMatchObject({ code: 'circuit_open' });
    expect(server.count('/recommend')).toBe(4);
    let m = await scrape(base);
    expect(series(m, 'breakwater_circuit_breaker_state')).toEqual({
      'dependency="gift",state="closed"': 0,
      'dependency="gift",state="open"': 1,
      'dependency="gift",state="half-open"': 0,
      'dependency="gift",state="isolated"': 0,
    });
    await clock.tickAsync(30_000);

    // 2. Checkout hangs: the order in flight holds the only bulkhead slot, the next one is turned away, then
    // the first times out after it was written: outcome unknown.
    server.on('/orders', hang);
    const lost = rejection(commerce.post('/orders', { sku: 'kite' }));
    await until(() => server.count('/orders') === 1);
    expect(await rejection(commerce.post('/orders', { sku: 'yo-yo' }))).toMatchObject({
      code: 'bulkhead_full',
    });
    m = await scrape(base);
    expect(series(m, 'breakwater_bulkhead_in_use')).toEqual({ 'dependency="commerce"': 1 });
    await clock.tickAsync(500);
    expect(await lost).toMatchObject({ code: 'outcome_unknown' });

    // 3. Rate limit: two allowed, one denied.
    for (let i = 0; i < 3; i++) await checkout.consume('tenant-a');

    // 4. Jobs: three 2 s reports one at a time, a charge dead-lettered, a sync that succeeds on its retry.
    jobs.defineJob('report', async () => {
      await sleep(clock, 2_000);
      return 'done';
    });
    jobs.defineJob('charge', () => {
      throw new BreakwaterError('upstream_error');
    });
    let syncs = 0;
    jobs.defineJob(
      'sync',
      () => {
        if (++syncs === 1) throw new BreakwaterError('upstream_unavailable');
        return 'synced';
      },
      { maxAttempts: 2, backoff: constantBackoff(1_000) },
    );
    for (const type of ['report', 'report', 'report', 'charge', 'sync']) await jobs.enqueue(type, {});
    jobs.start();
    await flush(clock);
    for (const ms of [1_000, 1_000, 2_000, 2_000]) {
      await clock.tickAsync(ms);
      await flush(clock);
    }
    expect((await jobs.stats()).counts).toEqual({
      pending: 0,
      in_progress: 0,
      input_required: 0,
      completed: 4,
      failed: 1,
      canceled: 0,
    });

    // 5. Operations: a lost response reconciled by a lookup, a plain success, and one never settled.
    let sends = 0;
    const createOrder: OperationAction<{ sku: string }, { order_id: string }> = {
      name: 'commerce.create_order',
      target: 'POST commerce /orders',
      retryAllowed: true,
      send: async () => {
        if (++sends === 1) throw new BreakwaterError('outcome_unknown', { outcome: 'unknown' });
        return { order_id: 'ord_2' };
      },
      lookup: async () => ({ state: 'succeeded', result: { order_id: 'ord_1' } }),
    };
    const refund: OperationAction<{ order: string }, unknown> = {
      name: 'commerce.refund',
      target: 'POST commerce /refunds',
      retryAllowed: false,
      recoveryMs: 60_000,
      send: async () => {
        throw new BreakwaterError('outcome_unknown', { outcome: 'unknown' });
      },
    };
    expect((await ledger.execute(createOrder, { sku: 'kite' })).outcome).toBe('succeeded');
    expect((await ledger.execute(createOrder, { sku: 'top' })).outcome).toBe('succeeded');
    expect((await ledger.execute(refund, { order: 'ord_1' })).outcome).toBe('unknown');
    clock.tick(60_000);
    await ledger.recover();

    // 6. Webhooks: two new events, one duplicate, a bad signature, an unknown source; 1.5 s later, scrape.
    const deliver = (id: string, secret = STRIPE_SECRET) => {
      const body = stripeEvent(id, 'payment_intent.succeeded', {}, Math.floor(clock.now() / 1000));
      return post(`${base}/webhooks/payments`, body, {
        'stripe-signature': stripeSignature(body, secret, clock.now()),
      });
    };
    expect((await deliver('evt_1')).body).toMatchObject({ duplicate: false });
    expect((await deliver('evt_2')).body).toMatchObject({ duplicate: false });
    expect((await deliver('evt_1')).body).toMatchObject({ duplicate: true });
    expect((await deliver('evt_3', 'whsec_not_ours')).status).toBe(401);
    expect((await post(`${base}/webhooks/nope`, '{}')).status).toBe(404);
    await clock.tickAsync(1_500);

    m = await scrape(base);
    expect([...m.keys()]).toEqual(Object.values(METRIC_FAMILIES).map((f) => `breakwater_${f.name}`));

    // Upstreams and their policies.
    expect(series(m, 'breakwater_circuit_breaker_state')).toEqual({
      'dependency="gift",state="closed"': 0,
      'dependency="gift",state="open"': 0,
      'dependency="gift",state="half-open"': 1,
      'dependency="gift",state="isolated"': 0,
    });
    expect(series(m, 'breakwater_circuit_breaker_transitions_total')).toEqual({
      'dependency="gift",from="closed",to="open"': 1,
      'dependency="gift",from="open",to="half-open"': 1,
    });
    expect(series(m, 'breakwater_bulkhead_in_use')).toEqual({ 'dependency="commerce"': 0 });
    expect(series(m, 'breakwater_bulkhead_queued')).toEqual({ 'dependency="commerce"': 0 });
    expect(series(m, 'breakwater_bulkhead_max_concurrent')).toEqual({ 'dependency="commerce"': 1 });
    expect(series(m, 'breakwater_bulkhead_max_queue')).toEqual({ 'dependency="commerce"': 0 });
    expect(series(m, 'breakwater_bulkhead_rejected_total')).toEqual({
      'dependency="commerce",reason="full"': 1,
    });
    expect(series(m, 'breakwater_retries_total')).toEqual({ 'dependency="gift"': 2 });
    expect(series(m, 'breakwater_retry_give_ups_total')).toEqual({
      'dependency="gift",reason="exhausted"': 1,
      'dependency="gift",reason="not_retryable"': 2,
    });
    expect(series(m, 'breakwater_timeouts_total')).toEqual({ 'code="timeout",dependency="commerce"': 1 });
    const latency = 'breakwater_upstream_request_duration_seconds';
    expect(histogram(m, latency)).toEqual({
      'dependency="gift",method="GET",outcome="success",status_class="2xx"': { count: 1, sum: 0.12 },
      'dependency="gift",method="GET",outcome="upstream_unavailable",status_class="5xx"': {
        count: 1,
        sum: 0.16,
      },
      'dependency="gift",method="GET",outcome="circuit_open",status_class="none"': { count: 2, sum: 0.08 },
      'dependency="commerce",method="POST",outcome="bulkhead_full",status_class="none"': {
        count: 1,
        sum: 0,
      },
      'dependency="commerce",method="POST",outcome="outcome_unknown",status_class="none"': {
        count: 1,
        sum: 0.5,
      },
    });
    const ok = { dependency: 'gift', method: 'GET', status_class: '2xx', outcome: 'success' };
    expect(buckets(m, latency, ok)).toMatchObject({ '0.1': 0, '0.25': 1, '+Inf': 1 });
    expect(series(m, 'breakwater_rate_limit_decisions_total')).toEqual({
      'decision="allowed",limiter="checkout"': 2,
      'decision="denied",limiter="checkout"': 1,
    });

    // Jobs: the two webhook jobs wait (no worker here runs them), due 1.5 s ago.
    expect(series(m, 'breakwater_jobs')).toEqual({
      'status="pending"': 2,
      'status="in_progress"': 0,
      'status="input_required"': 0,
      'status="completed"': 4,
      'status="failed"': 1,
      'status="canceled"': 0,
    });
    expect(series(m, 'breakwater_job_queue_depth')).toEqual({ '': 2 });
    expect(series(m, 'breakwater_job_oldest_pending_age_seconds')).toEqual({ '': 1.5 });
    expect(histogram(m, 'breakwater_job_run_duration_seconds')).toEqual({
      'outcome="completed",type="report"': { count: 3, sum: 6 },
      'outcome="failed",type="charge"': { count: 1, sum: 0 },
      'outcome="retrying",type="sync"': { count: 1, sum: 0 },
      'outcome="completed",type="sync"': { count: 1, sum: 0 },
    });
    // The reports ran one at a time: the 2nd waited 2 s, the 3rd 4 s. The sync's retry is not a queue wait.
    expect(histogram(m, 'breakwater_job_enqueue_to_start_seconds')).toEqual({
      'type="report"': { count: 3, sum: 6 },
      'type="charge"': { count: 1, sum: 0 },
      'type="sync"': { count: 1, sum: 0 },
    });
    expect(buckets(m, 'breakwater_job_enqueue_to_start_seconds', { type: 'report' })).toMatchObject({
      '1': 1,
      '5': 3,
    });
    expect(series(m, 'breakwater_job_dead_letters_total')).toEqual({ 'type="charge"': 1 });

    // Webhooks.
    expect(series(m, 'breakwater_webhook_deliveries_total')).toEqual({
      'result="accepted",source="payments"': 2,
      'result="duplicate",source="payments"': 1,
      'result="rejected",source="payments"': 1,
      'result="rejected",source="_unknown"': 1,
    });
    expect(series(m, 'breakwater_webhook_rejections_total')).toEqual({
      'code="invalid_signature",source="payments"': 1,
      'code="not_found",source="_unknown"': 1,
    });

    // Operations.
    expect(series(m, 'breakwater_operation_outcomes_total')).toEqual({
      'action="commerce.create_order",outcome="unknown"': 1,
      'action="commerce.create_order",outcome="succeeded"': 2,
      'action="commerce.refund",outcome="unknown"': 1,
    });
    expect(series(m, 'breakwater_operations_unknown_past_deadline_total')).toEqual({
      'action="commerce.refund"': 1,
    });
    expect(series(m, 'breakwater_metrics_collect_errors_total')).toEqual({});
  });
});
