import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock } from '../core/index.js';
import { constantBackoff, type RetryEvent } from '../policy/index.js';
import { createUpstream, type Upstream, type UpstreamOptions } from './index.js';
import { TestServer, hang, json, rejection, reset, until } from './test-support.js';

let server: TestServer;
let clock: FakeClock;
const upstreams: Upstream[] = [];

/** An upstream on the fake clock; retries wait 0 ms unless a test says otherwise. */
function make(options: Partial<UpstreamOptions> = {}): Upstream {
  const upstream = createUpstream({
    name: 'gift',
    baseUrl: server.url,
    timeoutMs: 4000,
    retry: { backoff: constantBackoff(0) },
    clock,
    ...options,
  });
  upstreams.push(upstream);
  return upstream;
}

/** GiftGenius-style overrides of the four transient classes (the defaults would say "The gift service …"). */
const GIFT_ERRORS = {
  timeout: {
    code: 'gift_service_timeout',
    sentence: 'The gift recommendation service did not answer in time; try again shortly.',
  },
  open: {
    code: 'gift_service_unavailable',
    sentence:
      'The gift recommendation service is temporarily unavailable after repeated failures; try again shortly.',
  },
  busy: {
    code: 'gift_service_busy',
    sentence: 'The gift recommendation service is busy right now; try again shortly.',
  },
  unavailable: {
    code: 'gift_service_failing',
    sentence: 'The gift recommendation service is not working right now; try again shortly.',
  },
};

beforeEach(async () => {
  server = await TestServer.start();
  clock = new FakeClock();
});

afterEach(async () => {
  await server.close();
  await Promise.all(upstreams.splice(0).map((u) => u.close()));
});

describe('upstream: timeout', () => {
  it('a hung GET times out with `timeout`, the dependency code, and the request aborted', async () => {
    server.on('/slow', hang);
    const up = make({ retry: false, errors: GIFT_ERRORS });
    const settled = rejection(up.get('/slow'));
    await until(() => server.count() === 1);
    await clock.tickAsync(3999);
    await clock.tickAsync(1);
    const error = (await settled) as BreakwaterError;
    expect([error.code, error.kind, error.status, error.source, error.outcome]).toEqual([
      'timeout',
      'transient',
      504,
      'gift',
      'failed',
    ]);
    expect(error.message).toBe('The gift recommendation service did not answer in time; try again shortly.');
    expect(error.details).toMatchObject({
      dependency_code: 'gift_service_timeout',
      timeout_ms: 4000,
      reason: 'timeout',
    });
    await until(() => server.abandoned === 1);
  });

  it('a POST cut off by the timeout has an unknown outcome and is not retried', async () => {
    server.on('/orders', hang);
    const up = make();
    const settled = rejection(up.post('/orders', { sku: 'kite' }));
    await until(() => server.count() === 1);
    await clock.tickAsync(4000);
    const error = (await settled) as BreakwaterError;
    expect([error.code, error.outcome, error.retryable, error.details?.['reason']]).toEqual([
      'outcome_unknown',
      'unknown',
      false,
      'timeout',
    ]);
    expect(error.details?.['dependency_code']).toBe('gift_outcome_unknown');
    await clock.tickAsync(10_000);
    expect(server.count()).toBe(1);
  });
});

describe('upstream: a search sent as POST (idempotent: true)', () => {
  it('cut off by the timeout, it is a plain timeout (outcome failed) and is retried', async () => {
    server.on('/recommendations', hang, hang);
    const up = make({ retry: { maxAttempts: 2, backoff: { next: () => 0 } }, errors: GIFT_ERRORS });
    const settled = rejection(up.post('/recommendations', { q: 'kite' }, { idempotent: true }));
    await until(() => server.count() === 1);
    await clock.tickAsync(4000);
    await until(() => server.count() === 2);
    await clock.tickAsync(4000);
    const error = (await settled) as BreakwaterError;
    expect([error.code, error.outcome, error.retryable, error.details?.['dependency_code']]).toEqual([
      'timeout',
      'failed',
      true,
      'gift_service_timeout',
    ]);
  });
});

