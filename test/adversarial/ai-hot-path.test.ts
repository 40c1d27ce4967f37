/**
 * Attacks on the AI gateway's hot path as it was reworked (CallAbort as undici's signal, the non-streamed body
 * read with events and a size cap, the host server's request signal used by the route, the lifecycle's shared
 * response listener, the request timeout's rearm, and the sliding window's in-place log), with real parts: a
 * real provider over node:http (or the simulated one in examples/llm-sim), real undici, the official `openai`
 * client, createServer or a plain Fastify app, and SQLite for the rate-limit counters.
 *
 * Time logic runs on FakeClocks (the server's request timeout, the gateway's first-byte timer, retry waits,
 * the shutdown grace); real time only lets sockets move bytes. Cases that found a bug (all fixed) say so in their comment.
 */
import { getEventListeners } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import OpenAI from 'openai';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { post, tickUntil } from './ai-support.js';
import {
  createAiGateway,
  type AiGateway,
  type AiGatewayOptions,
  type AiRequestLog,
} from '../../src/ai/index.js';
import { counterRateLimitStore } from '../../src/ai/index.js';
import { MemoryCounterStore } from '../../src/ai/limits/memory-counters.js';
import { FakeClock } from '../../src/core/index.js';
import {
  MemoryRateLimitStore,
  SlidingWindow,
  type RateLimitDecision,
  type RateLimitStore,
} from '../../src/policy/index.js';
import { closeGracefully, requestSignal } from '../../src/server/index.js';
import { harness, listen, type Harness } from '../../src/server/test-support.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SIM_KEY, ask, startGateway, tempDb, useCleanups, type RunningGateway } from '../ai/support.js';

const defer = useCleanups();

/** Real time, for sockets to move bytes (never for the time logic under test). */
const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const COMPLETION = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'A scarf.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
};
const COMPLETION_TEXT = JSON.stringify(COMPLETION);

