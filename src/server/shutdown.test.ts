import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeGracefully } from './lifecycle.js';
import { requestSignal } from './request-timeout.js';
import { SseReader, gate, harness, listen, untilEvents, type Harness } from './test-support.js';

describe('closeGracefully', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('closes a connection that never carried a request at once instead of waiting out the grace', async () => {
    h = await harness({});
    const base = new URL(await listen(h.app));
    // What undici's spare connection looks like: connected, nothing sent.
    const spare = connect({ host: base.hostname, port: Number(base.port) });
    await new Promise<void>((resolve) => spare.once('connect', () => resolve()));
    const closedByServer = new Promise<void>((resolve) => spare.once('close', () => resolve()));
    let result: { forced: boolean } | undefined;
    const closing = closeGracefully(h.app, { graceMs: 60_000 }).then((r) => (result = r));
    await closedByServer;
    await closing;
    expect(result).toEqual({ forced: false });
  });

  it('lets an in-flight request finish, answers new ones 503 problem+json, then closes', async () => {
    const release = gate();
    let entered = false;
    h = await harness({
      routes: [
        (app) => {
          app.get('/slow', async () => {
            entered = true;
            await release.promise;
            return { finished: true };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const slow = fetch(`${base}/slow`);
    await vi.waitFor(() => expect(entered).toBe(true));

    let result: { forced: boolean } | undefined;
    const closing = closeGracefully(h.app, { graceMs: 10_000 }).then((r) => (result = r));
    const late = await h.app.inject({ url: '/healthz' });
    expect(late.statusCode).toBe(503);
    expect(late.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(late.headers.connection).toBe('close');
    expect(late.json()).toMatchObject({
      code: 'overloaded',
      detail: 'The server is shutting down; try again shortly.',
    });
    // New connections are refused once the listener is closed.
    await vi.waitFor(() => expect(h.app.server.listening).toBe(false));
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    expect(result).toBeUndefined();

    release.open();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toEqual({ finished: true });
    await closing;
    expect(result).toEqual({ forced: false });
  });

  it('cuts the connections still open after graceMs and reports forced', async () => {
    const signals: AbortSignal[] = [];
    h = await harness({
      routes: [
        (app) => {
          app.get('/hang', (request) => {
            signals.push(requestSignal(request));
            return new Promise(() => undefined);
          });
        },
      ],
    });
    const base = await listen(h.app);
    const hung = fetch(`${base}/hang`).then(
      () => 'answered',
      () => 'cut',
    );
    await vi.waitFor(() => expect(signals).toHaveLength(1));

    let result: { forced: boolean } | undefined;
    const closing = closeGracefully(h.app, { graceMs: 5_000 }).then((r) => (result = r));
    await h.clock.tickAsync(4_999);
    expect(result).toBeUndefined();
    await h.clock.tickAsync(1);
    await closing;
    expect(result).toEqual({ forced: true });
    expect(await hung).toBe('cut');
    expect(signals[0]!.aborted).toBe(true);
  });

  it('ends SSE streams with a final comment so clients reconnect elsewhere', async () => {
    h = await harness();
    const base = await listen(h.app);
    const id = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, id, 2);
    const res = await fetch(`${base}/jobs/${id}/events`);
    const reader = new SseReader(res);
    expect((await reader.events(2)).map((f) => f.id)).toEqual(['1', '2']);

    const result = await closeGracefully(h.app, { graceMs: 10_000 });
    expect(result).toEqual({ forced: false });
    expect(await reader.rest()).toEqual([{ comments: ['shutting down; reconnect with Last-Event-ID'] }]);
    expect(reader.ended).toBe(true);
    expect(h.liveSubscriptions()).toBe(0);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('rejects a negative graceMs', async () => {
    h = await harness();
    await expect(closeGracefully(h.app, { graceMs: -1 })).rejects.toThrow(
      new RangeError('closeGracefully: graceMs must be a finite number >= 0, got -1'),
    );
  });
});

describe('malformed HTTP', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('is answered 400 problem+json on the raw socket', async () => {
    h = await harness();
    const base = new URL(await listen(h.app));
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(base.port), base.hostname, () => {
        socket.write('NOT HTTP AT ALL\r\n\r\n');
      });
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, body] = reply.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toContain('Content-Type: application/problem+json; charset=utf-8');
    expect(JSON.parse(body!)).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      detail: 'The request is not valid HTTP.',
    });
  });
});
