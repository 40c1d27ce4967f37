import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { requestSignal } from './request-timeout.js';
import { harness, listen, type Harness } from './test-support.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

/** A promise that never settles: a handler stuck on a dependency that does not answer. */
const never = (): Promise<never> => new Promise(() => undefined);

describe('inbound request timeout (createServer requestTimeoutMs)', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('answers a route that never answers with 504 timeout (safe method) or outcome_unknown (write), and aborts its signal', async () => {
    const signals: AbortSignal[] = [];
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.route({
            method: ['GET', 'POST'],
            url: '/hang',
            handler: (request) => {
              signals.push(requestSignal(request));
              return never();
            },
          });
        },
      ],
    });
    const get = h.app.inject({ url: '/hang' });
    await h.clock.tickAsync(49);
    expect(signals.map((s) => s.aborted)).toEqual([false]);
    await h.clock.tickAsync(1);
    const got = await get;
    expect(got.statusCode).toBe(504);
    expect(got.headers['content-type']).toBe(PROBLEM);
    expect(got.json()).toMatchObject({
      code: 'timeout',
      status: 504,
      retryable: true,
      outcome: 'failed',
      detail: 'The server did not finish answering in time; try again shortly.',
    });

    const post = h.app.inject({ method: 'POST', url: '/hang', payload: { order: 1 } });
    await h.clock.tickAsync(50);
    const posted = await post;
    expect(posted.statusCode).toBe(504);
    expect(posted.json()).toMatchObject({ code: 'outcome_unknown', retryable: false, outcome: 'unknown' });
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(signals.map((s) => (s.reason as { code?: string }).code)).toEqual([
      'FST_ERR_HANDLER_TIMEOUT',
      'FST_ERR_HANDLER_TIMEOUT',
    ]);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('keeps the signal of a POST with a body alive until the answer (Fastify request.signal aborts once the body is read)', async () => {
    const seen: { beforeClose: boolean; afterClose: boolean }[] = [];
    h = await harness({
      requestTimeoutMs: 10_000,
      routes: [
        (app) => {
          app.post('/orders', async (request) => {
            const signal = requestSignal(request);
            const beforeClose = signal.aborted;
            // Node emits the request's 'close' once its body has been read: Fastify's request.signal aborts then.
            if (!request.raw.closed) await once(request.raw, 'close');
            seen.push({ beforeClose, afterClose: signal.aborted });
            return { ok: true, same: signal === requestSignal(request) };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const res = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ item: 'kettle', note: 'x'.repeat(2_000) }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, same: true });
    expect(seen).toEqual([{ beforeClose: false, afterClose: false }]);
    // The timer of the answered request is gone; nothing waits for 10 s.
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('aborts the signal with canceled when the client goes away before the answer, and drops the timer', async () => {
    const signals: AbortSignal[] = [];
    h = await harness({
      requestTimeoutMs: 10_000,
      routes: [
        (app) => {
          app.post('/slow', (request) => {
            signals.push(requestSignal(request));
            return never();
          });
        },
      ],
    });
    const base = await listen(h.app);
    const client = new AbortController();
    const call = fetch(`${base}/slow`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
      signal: client.signal,
    }).catch((error: unknown) => error);
    await expect.poll(() => signals.length).toBe(1);
    expect(signals[0]!.aborted).toBe(false);
    client.abort();
    await call;
    await expect.poll(() => signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toMatchObject({ code: 'canceled' });
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('does not cut a hijacked stream, and a signal asked for after the answer is not aborted', async () => {
    let late: AbortSignal | undefined;
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.get('/stream', (_request, reply) => {
            reply.hijack();
            reply.raw.writeHead(200, { 'content-type': 'text/plain' });
            reply.raw.write('first ');
          });
          app.get('/quick', async (request, reply) => {
            reply.raw.once('finish', () => (late = requestSignal(request)));
            return { ok: true };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const res = await fetch(`${base}/stream`);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first ');
    await h.clock.tickAsync(1_000);
    // Still open: the timeout found the reply hijacked and left it alone.
    await reader.cancel();

    expect((await fetch(`${base}/quick`)).status).toBe(200);
    await expect.poll(() => late).toBeDefined();
    expect(late!.aborted).toBe(false);
  });

  it('gives an answer stuck in its onSend hooks one more period, then cuts the connection', async () => {
    const signals: AbortSignal[] = [];
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.addHook('onSend', (request, _reply, _payload, done) => {
            signals.push(requestSignal(request));
            void done; // a store that never answers
          });
          app.post('/stuck', async () => ({ ok: true }));
        },
      ],
    });
    const base = await listen(h.app);
    const outcome = fetch(`${base}/stuck`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    }).then(
      (res) => `answered ${res.status}`,
      () => 'cut',
    );
    await expect.poll(() => signals.length).toBe(1);
    await h.clock.tickAsync(50);
    expect(signals[0]!.aborted).toBe(false); // the answer is on its way: no 504 over it
    await h.clock.tickAsync(50);
    expect(await outcome).toBe('cut');
    await expect.poll(() => signals[0]!.aborted).toBe(true);
    expect((signals[0]!.reason as { code?: string }).code).toBe('FST_ERR_HANDLER_TIMEOUT');
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it("a route's config.requestTimeoutMs replaces the server's; a bad one fails at startup", async () => {
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.get('/long', { config: { requestTimeoutMs: 500 } }, () => never());
        },
      ],
    });
    const long = h.app.inject({ url: '/long' });
    await h.clock.tickAsync(499);
    expect(h.clock.pendingTimers()).toBe(1);
    await h.clock.tickAsync(1);
    expect((await long).statusCode).toBe(504);
    await h.close();

    // Shorter than the server's: it still counts from the request's start.
    h = await harness({
      requestTimeoutMs: 500,
      routes: [
        (app) => {
          app.get('/short', { config: { requestTimeoutMs: 50 } }, () => never());
        },
      ],
    });
    let answered = false;
    const short = h.app.inject({ url: '/short' }).then((r) => {
      answered = true;
      return r;
    });
    await h.clock.tickAsync(49);
    expect(answered).toBe(false);
    await h.clock.tickAsync(1);
    expect((await short).statusCode).toBe(504);
    expect(h.clock.pendingTimers()).toBe(0);

    const bad = await harness({
      routes: [
        (app) => {
          app.get('/bad', { config: { requestTimeoutMs: 0 } }, () => ({}));
        },
      ],
    });
    await expect(bad.app.ready()).rejects.toThrow(
      'route GET /bad: config.requestTimeoutMs must be an integer in [1, 2147483647], got 0',
    );
    await bad.close().catch(() => undefined);
  });

  it('throws for a request that did not come through createServer', () => {
    expect(() => requestSignal({} as never)).toThrow(
      'requestSignal: this request was not received by a server made with createServer',
    );
  });
});
