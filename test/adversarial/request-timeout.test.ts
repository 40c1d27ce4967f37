/**
 * The inbound request timeout of `createServer` (`src/server/request-timeout.ts`) under hostile clients, over
 * real sockets: slow bodies, keep-alive, disconnects, answers on the deadline, hijacked streams, the
 * idempotency route, webhooks, many requests and a forced shutdown. The server's clock is a FakeClock (the
 * harness's `h.clock`), so every timeout fires only when a test moves it.
 *
 * Cases that were bugs when this file was written say so in their comment.
 */
import { connect, type Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Client, Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock, sleep } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { registerIdempotency } from '../../src/operations/index.js';
import {
  closeGracefully,
  createServer,
  releaseRequestTimeout,
  requestSignal,
} from '../../src/server/index.js';
import { gate, harness, listen, SseReader, type Harness } from '../../src/server/test-support.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import { createWebhookIngress, defineWebhookSource, stripeVerifier } from '../../src/webhooks/index.js';

const PROBLEM = 'application/problem+json; charset=utf-8';
const TIMEOUT_MS = 1_000;

/** A promise that never settles: a handler stuck on a dependency that does not answer. */
const never = (): Promise<never> => new Promise(() => undefined);
/** Real time, for sockets to deliver bytes (never for the server's timeout: that is `h.clock`). */
const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const codeOf = (signal: AbortSignal | undefined): unknown => (signal?.reason as { code?: unknown })?.code;
/** Waits until the server holds `count` timers on `clock`: the request arrived (its timer is set in onRequest). */
const untilTimers = async (clock: FakeClock, count: number): Promise<void> => {
  await expect.poll(() => clock.pendingTimers(), { timeout: 3_000 }).toBe(count);
};

