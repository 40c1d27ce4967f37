import { fastify, type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import { handleError, installErrorRenderer, sendProblem, type ErrorRenderer } from './errors.js';
import { createAuthenticator, installEdge } from './index.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

let app: FastifyInstance;
afterEach(async () => app?.close());

interface LogLine {
  level: number;
  msg: string;
  code?: string;
  status?: number;
  err?: { message?: string; stack?: string };
}

/** An app whose log lines are kept, with the edge's handler on the whole app. */
function logged(): { app: FastifyInstance; lines: LogLine[] } {
  const lines: LogLine[] = [];
  app = fastify({
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
  });
  app.setErrorHandler(handleError);
  return { app, lines };
}

/** A renderer that answers `{ oops: { code, message } }` with a header of its own, and records each call. */
function recording(extra: Partial<ErrorRenderer> = {}) {
  const answered: Array<[string, string]> = [];
  const renderer: ErrorRenderer = {
    body(error, request, reply, cause) {
      void reply.header('x-renderer', 'mine');
      return {
        oops: { code: error.code, message: error.message },
        foreign: !(cause instanceof BreakwaterError),
      };
    },
    answered(error, request) {
      answered.push([error.code, request.url]);
    },
    ...extra,
  };
  return { renderer, answered };
}

const throwing = (error: unknown) => async () => {
  throw error;
};

describe('the edge error handler', () => {
  it('problem+json with Retry-After in whole seconds; 5xx logged as errors with the original error, 4xx at info', async () => {
    const { app, lines } = logged();
    app.get('/busy', throwing(new BreakwaterError('bulkhead_full', { retryAfterMs: 2_500 })));
    app.get('/bug', throwing(new Error('database password is hunter2')));
    app.get('/missing', throwing(new BreakwaterError('not_found', { message: 'There is no x.' })));

    const busy = await app.inject({ url: '/busy?token=abc' });
    expect([busy.statusCode, busy.headers['retry-after'], busy.headers['content-type']]).toEqual([
      503,
      '3',
      PROBLEM,
    ]);
    expect(busy.json()).toMatchObject({ code: 'bulkhead_full', retry_after_ms: 2_500, instance: '/busy' });

    const bug = await app.inject({ url: '/bug' });
    expect(bug.statusCode).toBe(500);
    expect(bug.json()).toMatchObject({
      code: 'internal_error',
      detail: 'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
    });
    expect(bug.body).not.toContain('hunter2');

    const missing = await app.inject({ url: '/missing' });
    expect([missing.statusCode, missing.json().detail]).toEqual([404, 'There is no x.']);

    const failures = lines.filter((l) => l.msg === 'request failed' || l.code !== undefined);
    expect(failures.map((l) => [l.level, l.msg, l.code])).toEqual([
      [50, 'request failed', 'bulkhead_full'],
      [50, 'request failed', 'internal_error'],
      [30, 'There is no x.', 'not_found'],
    ]);
    // The log has what the client may not see.
    expect(failures[1]!.err!.message).toBe('database password is hunter2');
    expect(failures[1]!.err!.stack).toContain('errors.test.ts');
  });

  it('a scope with a renderer: its body and headers; status and Retry-After still the edge’s; other routes keep problem+json', async () => {
    const { app } = logged();
    const { renderer, answered } = recording();
    app.get('/plain', throwing(new BreakwaterError('rate_limited', { retryAfterMs: 1_000 })));
    await app.register(async (scope) => {
      installErrorRenderer(scope, renderer);
      scope.get('/mine', throwing(new BreakwaterError('rate_limited', { retryAfterMs: 1_000 })));
      scope.post('/mine', async () => 'never');
    });

    const mine = await app.inject({ url: '/mine' });
    expect({
      status: mine.statusCode,
      retryAfter: mine.headers['retry-after'],
      type: mine.headers['content-type'],
      own: mine.headers['x-renderer'],
      body: mine.json(),
    }).toEqual({
      status: 429,
      retryAfter: '1',
      type: PROBLEM,
      own: 'mine',
      body: { oops: { code: 'rate_limited', message: expect.any(String) }, foreign: false },
    });
    // Fastify's own errors on those routes (malformed JSON) are mapped by the edge, then rendered.
    const malformed = await app.inject({
      method: 'POST',
      url: '/mine',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expect([malformed.statusCode, malformed.json()]).toEqual([
      400,
      { oops: { code: 'invalid_payload', message: expect.any(String) }, foreign: true },
    ]);
    expect(answered).toEqual([
      ['rate_limited', '/mine'],
      ['invalid_payload', '/mine'],
    ]);

    const plain = await app.inject({ url: '/plain' });
    expect([plain.statusCode, plain.headers['x-renderer'], plain.json().code]).toEqual([
      429,
      undefined,
      'rate_limited',
    ]);
  });

  it('a renderer’s read names a failure before the edge does; undefined leaves it to the edge', async () => {
    const { app } = logged();
    const teapot = new BreakwaterError('invalid_payload', { status: 418, message: 'A teapot.' });
    const { renderer } = recording({
      read: (cause) => (cause instanceof RangeError ? teapot : undefined),
    });
    await app.register(async (scope) => {
      installErrorRenderer(scope, renderer);
      scope.get('/range', throwing(new RangeError('x')));
      scope.get('/type', throwing(new TypeError('y')));
    });
    const range = await app.inject({ url: '/range' });
    expect([range.statusCode, range.json().oops]).toEqual([
      418,
      { code: 'invalid_payload', message: 'A teapot.' },
    ]);
    const type = await app.inject({ url: '/type' });
    expect([type.statusCode, type.json().oops.code]).toEqual([500, 'internal_error']);
  });

  it('the edge’s refusals on a scope with a renderer are rendered by it, with the edge’s WWW-Authenticate', async () => {
    app = fastify();
    app.setErrorHandler(handleError);
    installEdge(app, {
      authenticator: createAuthenticator({ mode: 'credentials', adminToken: 'x'.repeat(16) }),
    });
    const { renderer } = recording();
    await app.register(async (scope) => {
      installErrorRenderer(scope, renderer);
      scope.get('/v1/models', async () => 'models');
    });
    const refused = await app.inject({ url: '/v1/models', headers: { host: 'localhost' } });
    expect({
      status: refused.statusCode,
      challenge: refused.headers['www-authenticate'],
      body: refused.json(),
    }).toEqual({
      status: 401,
      challenge: 'Bearer realm="breakwater"',
      body: {
        oops: {
          code: 'unauthorized',
          message: 'This endpoint needs a credential: send Authorization: Bearer <API key or access token>.',
        },
        foreign: false,
      },
    });
  });

  it('an error after the reply went out is logged, not written, and not told to the renderer', async () => {
    const { app, lines } = logged();
    const { renderer, answered } = recording();
    await app.register(async (scope) => {
      installErrorRenderer(scope, renderer);
      scope.get('/late', async (_request, reply) => {
        // The head and part of a body are out (a stream), then the handler fails.
        reply.raw.writeHead(200, { 'content-type': 'text/plain' });
        reply.raw.write('partial');
        // What owns the stream ends it (here, after the error handler ran).
        setTimeout(() => reply.raw.end(), 20);
        throw new Error('late failure');
      });
    });
    const late = await app.inject({ url: '/late' });
    expect([late.statusCode, late.body]).toEqual([200, 'partial']);
    expect(answered).toEqual([]);
    expect(lines.filter((l) => l.msg === 'request failed').map((l) => l.err?.message)).toEqual([
      'late failure',
    ]);
  });

  it('installErrorRenderer without a renderer, and sendProblem, answer problem+json on a plain Fastify app', async () => {
    app = fastify();
    await app.register(async (scope) => {
      installErrorRenderer(scope);
      scope.get('/gone', throwing(new BreakwaterError('not_found', { message: 'Gone.' })));
      scope.get('/full', async (_request, reply) =>
        sendProblem(reply, new BreakwaterError('overloaded', { retryAfterMs: 4_001 })),
      );
    });
    const gone = await app.inject({ url: '/gone?x=1' });
    expect([gone.statusCode, gone.headers['content-type'], gone.json()]).toEqual([
      404,
      PROBLEM,
      expect.objectContaining({ code: 'not_found', detail: 'Gone.', instance: '/gone' }),
    ]);
    const full = await app.inject({ url: '/full' });
    expect([full.statusCode, full.headers['retry-after'], full.json().code]).toEqual([
      503,
      '5',
      'overloaded',
    ]);
  });
});
