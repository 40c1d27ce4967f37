/**
 * Attacks on `providers.<name>.maxConnections` (connection-slots.ts and the waiter in step/provider-call.ts),
 * with real parts: node:http providers (counting TCP connections), the real undici Pool the registry builds,
 * the simulated provider, the gateway on Fastify and the official `openai` client.
 *
 * The unit cases drive `callProvider` on a FakeClock (first-byte timers); real time only lets sockets move
 * bytes. After each storm the provider's `slots.stats` must be back to zero, and `max` calls must again be
 * on the wire at once: a leaked slot would wedge the provider forever.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type OpenAI from 'openai';
import type { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { runFallbackChain, type AiStep } from '../../src/ai/index.js';
import { ProviderRegistry, type Provider } from '../../src/ai/providers.js';
import { callProvider, type FirstBytes } from '../../src/ai/step/attempt.js';
import { FakeClock } from '../../src/core/index.js';
import { ask, startGateway, startSim, until, useCleanups } from '../ai/support.js';
import { readBody, scriptedProvider } from './ai-support.js';

const defer = useCleanups();
const BODY = '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}';
const BIG = 'x'.repeat(4096);
const sse = (n: number): string => `data: {"choices":[{"index":0,"delta":{"content":"t${n}"}}]}\n\n`;

/** One request the raw provider holds. */
interface Held {
  body: string;
  res: ServerResponse;
  req: IncomingMessage;
}

/** A node:http provider: `answer` gets each request's body; it may answer now or hold it. */
function rawProvider(answer: (held: Held) => void): ReturnType<typeof scriptedProvider> {
  return scriptedProvider(defer, (res, body, req) => answer({ body, res, req }));
}

/** The registry's real provider (its Pool and ConnectionSlots), `max` connections. */
function capped(url: string, max: number): Provider {
  const registry = new ProviderRegistry({ p: { baseUrl: url, maxConnections: max } }, {});
  defer(() => registry.close());
  return registry.get('p')!;
}

/** What a call ended with: `ok:<text>`, or the error's code / status / name. */
function outcome(call: Promise<FirstBytes>): Promise<string> {
  return call.then(
    async (bytes) => {
      if (bytes.raw !== undefined) return `ok:${bytes.raw.length}`;
      const { text, error } = await readBody(bytes.body);
      if (error === undefined) return `stream:${text.length}`;
      return `stream-broke:${(error as { code?: string }).code ?? String(error)}`;
    },
    (error: { code?: string; status?: number; name?: string }) =>
      String(error.code ?? error.status ?? error.name),
  );
}

/** Proves from the outside that `max` calls run at once again (and no more), then lets them finish. */
async function provesCapacity(
  p: Provider,
  max: number,
  held: Held[],
  clock: FakeClock,
  tag: (n: number) => string,
): Promise<void> {
  const before = held.length;
  const calls = Array.from({ length: max + 1 }, (_, n) =>
    callProvider(p, tag(n), 60_000, new AbortController().signal, clock, 1 << 20),
  );
  await until(() => held.length === before + max);
  await new Promise((resolve) => setTimeout(resolve, 30));
  expect(held.length).toBe(before + max);
  expect(p.slots!.stats).toEqual({ busy: max, waiting: 1 });
  for (let i = 0; i <= max; i++) {
    await until(() => held.length > before + i);
    held[before + i]!.res.end(BODY);
  }
  expect((await Promise.all(calls)).map((b) => b.status)).toEqual(Array(max + 1).fill(200));
  expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
}

