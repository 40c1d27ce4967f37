import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, toProblem } from '../core/index.js';
import { createUpstream, type Upstream, type UpstreamOptions, type UpstreamResultEvent } from './index.js';
import { TestServer, json, rejection, text } from './test-support.js';
import { optionsErrorOf } from '../../test/support/options.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TestServer;
const upstreams: Upstream[] = [];

function make(options: Partial<UpstreamOptions> = {}): Upstream {
  const upstream = createUpstream({ name: 'gift', baseUrl: server.url, timeoutMs: 5000, ...options });
  upstreams.push(upstream);
  return upstream;
}

beforeEach(async () => {
  server = await TestServer.start();
});

afterEach(async () => {
  await server.close();
  await Promise.all(upstreams.splice(0).map((u) => u.close()));
});

describe('upstream: answers', () => {
  it('parses a JSON answer and reports status, headers, correlation id and attempts', async () => {
    server.on('/gifts', json(200, { gifts: ['kite'] }, { 'x-served-by': 'a' }));
    const response = await make().get('/gifts', { correlationId: 'corr-1' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ gifts: ['kite'] });
    expect(response.headers['x-served-by']).toBe('a');
    expect(response.correlationId).toBe('corr-1');
    expect(response.attempts).toBe(1);
  });

  it('parses +json types, returns other types as text and an empty body as undefined', async () => {
    server.on('/problem', json(200, { a: 1 }, {}, 'application/vnd.api+json; charset=utf-8'));
    server.on('/text', text(200, 'plain words'));
    server.on('/empty', (_req, res) => res.writeHead(204).end());
    const up = make();
    expect((await up.get('/problem')).body).toEqual({ a: 1 });
    expect((await up.get('/text')).body).toBe('plain words');
    const empty = await up.delete('/empty');
    expect([empty.status, empty.body]).toEqual([204, undefined]);
  });

  it('an answer that claims JSON but does not parse is a permanent upstream_error', async () => {
    server.on('/broken', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{'));
    const error = (await rejection(make().get('/broken'))) as BreakwaterError;
    expect([error.code, error.kind, error.details?.['reason']]).toEqual([
      'upstream_error',
      'permanent',
      'invalid_json',
    ]);
    expect(error.details?.['dependency_code']).toBe('gift_service_error');
  });

  it('an answer larger than maxResponseBytes is an upstream_error', async () => {
    server.on('/big', text(200, 'x'.repeat(2000)));
    const error = (await rejection(make({ maxResponseBytes: 1000 }).get('/big'))) as BreakwaterError;
    expect([error.code, error.details?.['reason'], error.details?.['max_response_bytes']]).toEqual([
      'upstream_error',
      'response_too_large',
      1000,
    ]);
  });
});

describe('upstream: what is sent', () => {
  it('sends a given correlation id, or a new UUIDv7 per request', async () => {
    server.on('/x', json(200, {}));
    const up = make();
    await up.get('/x', { correlationId: 'abc-123' });
    const generated = await up.get('/x');
    expect(server.seen[0]!.headers['x-correlation-id']).toBe('abc-123');
    expect(server.seen[1]!.headers['x-correlation-id']).toMatch(UUID_V7);
    expect(server.seen[1]!.headers['x-correlation-id']).toBe(generated.correlationId);
  });

  it('sends Idempotency-Key on writes only', async () => {
    server.on('/orders', json(201, { id: 'o1' }));
    const up = make();
    await up.post('/orders', { sku: 'kite' }, { idempotencyKey: 'key-1' });
    await up.put('/orders', { sku: 'kite' }, { idempotencyKey: 'key-2' });
    await up.patch('/orders', { sku: 'kite' }, { idempotencyKey: 'key-3' });
    await up.delete('/orders', { idempotencyKey: 'key-4' });
    await up.get('/orders', { idempotencyKey: 'key-5' });
    await up.post('/orders', { sku: 'kite' });
    expect(server.seen.map((s) => [s.method, s.headers['idempotency-key']])).toEqual([
      ['POST', 'key-1'],
      ['PUT', 'key-2'],
      ['PATCH', 'key-3'],
      ['DELETE', 'key-4'],
      ['GET', undefined],
      ['POST', undefined],
    ]);
  });

  it('sends the body as JSON, the query, the base path and the headers (request headers win)', async () => {
    server.on('/api/v1/search', json(200, { ok: true }));
    const up = make({
      baseUrl: `${server.url}/api/v1/`,
      headers: { Authorization: 'Bearer t', 'X-Team': 'base' },
    });
    await up.request({
      method: 'post',
      path: '/search',
      query: { q: 'kite', tag: ['a', 'b'], skip: undefined, n: 3 },
      body: { budget: 40 },
      headers: { 'x-team': 'mine' },
    });
    const seen = server.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/api/v1/search?q=kite&tag=a&tag=b&n=3');
    expect(JSON.parse(seen.body)).toEqual({ budget: 40 });
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers['accept']).toBe('application/json');
    expect(seen.headers['authorization']).toBe('Bearer t');
    expect(seen.headers['x-team']).toBe('mine');
  });

  it('rejects bad request arguments with a TypeError and sends nothing', async () => {
    const up = make();
    await expect(up.get('no-slash')).rejects.toThrow(TypeError);
    await expect(up.request({ method: 'GE T', path: '/x' })).rejects.toThrow(TypeError);
    await expect(up.post('/x', { n: 1n })).rejects.toThrow(TypeError);
    expect(server.count()).toBe(0);
  });
});

describe('upstream: permanent failures', () => {
  it('a 4xx is upstream_error with the problem body, not retried and not counted by the breaker', async () => {
    const problem = { type: 'urn:gift:bad-budget', title: 'Budget too low', status: 422 };
    server.on('/gifts', json(422, problem, {}, 'application/problem+json'));
    const up = make({ breaker: { consecutiveFailures: 2 } });
    for (let i = 0; i < 3; i++) {
      const error = (await rejection(up.get('/gifts', { correlationId: `c${i}` }))) as BreakwaterError;
      expect(error).toBeInstanceOf(BreakwaterError);
      expect([error.code, error.kind, error.status, error.source, error.outcome]).toEqual([
        'upstream_error',
        'permanent',
        502,
        'gift',
        'failed',
      ]);
      expect(error.message).toBe('The gift service rejected the request.');
      expect(error.details).toEqual({
        reason: 'http_422',
        written: true,
        upstream_status: 422,
        upstream_body: problem,
        dependency_code: 'gift_service_error',
        correlation_id: `c${i}`,
      });
    }
    expect(server.count()).toBe(3);
    expect(up.breaker!.state().state).toBe('closed');
  });

  it("a 4xx's short problem detail is quoted in the message; a long or multi-line one is not", async () => {
    server.on(
      '/orders',
      json(404, { code: 'product_not_found', detail: 'No product has the id "zzz"' }),
      json(400, { detail: 'x'.repeat(201) }),
      json(400, { detail: 'line one\nline two' }),
      json(400, { message: 'Quantity must be at least 1.' }),
    );
    const up = make({ errors: { error: { sentence: 'The shop could not accept this order.' } } });
    const messages: string[] = [];
    for (let i = 0; i < 4; i++) {
      messages.push(((await rejection(up.post('/orders', {}))) as BreakwaterError).message);
    }
    expect(messages).toEqual([
      'The shop could not accept this order: No product has the id "zzz".',
      'The shop could not accept this order.',
      'The shop could not accept this order.',
      'The shop could not accept this order: Quantity must be at least 1.',
    ]);
  });

  it('a 401 from the upstream is upstream_error, not unauthorized towards our caller', async () => {
    server.on('/x', json(401, { title: 'bad token' }));
    const error = (await rejection(make().get('/x'))) as BreakwaterError;
    expect([error.code, error.details?.['upstream_status']]).toEqual(['upstream_error', 401]);
  });

  it('uses the dependency-specific code and sentence from options.errors', async () => {
    server.on('/x', json(400, { title: 'nope' }));
    const up = make({
      errors: {
        error: { code: 'gift_request_rejected', sentence: 'The gift service refused this request.' },
      },
    });
    const error = (await rejection(up.get('/x'))) as BreakwaterError;
    expect([error.message, error.details?.['dependency_code']]).toEqual([
      'The gift service refused this request.',
      'gift_request_rejected',
    ]);
    const problem = toProblem(error);
    expect([problem.code, problem.dependency_code, problem.detail]).toEqual([
      'upstream_error',
      'gift_request_rejected',
      'The gift service refused this request.',
    ]);
  });
});

describe('upstream: bugs', () => {
  it('a header undici refuses is internal_error: not retried, not counted by the breaker', async () => {
    server.on('/x', json(200, {}));
    const up = make({ breaker: { consecutiveFailures: 1 } });
    const error = (await rejection(up.get('/x', { headers: { 'x-note': 'a\r\nb' } }))) as BreakwaterError;
    expect([error.code, error.kind, error.source]).toEqual(['internal_error', 'fatal', 'gift']);
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(server.count()).toBe(0);
    expect(up.breaker!.state().state).toBe('closed');
  });
});

describe('upstream: lifecycle and events', () => {
  it('emits one result event per request', async () => {
    server.on('/ok', json(200, {}));
    server.on('/bad', json(404, {}));
    const up = make();
    const events: UpstreamResultEvent[] = [];
    up.onResult((e) => events.push(e));
    await up.get('/ok', { query: { a: 1 } });
    await rejection(up.post('/bad', {}));
    expect(events.map(({ durationMs: _, ...e }) => e)).toEqual([
      { name: 'gift', method: 'GET', path: '/ok', status: 200, code: undefined, attempts: 1 },
      { name: 'gift', method: 'POST', path: '/bad', status: 404, code: 'upstream_error', attempts: 1 },
    ]);
    expect(events.every((e) => e.durationMs >= 0)).toBe(true);
  });

  it('after close(), requests reject with upstream_unavailable and nothing is sent', async () => {
    server.on('/ok', json(200, {}));
    const up = make();
    await up.get('/ok');
    await up.close();
    await up.close();
    const error = (await rejection(up.get('/ok'))) as BreakwaterError;
    expect([error.code, error.details?.['reason'], error.source]).toEqual([
      'upstream_unavailable',
      'upstream_closed',
      'gift',
    ]);
    expect(server.count()).toBe(1);
  });

  it('validates options at construction, naming the option', () => {
    const base = { name: 'gift', baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000 };
    expect(() => createUpstream({ ...base, name: 'Gift Service' })).toThrow(
      /createUpstream: name must be a snake_case name/,
    );
    expect(() => createUpstream({ ...base, baseUrl: 'ftp://x' })).toThrow(/createUpstream: baseUrl/);
    expect(() => createUpstream({ ...base, baseUrl: 'http://u:p@x' })).toThrow(/without credentials/);
    expect(() => createUpstream({ ...base, timeoutMs: 0 })).toThrow(
      'createUpstream: timeoutMs must be a finite number > 0, got 0',
    );
    expect(() => createUpstream({ ...base, breaker: { consecutiveFailures: 0 } })).toThrow(
      /breaker.consecutiveFailures/,
    );
    expect(() => createUpstream({ ...base, errors: { unavailable: { code: 'Gift Down' } } })).toThrow(
      /errors.unavailable.code must be a snake_case string/,
    );
    expect(() => createUpstream({ ...base, bulkhead: { maxConcurrent: 0 } })).toThrow(
      'createUpstream: bulkhead.maxConcurrent must be an integer >= 1, got 0',
    );
  });

  it("reports every bad option at once, the policies' own under their option, in one OptionsError", () => {
    const error = optionsErrorOf(() =>
      createUpstream({
        name: 'Gift',
        baseUrl: 'http://user:pw@gift.example/api',
        timeoutMs: 0,
        bulkhead: { maxConcurrent: 0, maxQueue: -1 },
        retry: { maxAttempts: 0 },
        breaker: { consecutiveFailures: 2.5, openMs: -1, shared: { store: {} as never } },
        headers: { 'x-key': 'a\nb' },
        errors: { busy: { code: 'Busy', sentence: ' ' } },
        dispatcher: {} as never,
      }),
    );
    expect(error.code).toBe('invalid_options');
    expect(error.owner).toBe('createUpstream');
    expect(error.message).toBe(
      [
        "createUpstream: name must be a snake_case name such as 'gift', got 'Gift'",
        'timeoutMs must be a finite number > 0, got 0',
        "errors.busy.code must be a snake_case string, got 'Busy'",
        "errors.busy.sentence must be a non-empty string, got ' '",
        'dispatcher must be an undici Dispatcher (Agent, Pool, …), got an object',
        "baseUrl must be a URL without credentials (send them in headers), got 'http://gift.example'",
        "headers.x-key must be a string without CR, LF or NUL, got 'a\nb'",
        'bulkhead.maxConcurrent must be an integer >= 1, got 0',
        'bulkhead.maxQueue must be an integer >= 0, got -1',
        'retry.maxAttempts must be an integer >= 1 or Infinity, got 0',
        'breaker.consecutiveFailures must be an integer >= 1, got 2.5',
        'breaker.openMs must be a finite number > 0, got -1',
        'breaker.shared.store must be a CounterStore (store.counters), got an object',
      ].join('; '),
    );
  });
});
