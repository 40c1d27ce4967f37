/**
 * What the caller is told, by what happened (docs/upstream.md, "Errors"): every class of failure through
 * `createUpstream` against a real local HTTP server, with the library's defaults (named after the upstream)
 * and with an application's overrides. Time is the fake clock's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../core/index.js';
import { Deadline, FakeClock } from '../core/index.js';
import { constantBackoff } from '../policy/index.js';
import { createUpstream, type Upstream, type UpstreamOptions } from './index.js';
import { TestServer, hang, json, rejection, reset, text, until } from './test-support.js';

let server: TestServer;
let clock: FakeClock;
const upstreams: Upstream[] = [];

/** The `gift` upstream on the fake clock, sending every request once unless a test says otherwise. */
function make(options: Partial<UpstreamOptions> = {}): Upstream {
  const upstream = createUpstream({
    name: 'gift',
    baseUrl: server.url,
    timeoutMs: 4000,
    retry: false,
    clock,
    ...options,
  });
  upstreams.push(upstream);
  return upstream;
}

/** What a caller (and through a tool, the model) reads of an error. */
function told(error: unknown): Record<string, unknown> {
  const e = error as BreakwaterError;
  return {
    code: e.code,
    kind: e.kind,
    outcome: e.outcome,
    retryAfterMs: e.retryAfterMs,
    dependency_code: e.details?.['dependency_code'],
    message: e.message,
  };
}

const LATE = 'The gift service did not answer in time; try again shortly.';
const FAILING = 'The gift service is not working right now; try again shortly.';
const LOST =
  'The request to the gift service was sent but no confirmation came back, so it may or may not have taken effect; check its status before trying again.';

beforeEach(async () => {
  server = await TestServer.start();
  clock = new FakeClock();
});

afterEach(async () => {
  await server.close();
  await Promise.all(upstreams.splice(0).map((u) => u.close()));
});

describe('LATE: the attempt or the deadline ran out', () => {
  it('a hung GET: timeout at 4 000 ms, gift_service_timeout, no wait', async () => {
    server.on('/gifts', hang);
    const settled = rejection(make().get('/gifts'));
    await until(() => server.count() === 1);
    await clock.tickAsync(4000);
    expect(told(await settled)).toEqual({
      code: 'timeout',
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs: undefined,
      dependency_code: 'gift_service_timeout',
      message: LATE,
    });
  });

  it('the deadline runs out first: deadline_exceeded, the same class', async () => {
    server.on('/gifts', hang);
    const settled = rejection(Deadline.run(1000, () => make().get('/gifts'), clock));
    await until(() => server.count() === 1);
    await clock.tickAsync(950);
    expect(told(await settled)).toMatchObject({
      code: 'deadline_exceeded',
      dependency_code: 'gift_service_timeout',
      message: LATE,
    });
  });

  it('an answer slower than the attempt limit never arrives: two 4 s attempts of a 5 s answer, within 10 s', async () => {
    // The server answers after 5 s on the same fake clock; the per-attempt limit (4 s) is kept on the last
    // attempt too (docs/upstream.md, "Deadlines and the last attempt").
    server.on('/gifts', (_req, res) => {
      clock.setTimeout(() => {
        if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{"gifts":[]}');
      }, 5000);
    });
    const up = make({ retry: { maxAttempts: 2, backoff: constantBackoff(0) } });
    const started = clock.now();
    const settled = rejection(Deadline.run(10_000, () => up.get('/gifts'), clock));
    await until(() => server.count() === 1);
    await clock.tickAsync(4000);
    await until(() => server.count() === 2);
    await clock.tickAsync(4000);
    const error = await settled;
    expect([told(error).code, told(error).message, clock.now() - started, server.count()]).toEqual([
      'timeout',
      LATE,
      8000,
      2,
    ]);
  });
});

describe('OPEN: the breaker is open', () => {
  it("circuit_open with the breaker's remaining open time, said in the sentence", async () => {
    server.on('/gifts', json(500, {}));
    const up = make({ breaker: { consecutiveFailures: 2, openMs: 30_000 } });
    for (let i = 0; i < 2; i++) await rejection(up.get('/gifts'));
    await clock.tickAsync(1000);
    expect(told(await rejection(up.get('/gifts')))).toEqual({
      code: 'circuit_open',
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs: 29_000,
      dependency_code: 'gift_service_unavailable',
      message:
        'The gift service is temporarily unavailable after repeated failures; try again in about 29 seconds.',
    });
    expect(server.count()).toBe(2);
  });
});