describe('upstream: circuit breaker', () => {
  it('opens after N failures; the next call is circuit_open without reaching the server', async () => {
    server.on('/gifts', json(503, { title: 'busy' }), json(503, {}), json(503, {}), json(200, { ok: 1 }));
    const up = make({
      retry: false,
      breaker: { consecutiveFailures: 3, openMs: 20_000 },
      errors: GIFT_ERRORS,
    });
    for (let i = 0; i < 3; i++) {
      const error = (await rejection(up.get('/gifts'))) as BreakwaterError;
      expect([error.code, error.details?.['upstream_status'], error.details?.['dependency_code']]).toEqual([
        'upstream_unavailable',
        503,
        'gift_service_busy',
      ]);
    }
    expect(server.count()).toBe(3);

    const open = (await rejection(up.get('/gifts'))) as BreakwaterError;
    expect([open.code, open.retryAfterMs, open.source, open.details?.['circuit_state']]).toEqual([
      'circuit_open',
      20_000,
      'gift',
      'open',
    ]);
    expect(open.details?.['dependency_code']).toBe('gift_service_unavailable');
    expect(open.message).toBe(
      'The gift recommendation service is temporarily unavailable after repeated failures; try again in about 20 seconds.',
    );
    expect(server.count()).toBe(3);

    const state = up.breaker!.state();
    expect([state.name, state.state, state.lastTransition?.from, state.lastTransition?.reason]).toEqual([
      'gift',
      'open',
      'closed',
      'consecutive_failures',
    ]);

    // After the open period one trial goes through; its success closes the breaker.
    await clock.tickAsync(20_000);
    expect((await up.get('/gifts')).body).toEqual({ ok: 1 });
    expect(up.breaker!.state().state).toBe('closed');
    expect(up.breaker!.state().lastTransition?.reason).toBe('trials_succeeded');
  });

  it('breaker: false builds none', () => {
    expect(make({ breaker: false }).breaker).toBeUndefined();
  });
});

describe('upstream: bulkhead', () => {
  it('rejects with bulkhead_full when every slot and queue place is taken, without sending', async () => {
    server.on('/slow', hang);
    const up = make({ bulkhead: { maxConcurrent: 1, maxQueue: 0 }, errors: GIFT_ERRORS });
    const caller = new AbortController();
    const first = rejection(up.get('/slow', { signal: caller.signal }));
    await until(() => server.count() === 1);

    const error = (await rejection(up.get('/slow'))) as BreakwaterError;
    expect([error.code, error.source, error.details?.['reason'], error.details?.['dependency_code']]).toEqual(
      ['bulkhead_full', 'gift', 'full', 'gift_service_busy'],
    );
    expect(server.count()).toBe(1);

    caller.abort();
    expect(((await first) as BreakwaterError).code).toBe('canceled');
    expect(up.policies.bulkhead!.state().inUse).toBe(0);
  });
});