function sseChunk(content: string): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  })}\n\n`;
}

/** One call the raw provider received. */
interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  body: string;
  /** The gateway went away before the answer was finished (its request was aborted). */
  aborted: boolean;
  /** The answer was written in full. */
  finished: boolean;
}

/**
 * A provider over node:http whose every byte the test decides: `behave(call, index)` answers (or not) each
 * call. Records whether the gateway aborted each call (the response closed before it finished).
 */
class RawProvider {
  readonly calls: Call[] = [];
  behave: (call: Call, index: number) => void = (call) => answerJson(call.res, COMPLETION_TEXT);

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<RawProvider> {
    const ref: { self?: RawProvider } = {};
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const call: Call = {
          req,
          res,
          body: Buffer.concat(chunks).toString('utf8'),
          aborted: false,
          finished: false,
        };
        res.on('finish', () => (call.finished = true));
        res.on('close', () => {
          if (!res.writableFinished) call.aborted = true;
        });
        const index = ref.self!.calls.push(call) - 1;
        ref.self!.behave(call, index);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const self = (ref.self = new RawProvider(server, `http://127.0.0.1:${port}/v1`));
    defer(() => self.close());
    return self;
  }

  /** Calls still waiting for their answer (neither finished nor aborted). */
  open(): number {
    return this.calls.filter((c) => !c.finished && !c.aborted).length;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function answerJson(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Hangs: never answers (the call stays open until the gateway aborts it or the provider closes). */
const hang = (): void => undefined;

/** Starts an SSE answer (head and one frame) and holds it open. */
const streamOneAndHold = (call: Call): void => {
  call.res.writeHead(200, { 'content-type': 'text/event-stream' });
  call.res.write(sseChunk('A '));
};

/** The gateway on a plain Fastify app (not createServer), over `provider` as provider `raw`. */
function plainGateway(
  provider: RawProvider,
  options: Partial<AiGatewayOptions> = {},
): Promise<RunningGateway> {
  return startGateway(
    defer,
    {},
    {
      providers: { raw: { baseUrl: provider.url, apiKeyEnv: 'SIM_KEY' } },
      ...options,
    },
  );
}

/** The gateway on createServer (the server's clock `h.clock`, the gateway's too unless given). */
async function serverGateway(
  provider: RawProvider,
  options: Partial<AiGatewayOptions> & { requestTimeoutMs?: number } = {},
): Promise<{
  url: string;
  h: Harness;
  gateway: AiGateway;
  logs: AiRequestLog[];
  /** Every request the server received, in order (for `requestSignal`). */
  seen: FastifyRequest[];
}> {
  const { requestTimeoutMs, ...gatewayOptions } = options;
  const logs: AiRequestLog[] = [];
  const ref: { gateway?: AiGateway } = {};
  const h = await harness({
    ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }),
    routes: [(app) => ref.gateway!.routes(app)],
  });
  const gateway = (ref.gateway = createAiGateway({
    providers: { raw: { baseUrl: provider.url, apiKeyEnv: 'SIM_KEY' } },
    env: { SIM_KEY },
    clock: h.clock,
    ...gatewayOptions,
  }));
  gateway.onRequest((line) => void logs.push(line));
  const seen: FastifyRequest[] = [];
  h.app.addHook('onRequest', (request, _reply, done) => {
    seen.push(request);
    done();
  });
  const url = await listen(h.app);
  defer(async () => {
    h.app.server.closeAllConnections();
    await h.close();
    await gateway.close();
  });
  return { url, h, gateway, logs, seen };
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/** A POST of a chat completion as raw HTTP/1.1 text (for pipelining over one socket). */
function rawPost(body: unknown, extra = ''): string {
  const text = JSON.stringify(body);
  return (
    `POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${extra}` +
    `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
  );
}

async function openSocket(base: string): Promise<Socket> {
  const url = new URL(base);
  const socket = connect({ host: url.hostname, port: Number(url.port) });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  defer(() => socket.destroy());
  return socket;
}

const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

// ---------------------------------------------------------------------------------------------------------

describe('the client leaves mid-request', () => {
  it('createServer, non-streamed: the provider call is aborted, the line says canceled, nothing stays', async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs, seen } = await serverGateway(provider);
    const client = new Client(url);
    defer(() => client.destroy());
    const left = new AbortController();
    const pending = client
      .request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: JSON_HEADERS,
        body: JSON.stringify(ask('raw/m')),
        signal: left.signal,
      })
      .catch((e: unknown) => e);
    await expect.poll(() => provider.calls.length).toBe(1);
    const signal = requestSignal(seen[0]!);
    // While the call is in flight, exactly one listener (the provider call's) follows the request.
    expect(abortListeners(signal)).toBe(1);
    left.abort();
    await pending;
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({
      route: null,
      step: 'direct',
      provider: 'raw',
      stream: false,
      status: 499,
      outcome: 'canceled',
      attempts: 1,
    });
    expect(signal.aborted).toBe(true);
    expect(abortListeners(signal)).toBe(0);
    // The request timer and the first-byte timer are both gone.
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('createServer, streamed: the provider stream is aborted, the line says canceled, nothing stays', async () => {
    const provider = await RawProvider.start();
    provider.behave = streamOneAndHold;
    const { url, h, logs, seen } = await serverGateway(provider);
    const socket = await openSocket(url);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write(rawPost(ask('raw/m', { stream: true })));
    await expect.poll(() => received.includes('A ')).toBe(true);
    const signal = requestSignal(seen[0]!);
    // The provider call's and the stream writer's (which hears a client that leaves a queued response).
    expect(abortListeners(signal)).toBe(2);
    socket.destroy();
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, status: 200, outcome: 'canceled', attempts: 1 });
    expect(abortListeners(signal)).toBe(0);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('plain Fastify app, non-streamed, with the openai client: the provider call is aborted', async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0 });
    const left = new AbortController();
    const pending = openai.chat.completions
      .create(ask('raw/m'), { signal: left.signal })
      .catch((e: unknown) => e);
    await expect.poll(() => provider.calls.length).toBe(1);
    left.abort();
    expect((await pending) as Error).toBeInstanceOf(Error);
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: false, status: 499, outcome: 'canceled', attempts: 1 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('plain Fastify app, streamed, with the openai client: the provider stream is aborted', async () => {
    const provider = await RawProvider.start();
    provider.behave = streamOneAndHold;
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = await openai.chat.completions.create({ ...ask('raw/m'), stream: true });
    for await (const chunk of stream) {
      expect(chunk.choices[0]!.delta.content).toBe('A ');
      break; // leaves: the client aborts its request
    }
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, status: 200, outcome: 'canceled', attempts: 1 });
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe("the server's request timeout (the route's answerTimeoutMs)", () => {
  it("longer than the server's: 504 exactly at the route's, the provider call aborted, the line says timeout", async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs, seen } = await serverGateway(provider, {
      requestTimeoutMs: 100,
      answerTimeoutMs: 300,
    });
    let answered: Awaited<ReturnType<typeof post>> | undefined;
    const pending = post(url, ask('raw/m')).then((a) => (answered = a));
    await expect.poll(() => provider.calls.length).toBe(1);
    await h.clock.tickAsync(100);
    await wait(20);
    expect(answered).toBeUndefined();
    await h.clock.tickAsync(199);
    await wait(20);
    expect(answered).toBeUndefined();
    expect(provider.calls[0]!.aborted).toBe(false);
    await h.clock.tickAsync(1);
    await pending;
    expect(answered!.status).toBe(504);
    expect(JSON.parse(answered!.text)).toMatchObject({ code: 'timeout', error: { code: 'timeout' } });
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ status: 504, outcome: 'timeout', attempts: 1, provider: 'raw' });
    expect(abortListeners(requestSignal(seen[0]!))).toBe(0);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it("shorter than the server's: 504 at the route's, counted from the request's start", async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs } = await serverGateway(provider, { requestTimeoutMs: 1_000, answerTimeoutMs: 250 });
    let answered: Awaited<ReturnType<typeof post>> | undefined;
    const pending = post(url, ask('raw/m')).then((a) => (answered = a));
    await expect.poll(() => provider.calls.length).toBe(1);
    await h.clock.tickAsync(249);
    await wait(20);
    expect(answered).toBeUndefined();
    await h.clock.tickAsync(1);
    await pending;
    expect(answered!.status).toBe(504);
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ status: 504, outcome: 'timeout', attempts: 1 });
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('passes during the second attempt (the first got a 503): 504, attempts 2, the second call aborted', async () => {
    const provider = await RawProvider.start();
    provider.behave = (call, index) => {
      if (index === 0) {
        call.res.writeHead(503, { 'content-type': 'application/json' });
        call.res.end('{"error":{"message":"busy"}}');
      }
    };
    const { url, h, logs } = await serverGateway(provider, { requestTimeoutMs: 100, answerTimeoutMs: 300 });
    let answered: Awaited<ReturnType<typeof post>> | undefined;
    const pending = post(url, ask('raw/m'), {
      'x-breakwater-max-attempts': '3',
      'x-breakwater-retry-delay': '0',
    }).then((a) => (answered = a));
    await tickUntil(h.clock, () => provider.calls.length === 2);
    expect(answered).toBeUndefined();
    await h.clock.tickAsync(300);
    await pending;
    expect(answered!.status).toBe(504);
    await expect.poll(() => provider.calls[1]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ status: 504, outcome: 'timeout', attempts: 2 });
    expect(provider.calls).toHaveLength(2);
    expect(h.clock.pendingTimers()).toBe(0);
  });
});

describe('the non-streamed body, read whole', () => {
  it('larger than maxResponseBytes: 502 response_too_large, the provider cut off, the pool usable after', async () => {
    const provider = await RawProvider.start();
    // 64 MiB, written as the gateway reads it (far more than socket buffers hold).
    const total = 64 * 1024 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'x');
    provider.behave = (call, index) => {
      if (index > 0) return answerJson(call.res, COMPLETION_TEXT);
      call.res.writeHead(200, { 'content-type': 'application/json', 'content-length': total });
      let sent = 0;
      const more = (): void => {
        while (sent < total && !call.res.destroyed) {
          sent += piece.length;
          if (!call.res.write(piece)) return void call.res.once('drain', more);
        }
        if (sent >= total) call.res.end();
      };
      more();
    };
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock, maxResponseBytes: 64 * 1024 });
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0 });
    const failed = (await openai.chat.completions.create(ask('raw/m')).catch((e: unknown) => e)) as {
      status: number;
      code: string;
    };
    expect([failed.status, failed.code]).toEqual([502, 'response_too_large']);
    // Permanent: not retried; and the 64 MiB answer was not read to its end.
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    expect(provider.calls).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 502, outcome: 'response_too_large', attempts: 1 });
    const ok = await openai.chat.completions.create(ask('raw/m'));
    expect(ok.choices[0]!.message.content).toBe('A scarf.');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('exactly maxResponseBytes in 1-byte chunks passes; one byte more is refused', async () => {
    const provider = await RawProvider.start();
    const limit = COMPLETION_TEXT.length;
    provider.behave = (call, index) => {
      const text = index === 0 ? COMPLETION_TEXT : `${COMPLETION_TEXT} `;
      call.res.writeHead(200, { 'content-type': 'application/json' }); // chunked
      let i = 0;
      const next = (): void => {
        if (i >= text.length) return void call.res.end();
        call.res.write(text.slice(i, i + 1));
        i++;
        setImmediate(next);
      };
      next();
    };
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock, maxResponseBytes: limit });
    const exact = await post(url, ask('raw/m'));
    expect([exact.status, exact.text]).toEqual([200, COMPLETION_TEXT]);
    const over = await post(url, ask('raw/m'));
    expect(over.status).toBe(502);
    expect(JSON.parse(over.text)).toMatchObject({ error: { code: 'response_too_large' } });
    expect(logs.map((l) => l.outcome)).toEqual(['ok', 'response_too_large']);
    expect(logs[0]).toMatchObject({ prompt_tokens: 3, completion_tokens: 2 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('an empty 200 body: answered as it is (no hang, the first-byte timer cleared)', async () => {
    const provider = await RawProvider.start();
    provider.behave = (call) => answerJson(call.res, '');
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    const answer = await post(url, ask('raw/m'));
    expect([answer.status, answer.text, answer.headers['x-breakwater-attempts']]).toEqual([200, '', '1']);
    expect(logs[0]).toMatchObject({ status: 200, outcome: 'ok', attempts: 1, prompt_tokens: null });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('first byte in time, the rest long after the first-byte timeout: never cut', async () => {
    const provider = await RawProvider.start();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    provider.behave = (call) => {
      call.res.writeHead(200, { 'content-type': 'application/json' });
      call.res.write(COMPLETION_TEXT.slice(0, 1));
      void released.then(async () => {
        for (let i = 1; i < COMPLETION_TEXT.length; i += 7) {
          call.res.write(COMPLETION_TEXT.slice(i, i + 7));
          await wait(1);
        }
        call.res.end();
      });
    };
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    const pending = post(url, ask('raw/m'), { 'x-breakwater-request-timeout': '1000' });
    // The first byte arrived: the gateway cleared its first-byte timer (the only timer on this clock).
    await expect.poll(() => provider.calls.length).toBe(1);
    await expect.poll(() => clock.pendingTimers()).toBe(0);
    await clock.tickAsync(10_000);
    release();
    const answer = await pending;
    expect([answer.status, answer.text]).toEqual([200, COMPLETION_TEXT]);
    expect(provider.calls[0]!.finished).toBe(true);
    expect(logs[0]).toMatchObject({ outcome: 'ok', attempts: 1, completion_tokens: 2 });
  });

  it('the head in time but no body byte: the first-byte timeout cuts it at exactly its ms', async () => {
    const provider = await RawProvider.start();
    provider.behave = (call) => {
      call.res.writeHead(200, { 'content-type': 'application/json' });
      call.res.flushHeaders();
    };
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    let answered: Awaited<ReturnType<typeof post>> | undefined;
    const pending = post(url, ask('raw/m'), {
      'x-breakwater-request-timeout': '1000',
      'x-breakwater-max-attempts': '1',
    }).then((a) => (answered = a));
    await expect.poll(() => provider.calls.length).toBe(1);
    await wait(20);
    await clock.tickAsync(999);
    await wait(20);
    expect(answered).toBeUndefined();
    await clock.tickAsync(1);
    await pending;
    expect(answered!.status).toBe(504);
    expect(JSON.parse(answered!.text)).toMatchObject({ error: { code: 'first_byte_timeout' } });
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    expect(logs[0]).toMatchObject({ status: 504, outcome: 'first_byte_timeout', attempts: 1 });
  });

  it('a body cut off by the provider is a failed attempt, retried, and the retry serves', async () => {
    const provider = await RawProvider.start();
    provider.behave = (call, index) => {
      if (index > 0) return answerJson(call.res, COMPLETION_TEXT);
      call.res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      call.res.write(COMPLETION_TEXT.slice(0, 10));
      setTimeout(() => call.res.socket?.destroy(), 5);
    };
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    const pending = post(url, ask('raw/m'), { 'x-breakwater-retry-delay': '0' });
    await tickUntil(clock, () => provider.calls.length === 2);
    const answer = await pending;
    expect([answer.status, answer.text, answer.headers['x-breakwater-attempts']]).toEqual([
      200,
      COMPLETION_TEXT,
      '2',
    ]);
    expect(logs[0]).toMatchObject({ outcome: 'ok', attempts: 2 });
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('first-byte timeout, retry, success (createServer)', () => {
  it.each([false, true])(
    'stream %s: x-breakwater-attempts 2, the first call aborted, no timer or listener left',
    async (stream) => {
      const provider = await RawProvider.start();
      provider.behave = (call, index) => {
        if (index === 0) return; // never a byte
        if (!stream) return answerJson(call.res, COMPLETION_TEXT);
        call.res.writeHead(200, { 'content-type': 'text/event-stream' });
        call.res.end(`${sseChunk('A ')}${sseChunk('scarf.')}data: [DONE]\n\n`);
      };
      const { url, h, logs, seen } = await serverGateway(provider);
      let answered: Awaited<ReturnType<typeof post>> | undefined;
      const pending = post(url, ask('raw/m', { stream }), {
        'x-breakwater-request-timeout': '500',
        'x-breakwater-max-attempts': '2',
        'x-breakwater-retry-delay': '0',
      }).then((a) => (answered = a));
      await expect.poll(() => provider.calls.length).toBe(1);
      const signal = requestSignal(seen[0]!);
      expect(abortListeners(signal)).toBe(1);
      await h.clock.tickAsync(499);
      expect(provider.calls).toHaveLength(1);
      await h.clock.tickAsync(1);
      await tickUntil(h.clock, () => provider.calls.length === 2);
      await pending;
      expect(answered!.status).toBe(200);
      expect(answered!.headers['x-breakwater-attempts']).toBe('2');
      if (stream) expect(answered!.text).toContain('scarf.');
      else expect(answered!.text).toBe(COMPLETION_TEXT);
      expect(provider.calls[0]!.aborted).toBe(true);
      await expect.poll(() => logs.length).toBe(1);
      expect(logs[0]).toMatchObject({ status: 200, outcome: 'ok', attempts: 2, stream });
      expect(signal.aborted).toBe(false);
      expect(abortListeners(signal)).toBe(0);
      expect(h.clock.pendingTimers()).toBe(0);
    },
  );
});

describe('pipelined requests on one keep-alive connection, the client leaves', () => {
  it("createServer: every queued request's provider call is aborted, each line says canceled", async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs } = await serverGateway(provider, { answerTimeoutMs: 1_000 });
    const socket = await openSocket(url);
    socket.write(rawPost(ask('raw/m')) + rawPost(ask('raw/m')) + rawPost(ask('raw/m', { stream: true })));
    await expect.poll(() => provider.calls.length).toBe(3);
    socket.destroy();
    await expect.poll(() => provider.calls.map((c) => c.aborted)).toEqual([true, true, true]);
    await expect.poll(() => logs.length).toBe(3);
    expect(logs.map((l) => [l.status, l.outcome, l.attempts])).toEqual([
      [499, 'canceled', 1],
      [499, 'canceled', 1],
      [499, 'canceled', 1],
    ]);
    // A queued request's timer stays until it fires, then does nothing (request-timeout.ts says so).
    await h.clock.tickAsync(1_000);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  // Found by this review (fixed): a queued response never emits 'close' (Node emits it only on the response
  // that holds the connection), and the route's own signal on a plain Fastify app (routes.ts `ownSignal`)
  // listened to nothing else, so the queued requests' provider calls ran on after the client had gone until
  // their first-byte timeout, holding up `gateway.close()` too. It now listens to the connection as well.
  it("plain Fastify app: every queued request's provider call is aborted too", async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const clock = new FakeClock();
    const { url, logs } = await plainGateway(provider, { clock });
    try {
      const socket = await openSocket(url);
      socket.write(rawPost(ask('raw/m')) + rawPost(ask('raw/m')));
      await expect.poll(() => provider.calls.length).toBe(2);
      socket.destroy();
      await expect.poll(() => provider.calls.map((c) => c.aborted)).toEqual([true, true]);
      await expect.poll(() => logs.length).toBe(2);
    } finally {
      await provider.close(); // releases the abandoned call, so the gateway's cleanup can close its pool
    }
  });

  // Found by this review (fixed): a queued stream whose first byte came before the client left. The request
  // signal aborted the provider call, but pipeStream (src/ai/http/respond.ts) heard of the client leaving only
  // from the response's 'close', which a queued response never emits: a short stream was logged as
  // `stream_error`, and one past the high-water mark waited in `drained` forever (no line, the grant never
  // settled). pipeStream and `drained` now hear the request's signal too.
  it.each([
    ['a short stream: logged as canceled, not stream_error', 2],
    ['a stream past the high-water mark: the handler ends and logs at all', 400],
  ])('createServer, a queued stream under way when the client leaves: %s', async (_name, count) => {
    const provider = await RawProvider.start();
    const frames = Array.from({ length: count }, (_, i) => sseChunk(`word${i} `)).join('');
    provider.behave = (call, index) => {
      if (index === 0) return; // the first request holds the connection
      call.res.writeHead(200, { 'content-type': 'text/event-stream' });
      call.res.write(frames);
    };
    const { url, logs } = await serverGateway(provider, { answerTimeoutMs: 1_000 });
    const socket = await openSocket(url);
    socket.write(rawPost(ask('raw/m')) + rawPost(ask('raw/m', { stream: true })));
    await expect.poll(() => provider.calls.length).toBe(2);
    await wait(100); // the queued stream's frames are written into its response (no connection yet)
    socket.destroy();
    // The provider calls are both aborted (the request signal does that part)...
    await expect.poll(() => provider.calls.map((c) => c.aborted)).toEqual([true, true]);
    // ...but the stream's line is wrong, or never comes.
    await expect.poll(() => logs.length, { timeout: 1_000 }).toBe(2);
    expect(logs.map((l) => l.outcome)).toEqual(['canceled', 'canceled']);
  });
});

/** A raw socket that collects what the server sends back, and knows when the server closed it. */
async function rawConnection(
  base: string,
): Promise<{ socket: Socket; text: () => string; closed: Promise<void> }> {
  const socket = await openSocket(base);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, text: () => received, closed };
}

const statusLines = (text: string): string[] => text.match(/HTTP\/1\.1 \d{3}/g) ?? [];

describe('graceful shutdown (closeGracefully) with the gateway in flight', () => {
  it('idle keep-alive connections close at once, the request in flight finishes, no forced close', async () => {
    const provider = await RawProvider.start();
    const { url, h, logs } = await serverGateway(provider);
    // An idle keep-alive connection that carried a request, and one that never carried any.
    const idle = await rawConnection(url);
    idle.socket.write(rawPost(ask('raw/m')));
    await expect.poll(() => statusLines(idle.text())).toEqual(['HTTP/1.1 200']);
    const spare = await rawConnection(url);
    // A request in flight: the provider holds its answer.
    provider.behave = hang;
    const busy = await rawConnection(url);
    busy.socket.write(rawPost(ask('raw/m')));
    await expect.poll(() => provider.calls.length).toBe(2);

    let result: { forced: boolean } | undefined;
    const closing = closeGracefully(h.app, { graceMs: 5_000 }).then((r) => (result = r));
    await idle.closed;
    await spare.closed;
    await wait(50);
    expect(result).toBeUndefined();
    answerJson(provider.calls[1]!.res, COMPLETION_TEXT);
    await busy.closed;
    await closing;
    expect(result).toEqual({ forced: false });
    expect(statusLines(busy.text())).toEqual(['HTTP/1.1 200']);
    expect(busy.text().toLowerCase()).toContain('connection: close');
    expect(logs.map((l) => [l.status, l.outcome])).toEqual([
      [200, 'ok'],
      [200, 'ok'],
    ]);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('a request still in flight when the grace ends: cut, its provider call aborted, logged canceled', async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs } = await serverGateway(provider);
    const busy = await rawConnection(url);
    busy.socket.write(rawPost(ask('raw/m')));
    await expect.poll(() => provider.calls.length).toBe(1);
    let result: { forced: boolean } | undefined;
    const closing = closeGracefully(h.app, { graceMs: 5_000 }).then((r) => (result = r));
    await wait(20);
    await h.clock.tickAsync(4_999);
    await wait(20);
    expect(result).toBeUndefined();
    await h.clock.tickAsync(1);
    await closing;
    expect(result).toEqual({ forced: true });
    await busy.closed;
    await expect.poll(() => provider.calls[0]!.aborted).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ status: 499, outcome: 'canceled' });
  });

  // Found by this review (fixed): while closing, the onSend hook put `Connection: close` on every answer,
  // also on one with another request queued behind it on the same connection, so Node ended the connection
  // before the queued request (in flight) was answered. Now only the last request in flight on a connection
  // gets it; the lifecycle closes the connection after that one.
  it('two pipelined requests in flight on one connection both get their answer', async () => {
    const provider = await RawProvider.start();
    provider.behave = hang;
    const { url, h, logs } = await serverGateway(provider);
    const busy = await rawConnection(url);
    busy.socket.write(rawPost(ask('raw/m')) + rawPost(ask('raw/m')));
    await expect.poll(() => provider.calls.length).toBe(2);
    const closing = closeGracefully(h.app, { graceMs: 5_000 });
    await wait(20);
    answerJson(provider.calls[0]!.res, COMPLETION_TEXT);
    answerJson(provider.calls[1]!.res, COMPLETION_TEXT);
    await busy.closed;
    expect(await closing).toEqual({ forced: false });
    expect(provider.calls.map((c) => c.aborted)).toEqual([false, false]);
    expect(logs.map((l) => [l.status, l.outcome])).toEqual([
      [200, 'ok'],
      [200, 'ok'],
    ]);
    expect(statusLines(busy.text())).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
  });
});

// ---------------------------------------------------------------------------------------------------------

const W = 60_000;

/** The sliding window as it was specified before the in-place log: a pure copy per step, a denial keeps all. */
function referenceSliding(limit: number, windowMs = W): (nowMs: number, cost: number) => RateLimitDecision {
  let log: number[] = [];
  return (nowMs, cost) => {
    let live = log.filter((t) => t > nowMs - windowMs);
    if (live.length > limit) live = live.slice(live.length - limit);
    if (live.length + cost <= limit) {
      live = [...live, ...Array.from({ length: cost }, () => nowMs)].sort((a, b) => a - b);
      log = live;
      return {
        allowed: true,
        limit,
        remaining: limit - live.length,
        resetMs: live[live.length - 1]! + windowMs - nowMs,
        retryAfterMs: 0,
      };
    }
    const mustLeave = live.length + cost - limit;
    return {
      allowed: false,
      limit,
      remaining: limit - live.length,
      resetMs: live[live.length - 1]! + windowMs - nowMs,
      retryAfterMs: live[mustLeave - 1]! + windowMs - nowMs,
    };
  };
}

type Backend = 'memory' | 'memory counters' | 'sqlite counters';

async function rateStore(backend: Backend, clock: FakeClock): Promise<RateLimitStore> {
  if (backend === 'memory') return new MemoryRateLimitStore();
  if (backend === 'memory counters') return counterRateLimitStore(new MemoryCounterStore(clock));
  const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai-hot'), clock });
  defer(() => store.close());
  return counterRateLimitStore(store.counters);
}

const BACKENDS: Backend[] = ['memory', 'memory counters', 'sqlite counters'];

describe('the sliding window, updated in place, through every store', () => {
  it.each(BACKENDS)(
    '%s: 200 concurrent consumes at a limit of 50: exactly 50 allowed, denials count nothing',
    async (backend) => {
      const clock = new FakeClock();
      const t0 = clock.now();
      const store = await rateStore(backend, clock);
      const sliding = new SlidingWindow({ limit: 50, windowMs: W });
      const decisions = await Promise.all(
        Array.from({ length: 200 }, () => Promise.resolve(store.consume('k', sliding, 1, t0))),
      );
      const allowed = decisions.filter((d) => d.allowed);
      expect(allowed).toHaveLength(50);
      expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 50 }, (_, i) => i),
      );
      expect(decisions.filter((d) => !d.allowed)).toEqual(
        Array.from({ length: 150 }, () => ({
          allowed: false,
          limit: 50,
          remaining: 0,
          resetMs: W,
          retryAfterMs: W,
        })),
      );
      // 150 denials counted nothing: the window frees exactly at t0 + W, all 50 at once.
      expect(await store.consume('k', sliding, 1, t0 + W - 1)).toEqual({
        allowed: false,
        limit: 50,
        remaining: 0,
        resetMs: 1,
        retryAfterMs: 1,
      });
      const later = await Promise.all(
        Array.from({ length: 60 }, () => Promise.resolve(store.consume('k', sliding, 1, t0 + W))),
      );
      expect(later.filter((d) => d.allowed)).toHaveLength(50);
    },
  );

  it.each(BACKENDS)('%s: a clock that steps back lands in order and frees in order', async (backend) => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const store = await rateStore(backend, clock);
    const sliding = new SlidingWindow({ limit: 3, windowMs: W });
    const ref = referenceSliding(3);
    for (const [at, cost] of [
      [1_000, 1],
      [500, 1],
      [200, 1],
      [600, 1],
      [W + 199, 1],
      [W + 200, 1],
      [W + 100, 1], // back again
      [W + 500, 1],
      [W + 1_000, 2],
    ] as const) {
      expect([at, await store.consume('k', sliding, cost, t0 + at)]).toEqual([at, ref(t0 + at, cost)]);
    }
  });

  // Time only moves forward here. With a clock that steps back after a denial, the memory stores and SQLite
  // disagree by design of the new contract: a denied step may drop entries already out of the window IN
  // PLACE (kept by a memory store, not written by SQLite), and after the clock steps back such an entry would
  // be inside the window again (seed 42 with steps back: step 46 finds one unit fewer counted in memory).
  it.each(BACKENDS)('%s: a random walk (costs 1-3, time forward) matches the reference', async (backend) => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const store = await rateStore(backend, clock);
    const sliding = new SlidingWindow({ limit: 8, windowMs: 1_000 });
    const ref = referenceSliding(8, 1_000);
    let seed = 42;
    const random = (): number => {
      seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
      return seed / 2 ** 32;
    };
    let now = t0;
    for (let i = 0; i < 2_000; i++) {
      now += Math.floor(random() * 150);
      const cost = 1 + Math.floor(random() * 3);
      expect([i, await store.consume('k', sliding, cost, now)]).toEqual([i, ref(now, cost)]);
    }
  });

  it('sqlite counters: a limit lowered on an existing key denies, and restored counts every unit still in the window', async () => {
    await lowerThenRestore('sqlite counters');
  });

  // Found by this review (fixed): with the limit lowered on a key holding more entries than the new limit, a
  // DENIED step trimmed the log to the newest `limit` entries in place, and a memory store keeps that very
  // object: when the limit went back up (a route rolled back) the key admitted requests the window forbids.
  // A denial now drops only entries out of the window (algorithms.ts `dropOldest(log, expired)`).
  it.each(['memory', 'memory counters'] as const)(
    '%s: a limit lowered on an existing key denies, and restored counts every unit still in the window',
    async (backend) => {
      await lowerThenRestore(backend);
    },
  );

  async function lowerThenRestore(backend: Backend): Promise<void> {
    const clock = new FakeClock();
    const t0 = clock.now();
    const store = await rateStore(backend, clock);
    const five = new SlidingWindow({ limit: 5, windowMs: W });
    const three = new SlidingWindow({ limit: 3, windowMs: W });
    for (let i = 0; i < 5; i++) expect((await store.consume('k', five, 1, t0 + i * 100)).allowed).toBe(true);
    // Lowered to 3: the newest three decide (t0+200 leaves first).
    expect(await store.consume('k', three, 1, t0 + 500)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      resetMs: W - 100,
      retryAfterMs: W - 300,
    });
    // Back to 5: all five units are still inside the window.
    expect(await store.consume('k', five, 1, t0 + 600)).toEqual({
      allowed: false,
      limit: 5,
      remaining: 0,
      resetMs: W - 200,
      retryAfterMs: W - 600,
    });
  }
});