describe('BUSY: our bulkhead is full, or the upstream answered 429 / 503', () => {
  it('bulkhead full: bulkhead_full, gift_service_busy, nothing sent, no wait known', async () => {
    server.on('/gifts', hang);
    const up = make({ bulkhead: { maxConcurrent: 1, maxQueue: 0 } });
    const caller = new AbortController();
    const first = rejection(up.get('/gifts', { signal: caller.signal }));
    await until(() => server.count() === 1);
    expect(told(await rejection(up.get('/gifts')))).toEqual({
      code: 'bulkhead_full',
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs: undefined,
      dependency_code: 'gift_service_busy',
      message: 'The gift service is busy right now; try again shortly.',
    });
    expect(server.count()).toBe(1);
    caller.abort();
    await first;
  });

  it.each([
    [429, '7', 7000, 'try again in about 7 seconds'],
    [503, '20', 20_000, 'try again in about 20 seconds'],
    [503, undefined, undefined, 'try again shortly'],
  ])('HTTP %i with Retry-After %s: the wait is the one the service gave', async (status, after, ms, hint) => {
    server.on('/gifts', json(status, {}, after === undefined ? {} : { 'retry-after': after }));
    const error = await rejection(make().get('/gifts'));
    expect(told(error)).toEqual({
      code: 'upstream_unavailable',
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs: ms,
      dependency_code: 'gift_service_busy',
      message: `The gift service is busy right now; ${hint}.`,
    });
    expect((error as BreakwaterError).details?.['upstream_status']).toBe(status);
  });

  it('a POST answered 503 was not processed: outcome failed, busy, not unknown', async () => {
    server.on('/orders', json(503, {}, { 'retry-after': '5' }));
    expect(told(await rejection(make().post('/orders', { sku: 'kite' })))).toMatchObject({
      code: 'upstream_unavailable',
      outcome: 'failed',
      retryAfterMs: 5000,
      dependency_code: 'gift_service_busy',
      message: 'The gift service is busy right now; try again in about 5 seconds.',
    });
  });
});

describe('FAILING: a 500/502, a reset or refused connection', () => {
  it.each([500, 502])('HTTP %i to a GET: upstream_unavailable, gift_service_failing', async (status) => {
    server.on('/gifts', text(status, 'oops'));
    expect(told(await rejection(make().get('/gifts')))).toEqual({
      code: 'upstream_unavailable',
      kind: 'transient',
      outcome: 'failed',
      retryAfterMs: undefined,
      dependency_code: 'gift_service_failing',
      message: FAILING,
    });
  });

  it('a 500 that says when to come back keeps that wait', async () => {
    server.on('/gifts', json(500, {}, { 'retry-after': '3' }));
    expect(told(await rejection(make().get('/gifts')))).toMatchObject({
      retryAfterMs: 3000,
      dependency_code: 'gift_service_failing',
      message: 'The gift service is not working right now; try again in about 3 seconds.',
    });
  });

  it('a GET whose connection is reset: failing, not "in time"', async () => {
    server.on('/gifts', reset);
    expect(told(await rejection(make().get('/gifts')))).toMatchObject({
      code: 'upstream_unavailable',
      outcome: 'failed',
      dependency_code: 'gift_service_failing',
      message: FAILING,
    });
  });

  it('connection refused: failing, and the request provably never left', async () => {
    const error = await rejection(make({ baseUrl: 'http://127.0.0.1:1' }).post('/orders', {}));
    expect(told(error)).toMatchObject({
      code: 'upstream_unavailable',
      outcome: 'failed',
      dependency_code: 'gift_service_failing',
      message: FAILING,
    });
    expect((error as BreakwaterError).details?.['written']).toBe(false);
  });
});