/** One HTTP/1.1 response as read off the wire. */
interface Wire {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw TCP client: writes bytes as given and parses every response the server sends back. */
class RawClient {
  private data = '';
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (this.data += chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(base: string): Promise<RawClient> {
    const url = new URL(base);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    return new RawClient(socket);
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** Every complete response received so far, in order. Throws on bytes that are not HTTP/1.1. */
  responses(): Wire[] {
    const out: Wire[] = [];
    let rest = this.data;
    for (;;) {
      const end = rest.indexOf('\r\n\r\n');
      if (end < 0) break;
      const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
      const match = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!);
      if (match === null) throw new Error(`not an HTTP response: ${JSON.stringify(rest.slice(0, 80))}`);
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < end + 4 + length) break;
      out.push({ status: Number(match[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
      rest = rest.slice(end + 4 + length);
    }
    return out;
  }

  async untilResponses(count: number): Promise<Wire[]> {
    await expect.poll(() => this.responses().length, { timeout: 3_000 }).toBeGreaterThanOrEqual(count);
    return this.responses();
  }
}

/** A route plugin that records each request it sees (and its signal) and hangs while `hang(request)` holds. */
function recordingRoutes(options: { hang?: (request: FastifyRequest) => boolean } = {}) {
  const seen: { id: string; request: FastifyRequest; signal: AbortSignal }[] = [];
  const routes = (app: FastifyInstance): void => {
    app.route({
      method: ['GET', 'POST'],
      url: '/work/:id',
      handler: async (request) => {
        const id = (request.params as { id: string }).id;
        const signal = requestSignal(request);
        seen.push({ id, request, signal });
        if (options.hang?.(request) === true) await never();
        return { id, body: request.body ?? null, aborted: signal.aborted };
      },
    });
  };
  const signalOf = (id: string): AbortSignal | undefined => seen.find((s) => s.id === id)?.signal;
  return { seen, routes, signalOf };
}

/** Collects pino lines at `warn` and above. */
function logSink() {
  const lines: { level: number; msg: string }[] = [];
  return {
    lines,
    logger: {
      level: 'warn',
      stream: {
        write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }),
      },
    },
  };
}

const postHead = (path: string, length: number, extra = ''): string =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('request timeout: hostile clients over real sockets', () => {
  let h: Harness | undefined;
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await h?.close();
    h = undefined;
  });

  describe('a body dribbled slower than requestTimeoutMs', () => {
    it('is answered once while the body is still arriving, the handler never runs, and no timer stays', async () => {
      const rec = recordingRoutes();
      h = await harness({ requestTimeoutMs: TIMEOUT_MS, routes: [rec.routes] });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      const body = '{"order":"kettle","qty":1}';
      client.write(postHead('/work/slow', body.length) + body.slice(0, 5));
      await untilTimers(h.clock, 1);
      client.write(body.slice(5, 9));
      await h.clock.tickAsync(TIMEOUT_MS - 1);
      expect(client.responses()).toEqual([]);
      await h.clock.tickAsync(1);
      const [answer] = await client.untilResponses(1);
      expect(answer!.status).toBeGreaterThanOrEqual(400);
      expect(answer!.headers['content-type']).toBe(PROBLEM);
      expect(h.clock.pendingTimers()).toBe(0);
      // The rest of the body arrives after the answer: the handler still never runs.
      client.write(body.slice(9));
      await wait(30);
      expect(rec.seen).toEqual([]);
      expect(client.responses()).toHaveLength(1);
    });

    // A POST whose body never finished arriving: nothing ran, so it is 408 `timeout` (send it again), not the
    // 504 `outcome_unknown` of a request that may have taken effect, with `Connection: close`, and exactly one
    // response (before the fix: 504 on a kept-alive socket, then Node's own request timeout wrote a stray raw
    // 408 on the same connection). Node's checks are sped up here: headersTimeout 150 ms, check every 50 ms.
    it('a body that never arrives gets one answer: 408 timeout with Connection: close', async () => {
      const rec = recordingRoutes();
      h = await harness({ requestTimeoutMs: 200, routes: [rec.routes] });
      (h.app.server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval = 50;
      h.app.server.headersTimeout = 150;
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead('/work/stuck', 20) + '{"a":');
      await untilTimers(h.clock, 1);
      await h.clock.tickAsync(200);
      await client.closed;
      expect(client.responses().map((r) => [r.status, r.headers.connection])).toEqual([[408, 'close']]);
      expect(rec.seen).toEqual([]);
    });

    it('webhook route: 408 timeout with Retry-After and Connection: close, the server closes the socket, nothing stored', async () => {
      const clock = new FakeClock();
      const store = await openSqliteStore({ path: ':memory:' });
      const jobs = createJobs({ store, clock, owner: 'w1' });
      const ingress = createWebhookIngress({
        store,
        sources: [
          defineWebhookSource({
            name: 'payments',
            verifier: stripeVerifier({ secrets: ['whsec_test'] }),
            schema: z.object({ id: z.string(), type: z.string() }),
          }),
        ],
      });
      const app = createServer({
        jobs,
        store,
        routes: [ingress.routes],
        requestTimeoutMs: TIMEOUT_MS,
        clock,
      });
      cleanups.push(() => store.close());
      cleanups.push(() => app.close());
      const client = await RawClient.open(await listen(app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead('/webhooks/payments', 1_000, 'Stripe-Signature: t=1,v1=00\r\n') + '{"id":');
      await untilTimers(clock, 1);
      await clock.tickAsync(TIMEOUT_MS);
      await client.closed;
      const answers = client.responses();
      expect(answers).toHaveLength(1);
      expect(answers[0]).toMatchObject({
        status: 408,
        headers: { connection: 'close', 'retry-after': '1', 'content-type': PROBLEM },
      });
      expect(JSON.parse(answers[0]!.body)).toMatchObject({
        code: 'timeout',
        status: 408,
        detail: 'The webhook was not received and stored in time, so it was not accepted; send it again.',
      });
      expect(client.socket.readableEnded).toBe(true);
      expect(await store.listWebhooks({})).toEqual([]);
      expect(clock.pendingTimers()).toBe(0);
    });
  });

  describe('keep-alive: many requests on one connection', () => {
    it('answers each request with its own answer; a timeout or a close of one never aborts the signal of another', async () => {
      const hangs = new Set(['1', '4', '5', '9']);
      const rec = recordingRoutes({ hang: (r) => hangs.has((r.params as { id: string }).id) });
      h = await harness({ requestTimeoutMs: TIMEOUT_MS, routes: [rec.routes] });
      let connections = 0;
      h.app.server.on('connection', () => connections++);
      const client = new Client(await listen(h.app), { pipelining: 1 });
      cleanups.push(() => client.destroy());

      const answers: { id: string; status: number; body: Record<string, unknown> }[] = [];
      for (let i = 0; i < 12; i++) {
        const id = String(i);
        const pending = client.request({
          path: `/work/${id}`,
          method: i % 2 === 0 ? 'POST' : 'GET',
          ...(i % 2 === 0
            ? {
                body: JSON.stringify({ n: i, pad: 'x'.repeat(3_000) }),
                headers: { 'content-type': 'application/json' },
              }
            : {}),
        });
        if (hangs.has(id)) {
          await expect.poll(() => rec.signalOf(id)).toBeDefined();
          await h.clock.tickAsync(TIMEOUT_MS - 1);
          expect(rec.signalOf(id)!.aborted).toBe(false);
          await h.clock.tickAsync(1);
        }
        const res = await pending;
        answers.push({
          id,
          status: res.statusCode,
          body: (await res.body.json()) as Record<string, unknown>,
        });
        // The previous requests' signals are as they were: only the timed-out ones are aborted.
        for (const s of rec.seen) expect([s.id, s.signal.aborted]).toEqual([s.id, hangs.has(s.id)]);
      }
      expect(connections).toBe(1);
      for (const a of answers) {
        if (hangs.has(a.id)) {
          expect(a).toMatchObject({ status: 504, body: { instance: `/work/${a.id}` } });
          expect(a.body.code).toBe(Number(a.id) % 2 === 0 ? 'outcome_unknown' : 'timeout');
        } else {
          const n = Number(a.id);
          expect(a).toEqual({
            id: a.id,
            status: 200,
            body: { id: a.id, body: n % 2 === 0 ? { n, pad: 'x'.repeat(3_000) } : null, aborted: false },
          });
        }
      }
      for (const id of hangs) expect(codeOf(rec.signalOf(id))).toBe('FST_ERR_HANDLER_TIMEOUT');
      expect(h.clock.pendingTimers()).toBe(0);

      // The connection goes away after the answers: an answered request's signal never aborts.
      await client.close();
      await wait(30);
      for (const s of rec.seen) expect([s.id, s.signal.aborted]).toEqual([s.id, hangs.has(s.id)]);
      // Asked for after the answer and the close: still not aborted.
      expect(requestSignal(rec.seen.find((s) => s.id === '2')!.request).aborted).toBe(false);
      await h.clock.tickAsync(TIMEOUT_MS * 10);
      expect(rec.seen.filter((s) => s.signal.aborted).map((s) => s.id)).toEqual([...hangs]);
    });
  });

  describe('the client goes away mid-handler', () => {
    for (const method of ['GET', 'POST'] as const) {
      it(`${method}: the signal aborts with canceled, the timer is dropped, a signal asked for later is aborted too`, async () => {
        const rec = recordingRoutes({ hang: () => true });
        h = await harness({ requestTimeoutMs: TIMEOUT_MS, routes: [rec.routes] });
        const client = await RawClient.open(await listen(h.app));
        const body = '{"a":1}';
        client.write(
          method === 'GET'
            ? 'GET /work/g HTTP/1.1\r\nHost: localhost\r\n\r\n'
            : postHead('/work/g', body.length) + body,
        );
        await expect.poll(() => rec.signalOf('g')).toBeDefined();
        await wait(20);
        expect(rec.signalOf('g')!.aborted).toBe(false);
        client.socket.destroy();
        await expect.poll(() => rec.signalOf('g')!.aborted).toBe(true);
        expect(rec.signalOf('g')!.reason).toMatchObject({ code: 'canceled' });
        expect(h.clock.pendingTimers()).toBe(0);
        // The same signal on every call.
        expect(requestSignal(rec.seen[0]!.request)).toBe(rec.signalOf('g'));
        await h.clock.tickAsync(TIMEOUT_MS * 2);
        expect(codeOf(rec.signalOf('g'))).toBe('canceled');
      });
    }

    it('a signal first asked for after the client left is already aborted with canceled', async () => {
      const requests: FastifyRequest[] = [];
      const entered = gate();
      const resume = gate();
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            app.post('/late', async (request) => {
              requests.push(request);
              entered.open();
              await resume.promise;
              return { aborted: requestSignal(request).aborted };
            });
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      client.write(postHead('/late', 2) + '{}');
      await entered.promise;
      client.socket.destroy();
      await wait(30);
      const late = requestSignal(requests[0]!);
      expect([late.aborted, codeOf(late)]).toEqual([true, 'canceled']);
      resume.open();
    });

    // A pipelined request whose response is queued behind another has no connection yet, and Node never
    // emits 'close' on such a response: the signal listens to the connection too. (Its timer stays until it
    // fires, then does nothing: pipelining is rare, and a listener per request on the connection would cost
    // every request.)
    it('a pipelined request queued behind another is canceled when the client leaves', async () => {
      const rec = recordingRoutes({ hang: () => true });
      h = await harness({ requestTimeoutMs: TIMEOUT_MS, routes: [rec.routes] });
      const client = await RawClient.open(await listen(h.app));
      client.write(
        'GET /work/p1 HTTP/1.1\r\nHost: localhost\r\n\r\nGET /work/p2 HTTP/1.1\r\nHost: localhost\r\n\r\n',
      );
      await expect.poll(() => rec.seen.length).toBe(2);
      client.socket.destroy();
      await expect.poll(() => rec.signalOf('p1')!.aborted).toBe(true);
      await wait(50);
      expect(rec.seen.map((s) => [s.id, s.signal.aborted, codeOf(s.signal)])).toEqual([
        ['p1', true, 'canceled'],
        ['p2', true, 'canceled'],
      ]);
      await h.clock.tickAsync(TIMEOUT_MS);
      expect(h.clock.pendingTimers()).toBe(0);
    });
  });

  describe('answers around the deadline', () => {
    it('an answer 1 ms before the deadline is kept; one due exactly at it loses to the 504; the connection carries on', async () => {
      const { lines, logger } = logSink();
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        logger,
        routes: [
          (app) => {
            app.post('/in/:ms', async (request) => {
              const ms = Number((request.params as { ms: string }).ms);
              await sleep(h!.clock, ms);
              return { slept: ms, aborted: requestSignal(request).aborted };
            });
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead(`/in/${TIMEOUT_MS - 1}`, 2) + '{}');
      await untilTimers(h.clock, 2); // the request's and the handler's
      await h.clock.tickAsync(TIMEOUT_MS - 1);
      let answers = await client.untilResponses(1);
      expect([answers[0]!.status, JSON.parse(answers[0]!.body)]).toEqual([
        200,
        { slept: TIMEOUT_MS - 1, aborted: false },
      ]);
      expect(h.clock.pendingTimers()).toBe(0);

      // The request timer is set when the request arrives, before the handler's own: at the same instant
      // it fires first.
      client.write(postHead(`/in/${TIMEOUT_MS}`, 2) + '{}');
      await untilTimers(h.clock, 2);
      await h.clock.tickAsync(TIMEOUT_MS);
      answers = await client.untilResponses(2);
      expect(answers[1]!.status).toBe(504);
      expect(JSON.parse(answers[1]!.body)).toMatchObject({ code: 'outcome_unknown' });
      expect(h.clock.pendingTimers()).toBe(0);

      client.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      answers = await client.untilResponses(3);
      expect(answers.map((a) => a.status)).toEqual([200, 504, 200]);
      await wait(20);
      expect(client.responses()).toHaveLength(3);
      // The late answer is dropped with a warning; nothing was written twice.
      expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual(['request failed']);
    });

    it('a handler that throws after the timeout answered: one 504, the error only logged, the next request fine', async () => {
      const { lines, logger } = logSink();
      const resume = gate();
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        logger,
        routes: [
          (app) => {
            app.get('/boom', async () => {
              await resume.promise;
              throw new Error('late failure');
            });
            app.get('/ok', async () => ({ ok: true }));
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write('GET /boom HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await untilTimers(h.clock, 1);
      await h.clock.tickAsync(TIMEOUT_MS);
      await client.untilResponses(1);
      resume.open();
      await wait(20);
      client.write('GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n');
      const answers = await client.untilResponses(2);
      expect(answers.map((a) => [a.status, JSON.parse(a.body).code ?? JSON.parse(a.body).ok])).toEqual([
        [504, 'timeout'],
        [200, true],
      ]);
      expect(lines.map((l) => l.msg)).toContain('Promise errored, but reply.sent = true was set');
      expect(h.clock.pendingTimers()).toBe(0);
    });

    // On a route with an async onError hook (every route with `config.idempotency`), a handler that rethrows
    // `requestSignal(request).reason` at once used to get its write's 504 sent with HTTP status 503 (the
    // FST_ERR_HANDLER_TIMEOUT error's own statusCode), which clients read as "not processed, resend freely".
    // The signal now aborts only once the timeout's answer is out, so the 504 always goes first.
    it('a handler rethrowing the abort reason at once cannot turn the 504 of a write into a 503', async () => {
      const entered = gate();
      const store = await openSqliteStore({ path: ':memory:' });
      cleanups.push(() => store.close());
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            registerIdempotency(app, { store: store.idempotency });
            app.post('/orders', { config: { idempotency: true } }, async (request) => {
              const signal = requestSignal(request);
              entered.open();
              await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
              throw signal.reason;
            });
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead('/orders', 2) + '{}');
      await entered.promise;
      await h.clock.tickAsync(TIMEOUT_MS);
      const [answer] = await client.untilResponses(1);
      expect([answer!.status, JSON.parse(answer!.body).status]).toEqual([504, 504]);
    });

    // The signal is made on first use; one first asked for after the timeout answered is already aborted
    // with the timeout's error, so work a handler starts after a slow first step stops at once.
    it('a signal first asked for after the timeout answered is already aborted', async () => {
      const entered = gate();
      const resume = gate();
      let late: AbortSignal | undefined;
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            app.post('/two-steps', async (request) => {
              entered.open();
              await resume.promise; // the slow first step, done without the signal
              late = requestSignal(request);
              return {};
            });
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead('/two-steps', 2) + '{}');
      await entered.promise;
      await h.clock.tickAsync(TIMEOUT_MS);
      expect((await client.untilResponses(1))[0]!.status).toBe(504);
      resume.open();
      await expect.poll(() => late).toBeDefined();
      expect([late!.aborted, codeOf(late)]).toEqual([true, 'FST_ERR_HANDLER_TIMEOUT']);
    });

    // A route answers in time, but its onSend hooks are still running at the deadline (the idempotency route
    // awaits the store's `complete` there): the answer is on its way, so the timeout gives it one more period
    // instead of writing a 504 over it (which Fastify's own timeout does, and which then logged "Cannot write
    // headers after they are sent" while the record said 200).
    it('an answer still in its onSend hooks at the deadline goes out, not a 504 over it', async () => {
      const { lines, logger } = logSink();
      const store = await openSqliteStore({ path: ':memory:' });
      cleanups.push(() => store.close());
      const storing = gate();
      const completing = gate();
      const idempotency = Object.create(store.idempotency) as Store['idempotency'];
      idempotency.complete = async (ref, response) => {
        storing.open();
        await completing.promise;
        return store.idempotency.complete(ref, response);
      };
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        logger,
        routes: [
          (app) => {
            registerIdempotency(app, { store: idempotency });
            app.post('/orders', { config: { idempotency: true } }, async () => ({ placed: true }));
          },
        ],
      });
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      client.write(postHead('/orders', 2, 'Idempotency-Key: k1\r\n') + '{}');
      await storing.promise;
      await h.clock.tickAsync(TIMEOUT_MS);
      completing.open();
      const [answer] = await client.untilResponses(1);
      await wait(30);
      expect((await store.idempotency.get('anonymous', 'k1'))?.response?.status).toBe(200);
      expect(answer!.status).toBe(200);
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    });
  });

  describe('hijacked replies stream past the timeout', () => {
    it('a hijacked stream is never cut, its signal aborts only when the client leaves; releaseRequestTimeout drops the timer', async () => {
      const streams: { signal: AbortSignal; write(text: string): void; end(): void }[] = [];
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            app.get('/stream/:release', (request, reply) => {
              reply.hijack();
              if ((request.params as { release: string }).release === 'yes') releaseRequestTimeout(request);
              reply.raw.writeHead(200, { 'content-type': 'text/plain' });
              reply.raw.write('start;');
              streams.push({
                signal: requestSignal(request),
                write: (text) => reply.raw.write(text),
                end: () => reply.raw.end('end'),
              });
            });
          },
        ],
      });
      const base = await listen(h.app);

      const kept = await fetch(`${base}/stream/no`);
      const reader = kept.body!.getReader();
      const decoder = new TextDecoder();
      expect(decoder.decode((await reader.read()).value)).toBe('start;');
      expect(h.clock.pendingTimers()).toBe(1);
      await h.clock.tickAsync(TIMEOUT_MS * 10);
      expect(h.clock.pendingTimers()).toBe(0);
      streams[0]!.write('after-timeout;');
      expect(decoder.decode((await reader.read()).value)).toBe('after-timeout;');
      expect(streams[0]!.signal.aborted).toBe(false);
      streams[0]!.end();
      let rest = '';
      for (let r = await reader.read(); !r.done; r = await reader.read()) rest += decoder.decode(r.value);
      expect(rest).toBe('end');
      await wait(20);
      expect(streams[0]!.signal.aborted).toBe(false);

      const released = await fetch(`${base}/stream/yes`);
      const reader2 = released.body!.getReader();
      expect(decoder.decode((await reader2.read()).value)).toBe('start;');
      expect(h.clock.pendingTimers()).toBe(0);
      await reader2.cancel();
      await expect.poll(() => streams[1]!.signal.aborted).toBe(true);
      expect(codeOf(streams[1]!.signal)).toBe('canceled');
    });

