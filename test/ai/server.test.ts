/**
 * The gateway mounted on Breakwater's own server (`createServer({ routes: [gateway.routes] })`) over a SQLite
 * store whose counters hold the limits: answers keep their problem+json shape, and a stream outlives the
 * server's handler timeout (a streamed reply is hijacked once its first byte is there).
 */
import { connect } from 'node:net';
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { createAiGateway, type AiRequestLog } from '../../src/ai/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SIM_KEY, ask, startSim, tempDb, useCleanups } from './support.js';

const defer = useCleanups();

describe('AI gateway on createServer', () => {
  it('serves plain and streamed completions, refuses over a rate rule, and streams past the handler timeout', async () => {
    const sim = await startSim(defer, { tokensPerSecond: 20 });
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai') });
    defer(() => store.close());
    const jobs = createJobs({ store });
    const gateway = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
      store,
      rateRules: [
        { name: 'three', limit: 3, windowMs: 60_000, technique: 'sliding', scope: { by: 'provider' } },
      ],
    });
    const http = createServer({ jobs, store, routes: [gateway.routes], requestTimeoutMs: 1_000 });
    defer(async () => {
      await closeGracefully(http, { graceMs: 500 });
      await gateway.close();
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const address = http.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });

    const plain = await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 2 }));
    expect(plain.choices[0]!.message.content).toBe('A thoughtful');

    // 30 tokens at 20 a second: 1.5 s of streaming, past the server's 1 s handler timeout.
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      max_tokens: 30,
    });
    let tokens = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) tokens++;
    expect(tokens).toBe(30);

    await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 1 }));
    const refused = (await client.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 1 }))
      .catch((e: unknown) => e)) as APIError;
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('rate_limited');
    expect(refused.headers?.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(sim.requests).toHaveLength(3);
  }, 15_000);

  it("answers 504 timeout when the route's answerTimeoutMs passes, and stops calling the provider", async () => {
    const sim = await startSim(defer, { hang: true });
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    const gateway = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
      // The provider's first-byte timeout is longer than the route's: the route's timeout answers first.
      defaults: { timeoutMs: 60_000, maxAttempts: 3 },
      answerTimeoutMs: 300,
    });
    const lines: AiRequestLog[] = [];
    gateway.onRequest((line) => lines.push(line));
    const http = createServer({
      jobs: createJobs({ store }),
      store,
      routes: [gateway.routes],
      // The server's own timeout (sized for tool calls) is shorter and does not apply to the AI route.
      requestTimeoutMs: 100,
    });
    defer(async () => {
      await closeGracefully(http, { graceMs: 500 });
      await gateway.close();
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const { port } = http.server.address() as { port: number };
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });

    const began = performance.now();
    const failed = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    // The route's 300 ms, not the server's 100 ms (a timer never fires early).
    expect(performance.now() - began).toBeGreaterThanOrEqual(299);
    expect(failed.status).toBe(504);
    expect(failed.code).toBe('timeout');
    // The provider call was aborted with the answer: nothing hangs there, and one line says what happened.
    await expect.poll(() => sim.faults.hanging()).toBe(0);
    await expect.poll(() => lines.length).toBe(1);
    expect(lines[0]).toMatchObject({ status: 504, outcome: 'timeout', attempts: 1 });
    expect(sim.requests).toHaveLength(1);

    // A body still arriving at the deadline never ran: 408, and the connection closes.
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"model":',
    );
    await closed;
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(received.toLowerCase()).toContain('connection: close');
    expect(sim.requests).toHaveLength(1);
  }, 15_000);
  // Found by a fresh user: a stream still open when the grace of a graceful close ran out was cut with the
  // connection, and the official client threw `TypeError: terminated`. It now gets the error event.
  it('a stream still open when the grace runs out ends with the shutting_down error event, not a cut connection', async () => {
    const sim = await startSim(defer, { tokensPerSecond: 5 });
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    const gateway = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
    });
    const lines: AiRequestLog[] = [];
    gateway.onRequest((line) => lines.push(line));
    const http = createServer({ jobs: createJobs({ store }), store, routes: [gateway.routes] });
    defer(() => gateway.close());
    await http.listen({ host: '127.0.0.1', port: 0 });
    const { port } = http.server.address() as { port: number };
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });
    // 50 tokens at 5 a second: 10 s of streaming, far past a 300 ms grace.
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      max_tokens: 50,
    });
    let content = '';
    let failure: unknown;
    const read = (async () => {
      try {
        for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      } catch (error) {
        failure = error;
      }
    })();
    await expect.poll(() => content.length).toBeGreaterThan(0);
    expect(await closeGracefully(http, { graceMs: 300 })).toEqual({ forced: true });
    await read;
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toBe(
      'The gateway is shutting down and cut the stream before it was complete; send the request again.',
    );
    expect(content.length).toBeGreaterThan(0);
    // One line, as for any stream that ended with an error event.
    await expect.poll(() => lines.length).toBe(1);
    expect(lines[0]).toMatchObject({ outcome: 'stream_error', status: 200 });
  }, 15_000);
});