describe('maxConnections: every way a call ends frees its slot (callProvider, real undici)', () => {
  it('a storm of successes, 4xx, 5xx, oversized bodies, resets, timeouts, aborts and streams leaks nothing', async () => {
    const held: Held[] = [];
    const { url } = await rawProvider((h) => {
      const kind = (JSON.parse(h.body) as { k: string }).k;
      const { res } = h;
      if (kind === 'ok') res.writeHead(200, { 'content-type': 'application/json' }).end(BODY);
      else if (kind === '400' || kind === '500')
        res.writeHead(Number(kind), { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
      else if (kind === 'big') res.writeHead(200).end(BIG);
      else if (kind === 'bigerr') res.writeHead(503).end('{"error":{"message":"x"}}' + ' '.repeat(70_000));
      else if (kind === 'reset') h.req.socket.destroy();
      else if (kind === 'stream' || kind === 'cut' || kind === 'leave') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sse(0));
        if (kind === 'cut') setTimeout(() => h.req.socket.destroy(), 5);
        else if (kind === 'stream') setTimeout(() => res.end(sse(1) + 'data: [DONE]\n\n'), 5);
        else held.push(h);
      } else held.push(h); // 'hang': waits for the first-byte timer
    });
    const p = capped(url, 2);
    const clock = new FakeClock();
    const kinds = ['ok', '400', '500', 'big', 'bigerr', 'reset', 'hang', 'stream', 'cut', 'leave', 'gone'];
    const leaving: AbortController[] = [];
    const calls = [...kinds, ...kinds, ...kinds].map((k) => {
      const client = new AbortController();
      if (k === 'gone') leaving.push(client);
      const streamed = k === 'stream' || k === 'cut' || k === 'leave';
      const timeout = k === 'hang' ? 1_000 : 60_000;
      const call = callProvider(
        p,
        JSON.stringify({ k }),
        timeout,
        client.signal,
        clock,
        streamed ? undefined : 1024,
      );
      // A stream whose reader leaves after its first chunk (the client went away mid-stream).
      if (k === 'leave')
        void call.then(
          (b) => b.link.abort(new Error('reader left')),
          () => undefined,
        );
      return outcome(call);
    });
    expect(p.slots!.stats).toEqual({ busy: 2, waiting: 31 });
    for (const c of leaving) c.abort(new Error('client left while waiting'));
    // The first 'hang' on the wire is cut by its first-byte timer, and the two waiting behind in the same tick
    // (the wait counts toward it): they never reach the provider.
    let settled = false;
    const all = Promise.all(calls).then((v) => ((settled = true), v));
    while (!settled) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (held.some((h) => (JSON.parse(h.body) as { k: string }).k === 'hang' && !h.res.writableEnded))
        clock.tick(1_000);
    }
    const results = await all;
    const expected: Record<string, string> = {
      ok: `ok:${BODY.length}`,
      '400': '400',
      '500': '500',
      big: 'upstream_error',
      bigerr: '503',
      reset: 'UND_ERR_SOCKET',
      hang: 'timeout',
      stream: `stream:${(sse(0) + sse(1) + 'data: [DONE]\n\n').length}`,
      cut: 'stream-broke:UND_ERR_SOCKET',
      leave: 'stream-broke:Error: reader left',
      gone: 'Error',
    };
    expect(results).toEqual([...kinds, ...kinds, ...kinds].map((k) => expected[k]));
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
    held.length = 0;
    await provesCapacity(p, 2, held, clock, (n) => JSON.stringify({ k: 'hang', n }));
  });

  it('1 000 waiters, 900 of them leaving: the rest go in arrival order, over `max` connections only', async () => {
    const held: Held[] = [];
    const { url, sockets, bodies } = await rawProvider((h) => held.push(h));
    const p = capped(url, 3);
    const clock = new FakeClock();
    const clients = Array.from({ length: 1_000 }, () => new AbortController());
    const calls = clients.map((c, n) => outcome(callProvider(p, `${n}`, 60_000, c.signal, clock, 1024)));
    await until(() => held.length === 3);
    expect(p.slots!.stats).toEqual({ busy: 3, waiting: 997 });
    clients.forEach((c, n) => n % 10 !== 0 && n >= 3 && c.abort(new Error('left')));
    // Aborted waiters are dropped from the queue once they are half of it (connection-slots.ts, abandoned).
    expect(p.slots!.stats).toEqual({ busy: 3, waiting: 99 });
    // Answer one at a time, as they arrive: every answer hands its slot to the next live waiter.
    for (let served = 0; served < 3 + 99; served++) {
      await until(() => held.length > served);
      held[served]!.res.end(BODY);
    }
    const results = await Promise.all(calls);
    const live = results.flatMap((r, n) => (r === 'ok:' + BODY.length ? [n] : []));
    expect(live).toEqual([0, 1, 2, ...Array.from({ length: 99 }, (_, i) => (i + 1) * 10)]);
    expect(results.filter((r) => r === 'Error')).toHaveLength(898);
    expect(bodies.map(Number)).toEqual(live);
    expect(sockets()).toBe(3);
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a provider refusing connections: 50 calls over 2 slots all fail, and the slots come back', async () => {
    const { server, url } = await rawProvider(() => undefined);
    const p = capped(url, 2);
    server.close();
    await once(server, 'close');
    const clock = new FakeClock();
    const calls = Array.from({ length: 50 }, () =>
      outcome(callProvider(p, '{}', 60_000, new AbortController().signal, clock, 1024)),
    );
    expect(await Promise.all(calls)).toEqual(Array(50).fill('ECONNREFUSED'));
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('the pool closed (gateway close) with 2 000 waiters: the call on the wire finishes, every waiter fails, no slot kept', async () => {
    const held: Held[] = [];
    const { url } = await rawProvider((h) => held.push(h));
    const registry = new ProviderRegistry({ p: { baseUrl: url, maxConnections: 1 } }, {});
    const p = registry.get('p')!;
    const clock = new FakeClock();
    const calls = Array.from({ length: 2_000 }, () =>
      outcome(callProvider(p, '{}', 60_000, new AbortController().signal, clock, 1024)),
    );
    await until(() => held.length === 1);
    const closing = registry.close();
    held[0]!.res.end(BODY);
    const results = await Promise.all(calls);
    await closing;
    expect(results[0]).toBe(`ok:${BODY.length}`);
    expect(new Set(results.slice(1))).toEqual(new Set(['UND_ERR_CLOSED']));
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });
});

/** Proves through the gateway that exactly `max` calls reach `sim` at once, then lets them all answer. */
async function gatewayCapacity(
  client: OpenAI,
  sim: Awaited<ReturnType<typeof startSim>>,
  max: number,
): Promise<void> {
  const before = sim.requests.length;
  sim.faults.patch({ hang: true });
  const calls = Array.from({ length: max + 1 }, () => client.chat.completions.create(ask('sim/m')));
  await until(() => sim.requests.length === before + max);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(sim.requests.length).toBe(before + max);
  sim.faults.patch({ hang: false });
  expect((await Promise.all(calls)).map((c) => c.choices.length)).toEqual(Array(max + 1).fill(1));
  expect(sim.requests.length).toBe(before + max + 1);
}

describe('maxConnections through the gateway (openai client, simulated provider)', () => {
  it('retries to the same capped provider never deadlock on their own slot: 4 clients × 3 attempts over 1 slot', async () => {
    const sim = await startSim(defer, { errorRate: 1 });
    const { client } = await startGateway(
      defer,
      { sim },
      { providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY', maxConnections: 1 } } },
    );
    const headers = { 'x-breakwater-max-attempts': '3', 'x-breakwater-retry-delay': '0' };
    const errors = await Promise.all(
      [0, 1, 2, 3].map(
        (i) =>
          client.chat.completions
            .create(ask('sim/m', { user: `u${i}` }), { headers })
            .catch((e: unknown) => e) as Promise<APIError>,
      ),
    );
    expect(errors.map((e) => [e.status, e.headers?.get('x-breakwater-attempts')])).toEqual(
      Array(4).fill([503, '3']),
    );
    expect(sim.requests).toHaveLength(12);
    sim.faults.patch({ errorRate: 0 });
    await gatewayCapacity(client, sim, 1);
  });

  it('a fallback chain whose two steps share the capped provider: the second step gets the slot the first freed', async () => {
    const { url, sockets, bodies } = await rawProvider(({ body, res }) => {
      const model = (JSON.parse(body) as { model: string }).model;
      if (model === 'bad') res.writeHead(500).end('{"error":{"message":"down"}}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(BODY);
    });
    const steps: AiStep[] = [
      { name: 'primary', provider: 'p', model: 'bad', maxAttempts: 2, retryDelayMs: 0 },
      { name: 'fallback', provider: 'p', model: 'good', maxAttempts: 1 },
    ];
    const { client, gateway } = await startGateway(
      defer,
      {},
      {
        providers: { p: { baseUrl: url, maxConnections: 1 } },
        routes: () => ({ name: 'r', run: (request, ctx) => runFallbackChain(steps, request, ctx) }),
      },
    );
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        client.chat.completions.create(ask('dynamic/r', { user: `u${i}` })).withResponse(),
      ),
    );
    expect(answers.map((a) => a.response.headers.get('x-breakwater-step'))).toEqual(
      Array(5).fill('fallback'),
    );
    expect(answers.map((a) => a.response.headers.get('x-breakwater-attempts'))).toEqual(Array(5).fill('3'));
    expect(bodies).toHaveLength(15);
    expect(sockets()).toBe(1);
    expect(gateway.context.providers.get('p')!.slots!.stats).toEqual({ busy: 0, waiting: 0 });
  });

  it('streams hold their slot to the end: a client leaving mid-stream, a provider cutting one, both free it', async () => {
    const sim = await startSim(defer, { tokensPerSecond: 200 });
    const { client, gateway } = await startGateway(
      defer,
      { sim },
      { providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY', maxConnections: 1 } } },
    );
    const slots = gateway.context.providers.get('sim')!.slots!;
    // A client that leaves after its first chunk, with another waiting behind it.
    const stream = await client.chat.completions.create({ ...ask('sim/m'), stream: true, max_tokens: 400 });
    const behind = client.chat.completions.create(ask('sim/m', { max_tokens: 3 }));
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      break; // the openai client aborts its request
    }
    expect((await behind).choices).toHaveLength(1);
    // A stream the provider cuts halfway.
    sim.faults.patch({ cutMidStream: true, tokensPerSecond: 0 });
    const cut = await client.chat.completions.create({ ...ask('sim/m'), stream: true, max_tokens: 20 });
    let failed = false;
    try {
      for await (const chunk of cut) void chunk;
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
    sim.faults.patch({ cutMidStream: false });
    await until(() => slots.stats.busy === 0);
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
    await gatewayCapacity(client, sim, 1);
  });

  it('a client that stops reading a long stream keeps its slot (backpressure) until it leaves; then the next call goes', async () => {
    const sim = await startSim(defer);
    const { url, client, gateway } = await startGateway(
      defer,
      { sim },
      { providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY', maxConnections: 1 } } },
    );
    const slots = gateway.context.providers.get('sim')!.slots!;
    const body = JSON.stringify({ ...ask('sim/m'), stream: true, max_tokens: 200_000 });
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.pause(); // never reads
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await until(() => sim.requests.length === 1);
    const next = client.chat.completions.create(ask('sim/m', { max_tokens: 2 }));
    await until(() => slots.stats.waiting === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([sim.requests.length, slots.stats]).toEqual([1, { busy: 1, waiting: 1 }]);
    socket.destroy();
    expect((await next).choices).toHaveLength(1);
    expect(slots.stats).toEqual({ busy: 0, waiting: 0 });
  });

  it('first-byte timeouts on the wire and while waiting (x-breakwater-request-timeout) both free the slot', async () => {
    const sim = await startSim(defer, { hang: true });
    const { client, gateway } = await startGateway(
      defer,
      { sim },
      { providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY', maxConnections: 1 } } },
    );
    const timed = (ms: number): Promise<APIError> =>
      client.chat.completions
        .create(ask('sim/m'), {
          headers: { 'x-breakwater-request-timeout': String(ms), 'x-breakwater-max-attempts': '1' },
        })
        .catch((e: unknown) => e) as Promise<APIError>;
    const [onWire, waiting] = await Promise.all([timed(300), timed(100)]);
    expect([onWire.status, onWire.code, waiting.status, waiting.code]).toEqual([
      504,
      'first_byte_timeout',
      504,
      'first_byte_timeout',
    ]);
    expect(sim.requests).toHaveLength(1);
    expect(gateway.context.providers.get('sim')!.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    await gatewayCapacity(client, sim, 1);
  });
});