    it('the job events route (SSE) streams a job to its end long after requestTimeoutMs', async () => {
      h = await harness({ requestTimeoutMs: TIMEOUT_MS, keepAliveMs: 60_000 });
      const id = await h.jobs.enqueue('steps', {});
      const base = await listen(h.app);
      const res = await fetch(`${base}/jobs/${id}/events`);
      expect(res.status).toBe(200);
      const reader = new SseReader(res);
      cleanups.push(() => reader.cancel());
      expect((await reader.events(2)).map((f) => f.event)).toEqual(['job.started', 'job.progress']);
      await h.clock.tickAsync(TIMEOUT_MS * 5);
      h.gates[0].open();
      h.gates[1].open();
      const rest = await reader.rest();
      expect(rest.filter((f) => f.id !== undefined).at(-1)?.event).toBe('job.completed');
    });
  });

  describe('idempotency route on createServer', () => {
    it('a write cut off by the timeout leaves its record in progress: retries get 409 until the lock lapses', async () => {
      let runs = 0;
      const resume = gate();
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            const idempotency = (h!.store as unknown as Store).idempotency;
            registerIdempotency(app, { store: idempotency, clock: h!.jobsClock, lockMs: 60_000 });
            app.post('/orders', { config: { idempotency: true } }, async () => {
              runs++;
              const n = runs;
              if (n === 1) await resume.promise;
              return { order: n };
            });
          },
        ],
      });
      const idempotency = (h.store as unknown as Store).idempotency;
      const client = await RawClient.open(await listen(h.app));
      cleanups.push(() => client.socket.destroy());
      const order = (): void =>
        client.write(postHead('/orders', 12, 'Idempotency-Key: order-1\r\n') + '{"item":"k"}');

      order();
      await expect.poll(() => runs).toBe(1);
      await h.clock.tickAsync(TIMEOUT_MS);
      let answers = await client.untilResponses(1);
      expect([answers[0]!.status, JSON.parse(answers[0]!.body).code]).toEqual([504, 'outcome_unknown']);
      expect((await idempotency.get('anonymous', 'order-1'))?.state).toBe('in_progress');

      order();
      answers = await client.untilResponses(2);
      expect([answers[1]!.status, JSON.parse(answers[1]!.body).code]).toEqual([
        409,
        'idempotency_in_progress',
      ]);
      expect(runs).toBe(1);

      // The first handler finishes after its 504: its late answer is not stored.
      resume.open();
      await wait(30);
      expect((await idempotency.get('anonymous', 'order-1'))?.state).toBe('in_progress');

      // The lock lapses: the next retry takes the key over and runs.
      h.jobsClock.tick(60_000);
      order();
      answers = await client.untilResponses(3);
      expect([answers[2]!.status, JSON.parse(answers[2]!.body)]).toEqual([200, { order: 2 }]);
      expect(h.clock.pendingTimers()).toBe(0);
    });
  });

  describe('many quick requests', () => {
    it('20 000 requests over keep-alive leave no timer and no listener behind', async () => {
      h = await harness({
        requestTimeoutMs: TIMEOUT_MS,
        routes: [
          (app) => {
            app.post('/q', async (request) => ({ n: (request.body as { n: number }).n }));
            app.get('/q', async () => ({ ok: true }));
          },
        ],
      });
      const sockets: Socket[] = [];
      h.app.server.on('connection', (socket: Socket) => sockets.push(socket));
      const pool = new Pool(await listen(h.app), { connections: 4, pipelining: 8 });
      cleanups.push(() => pool.destroy());
      const listeners = (): number[] =>
        sockets.map((s) => s.eventNames().reduce((sum, name) => sum + s.listenerCount(name), 0));

      let maxPending = 0;
      const one = async (n: number): Promise<void> => {
        const res = await pool.request(
          n % 2 === 0
            ? {
                path: '/q',
                method: 'POST',
                body: `{"n":${n}}`,
                headers: { 'content-type': 'application/json' },
              }
            : { path: '/q', method: 'GET' },
        );
        const body = (await res.body.json()) as { n?: number };
        if (res.statusCode !== 200 || (n % 2 === 0 && body.n !== n))
          throw new Error(`request ${n}: ${res.statusCode}`);
        maxPending = Math.max(maxPending, h!.clock.pendingTimers());
      };
      const run = async (from: number, to: number): Promise<void> => {
        let next = from;
        await Promise.all(
          Array.from({ length: 32 }, async () => {
            while (next < to) await one(next++);
          }),
        );
      };
      await run(0, 1_000);
      const early = listeners();
      await run(1_000, 20_000);
      expect(h.clock.pendingTimers()).toBe(0);
      expect(maxPending).toBeLessThanOrEqual(32);
      expect(sockets).toHaveLength(4);
      expect(listeners()).toEqual(early);
    }, 20_000);
  });

  describe('graceful shutdown that has to force connections closed', () => {
    it('aborts the signal of every request still running, hijacked streams included, with canceled', async () => {
      const rec = recordingRoutes({ hang: () => true });
      const streamSignals: AbortSignal[] = [];
      h = await harness({
        requestTimeoutMs: 60_000,
        shutdownGraceMs: 5_000,
        routes: [
          rec.routes,
          (app) => {
            app.get('/raw-stream', (request, reply) => {
              reply.hijack();
              reply.raw.writeHead(200, { 'content-type': 'text/plain' });
              reply.raw.write('open;');
              streamSignals.push(requestSignal(request));
            });
          },
        ],
      });
      const base = await listen(h.app);
      const get = fetch(`${base}/work/g`).catch((error: unknown) => error);
      const post = fetch(`${base}/work/p`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"x":1}',
      }).catch((error: unknown) => error);
      const stream = await fetch(`${base}/raw-stream`);
      const reading = stream.text().catch((error: unknown) => error);
      await expect.poll(() => rec.seen.length + streamSignals.length).toBe(3);

      const closing = closeGracefully(h.app);
      await h.clock.tickAsync(4_999);
      expect([...rec.seen.map((s) => s.signal), ...streamSignals].map((s) => s.aborted)).toEqual([
        false,
        false,
        false,
      ]);
      await h.clock.tickAsync(1);
      expect(await closing).toEqual({ forced: true });
      expect([...rec.seen.map((s) => codeOf(s.signal)), ...streamSignals.map(codeOf)]).toEqual([
        'canceled',
        'canceled',
        'canceled',
      ]);
      expect(await get).toBeInstanceOf(Error);
      expect(await post).toBeInstanceOf(Error);
      expect(await reading).toBeInstanceOf(Error);
      expect(h.clock.pendingTimers()).toBe(0);
    });
  });
});