describe('upstream: retry', () => {
  it('retries a 503 after its Retry-After, on the clock', async () => {
    server.on('/gifts', json(503, {}, { 'retry-after': '2' }), json(200, { gifts: [] }));
    const up = make({ retry: {} });
    const retries: RetryEvent[] = [];
    up.policies.retry!.onRetry((e) => retries.push(e));
    const pending = up.get('/gifts');
    await until(() => retries.length === 1);
    expect(retries[0]!.delayMs).toBe(2000);
    await clock.tickAsync(1999);
    expect(server.count()).toBe(1);
    await clock.tickAsync(1);
    const response = await pending;
    expect([response.status, response.attempts, server.count()]).toEqual([200, 2, 2]);
    // Both attempts carry the same correlation id.
    expect(server.seen[0]!.headers['x-correlation-id']).toBe(server.seen[1]!.headers['x-correlation-id']);
  });

  it('gives up at once when Retry-After is longer than maxDelayMs, keeping the hint', async () => {
    server.on('/gifts', json(503, {}, { 'retry-after': '120' }));
    const error = (await rejection(make({ errors: GIFT_ERRORS }).get('/gifts'))) as BreakwaterError;
    expect([error.code, error.retryAfterMs, server.count()]).toEqual(['upstream_unavailable', 120_000, 1]);
    expect(error.message).toBe(
      'The gift recommendation service is busy right now; try again in about 2 minutes.',
    );
  });

  it('a GET whose connection is reset is transient and retried', async () => {
    server.on('/gifts', reset, json(200, { gifts: ['kite'] }));
    const response = await make().get('/gifts');
    expect([response.body, response.attempts, server.count()]).toEqual([{ gifts: ['kite'] }, 2, 2]);
  });

  it('a POST reset after it was written has an unknown outcome and is not retried', async () => {
    server.on('/orders', reset, json(201, { id: 'o1' }));
    const error = (await rejection(make().post('/orders', { sku: 'kite' }))) as BreakwaterError;
    expect([error.code, error.kind, error.outcome, error.retryable, error.source]).toEqual([
      'outcome_unknown',
      'transient',
      'unknown',
      false,
      'gift',
    ]);
    expect(error.details?.['dependency_code']).toBe('gift_outcome_unknown');
    expect(server.count()).toBe(1);
    expect(server.seen[0]!.body).toBe('{"sku":"kite"}');
  });

  it('a POST with an idempotency key is resent after a reset, with the same key', async () => {
    server.on('/orders', reset, json(201, { id: 'o1' }));
    const response = await make().post('/orders', { sku: 'kite' }, { idempotencyKey: 'order-7' });
    expect([response.status, response.attempts]).toEqual([201, 2]);
    expect(server.seen.map((s) => s.headers['idempotency-key'])).toEqual(['order-7', 'order-7']);
  });

  it('connection refused: details.written is false (the request never left)', async () => {
    const up = make({ baseUrl: 'http://127.0.0.1:1' });
    const error = (await rejection(up.post('/orders', {}, { retry: false }))) as BreakwaterError;
    expect([error.outcome, error.details?.['written']]).toEqual(['failed', false]);
  });

  it('a keyed POST with the per-request retry: false is sent once: unknown, the key still sent', async () => {
    server.on('/orders', reset, json(201, { id: 'o1' }));
    const request = make().post('/orders', { sku: 'kite' }, { idempotencyKey: 'order-8', retry: false });
    const error = (await rejection(request)) as BreakwaterError;
    expect([error.code, error.outcome, error.retryable, server.count()]).toEqual([
      'outcome_unknown',
      'unknown',
      false,
      1,
    ]);
    expect(server.seen[0]!.headers['idempotency-key']).toBe('order-8');
  });

  it('the per-request retry option takes only false', async () => {
    const options = { retry: true } as unknown as { retry: false };
    const error = await rejection(make().get('/gifts', options));
    expect(error).toEqual(new TypeError('gift: retry must be false or left out'));
    expect(server.count()).toBe(0);
  });

  it('retry: false sends every request once', async () => {
    server.on('/gifts', reset, json(200, {}));
    const error = (await rejection(make({ retry: false }).get('/gifts'))) as BreakwaterError;
    expect([error.code, error.outcome, server.count()]).toEqual(['upstream_unavailable', 'failed', 1]);
  });
});

describe('upstream: deadline', () => {
  it('with less time left than the margin: deadline_exceeded at once, the server never hit', async () => {
    server.on('/gifts', json(200, {}));
    const up = make({ errors: GIFT_ERRORS });
    const error = (await rejection(Deadline.run(30, () => up.get('/gifts'), clock))) as BreakwaterError;
    expect([error.code, error.source, error.details?.['dependency_code']]).toEqual([
      'deadline_exceeded',
      'gift',
      'gift_service_timeout',
    ]);
    expect(server.count()).toBe(0);
  });

  it('an attempt gets min(timeoutMs, deadline remaining − margin)', async () => {
    server.on('/slow', hang);
    const up = make({ retry: false });
    const settled = rejection(Deadline.run(1000, () => up.get('/slow'), clock));
    await until(() => server.count() === 1);
    await clock.tickAsync(950);
    const error = (await settled) as BreakwaterError;
    expect([error.code, error.details?.['timeout_ms']]).toEqual(['deadline_exceeded', 950]);
  });
});

describe('upstream: caller abort', () => {
  it('aborting in flight rejects with canceled and aborts the request', async () => {
    server.on('/slow', hang);
    const caller = new AbortController();
    const settled = rejection(make().get('/slow', { signal: caller.signal }));
    await until(() => server.count() === 1);
    caller.abort();
    const error = (await settled) as BreakwaterError;
    expect([error.code, error.source, error.outcome]).toEqual(['canceled', 'gift', 'failed']);
    await until(() => server.abandoned === 1);
  });

  it('an already aborted signal sends nothing', async () => {
    server.on('/gifts', json(200, {}));
    const error = (await rejection(make().get('/gifts', { signal: AbortSignal.abort() }))) as BreakwaterError;
    expect(error.code).toBe('canceled');
    expect(server.count()).toBe(0);
  });

  it("keeps an outer layer's own BreakwaterError abort reason as it is", async () => {
    server.on('/slow', hang);
    const outer = new BreakwaterError('deadline_exceeded', { source: 'tool' });
    const caller = new AbortController();
    const settled = rejection(make().get('/slow', { signal: caller.signal }));
    await until(() => server.count() === 1);
    caller.abort(outer);
    expect(await settled).toBe(outer);
  });
});