describe('REFUSED: the upstream rejected the request', () => {
  it('a 422 with a problem detail: upstream_error, the detail quoted, no wait even with Retry-After', async () => {
    server.on('/gifts', json(422, { detail: 'Budget must be positive' }, { 'retry-after': '9' }));
    expect(told(await rejection(make().get('/gifts')))).toEqual({
      code: 'upstream_error',
      kind: 'permanent',
      outcome: 'failed',
      retryAfterMs: undefined,
      dependency_code: 'gift_service_error',
      message: 'The gift service rejected the request: Budget must be positive.',
    });
  });

  it('an answer that cannot be used is not called a rejection', async () => {
    server.on('/gifts', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{'));
    expect(told(await rejection(make().get('/gifts')))).toMatchObject({
      code: 'upstream_error',
      dependency_code: 'gift_service_error',
      message: 'The gift service could not be used for this request; retrying it will not help.',
    });
  });
});

describe('LOST: a write that may have taken effect', () => {
  it('a POST reset after it was written: outcome_unknown, no wait', async () => {
    server.on('/orders', reset);
    expect(told(await rejection(make().post('/orders', { sku: 'kite' })))).toEqual({
      code: 'outcome_unknown',
      kind: 'transient',
      outcome: 'unknown',
      retryAfterMs: undefined,
      dependency_code: 'gift_outcome_unknown',
      message: LOST,
    });
  });

  it('a POST answered 500 (the origin may have acted), even with a Retry-After', async () => {
    server.on('/orders', json(500, {}, { 'retry-after': '4' }));
    expect(told(await rejection(make().post('/orders', {})))).toMatchObject({
      code: 'outcome_unknown',
      outcome: 'unknown',
      retryAfterMs: undefined,
      message: LOST,
    });
  });

  it('a POST cut off by the attempt limit', async () => {
    server.on('/orders', hang);
    const settled = rejection(make().post('/orders', {}));
    await until(() => server.count() === 1);
    await clock.tickAsync(4000);
    expect(told(await settled)).toMatchObject({ code: 'outcome_unknown', outcome: 'unknown', message: LOST });
  });
});

describe('overrides: an application says it in its own words, per class', () => {
  const errors = {
    timeout: { code: 'shop_slow', sentence: 'The shop did not answer in time; try again shortly.' },
    open: { code: 'shop_down', sentence: 'The shop is down after repeated failures; try again shortly.' },
    busy: { code: 'shop_busy', sentence: 'The shop is overloaded right now; try again shortly.' },
    unavailable: { code: 'shop_broken', sentence: 'The shop is failing right now; try again shortly.' },
    error: { code: 'shop_said_no', sentence: 'The shop could not accept this order.' },
    unknown: {
      code: 'shop_unsure',
      sentence: 'The shop may or may not have taken the order; check it first.',
    },
  };

  it('each class gets its own code and sentence, with the wait where one is known', async () => {
    server.on('/slow', hang);
    server.on('/busy', json(429, {}, { 'retry-after': '2' }));
    server.on('/broken', json(500, {}));
    server.on('/no', json(400, { detail: 'Unknown product' }));
    server.on('/order', reset);
    const up = make({ errors, breaker: { consecutiveFailures: 4, openMs: 10_000 } });

    const refused = await rejection(up.get('/no'));
    const slow = rejection(up.get('/slow'));
    await until(() => server.count() === 2);
    await clock.tickAsync(4000);
    const seen = [
      await slow,
      await rejection(up.get('/busy')),
      await rejection(up.get('/broken')),
      refused,
      await rejection(up.post('/order', {})),
    ];
    // Four counted failures (the timeout, the 429, the 500, the reset; the 400 is not one): open.
    seen.push(await rejection(up.get('/broken')));
    expect(
      seen.map((e) => [(e as BreakwaterError).details?.['dependency_code'], (e as Error).message]),
    ).toEqual([
      ['shop_slow', 'The shop did not answer in time; try again shortly.'],
      ['shop_busy', 'The shop is overloaded right now; try again in about 2 seconds.'],
      ['shop_broken', 'The shop is failing right now; try again shortly.'],
      ['shop_said_no', 'The shop could not accept this order: Unknown product.'],
      ['shop_unsure', 'The shop may or may not have taken the order; check it first.'],
      ['shop_down', 'The shop is down after repeated failures; try again in about 10 seconds.'],
    ]);
  });

  it('a given `error` sentence is used for an unusable answer too', async () => {
    server.on('/gifts', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{'));
    expect(((await rejection(make({ errors }).get('/gifts'))) as Error).message).toBe(
      'The shop could not accept this order.',
    );
  });

  it('a bad override is refused at construction, naming it', () => {
    const base = { name: 'gift', baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000 };
    expect(() => createUpstream({ ...base, errors: { busy: { code: 'Shop Busy' } } })).toThrow(
      /errors.busy.code must be a snake_case string/,
    );
    expect(() => createUpstream({ ...base, errors: { open: { sentence: ' ' } } })).toThrow(
      /errors.open.sentence must be a non-empty string/,
    );
  });
});
