/**
 * The pushed stream (src/ai/step/execute.ts StreamAnswer, src/ai/http/respond.ts ResponseSink), end to end
 * over real sockets: a provider that honours its own socket's backpressure, the gateway on Fastify, and a
 * client that stops reading. What the push must keep: every frame, in order, exactly once; the provider
 * paused while the client does not read (the gateway does not buffer the answer); the right log outcome.
 */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { ask, startGateway, useCleanups } from '../ai/support.js';
import { stalled } from '../support/stalled.js';

const defer = useCleanups();

/** A frame of `size` bytes or so, numbered. */
const frame = (i: number, size: number): string =>
  `data: {"choices":[{"delta":{"content":"w${i}-${'x'.repeat(size)}"}}]}\n\n`;

/**
 * A provider streaming `count` frames as fast as its socket takes them (it waits for 'drain'), then
 * `[DONE]`, or breaking off after `cutAfter` frames. `sent()` counts the frames written so far.
 */
async function firehose(
  count: number,
  size: number,
  cutAfter = Infinity,
): Promise<{ url: string; sent: () => number; closed: () => boolean }> {
  let sent = 0;
  let closed = false;
  const server: Server = createServer((req, res: ServerResponse) => {
    req.resume();
    res.on('close', () => (closed = true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const more = (): void => {
      while (sent < count) {
        if (sent === cutAfter) return void res.socket?.destroy();
        const open = res.write(frame(sent, size));
        sent++;
        if (!open) return void res.once('drain', more);
      }
      res.end('data: [DONE]\n\n');
    };
    more();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  defer(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    sent: () => sent,
    closed: () => closed,
  };
}

/** The numbers of the frames in `text`, in the order they came. */
const numbers = (text: string): number[] =>
  [...text.matchAll(/"content":"w(\d+)-/g)].map((m) => Number(m[1]));

/** Asks the gateway behind `client` for a streamed completion of `raw/m`. */
function askStream(client: Client, signal?: AbortSignal): ReturnType<Client['request']> {
  return client.request({
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ask('raw/m', { stream: true })),
    ...(signal === undefined ? {} : { signal }),
  });
}

async function gatewayOver(providerUrl: string) {
  return startGateway(defer, {}, { providers: { raw: { baseUrl: providerUrl, apiKeyEnv: 'SIM_KEY' } } });
}

describe('a pushed stream through the gateway', () => {
  it('a client that stops reading pauses the provider; read again, every frame arrives once, in order, then [DONE]', async () => {
    const count = 8_000;
    const provider = await firehose(count, 4_000); // ~32 MB, far more than the sockets between hold
    const { url, logs } = await gatewayOver(provider.url);
    const client = new Client(url);
    defer(() => client.close());
    const answer = await askStream(client);
    expect(answer.statusCode).toBe(200);
    // Nothing read: the provider stalls with most of its answer unsent.
    await stalled(provider.sent);
    expect(provider.sent()).toBeLessThan(count / 2);
    expect(logs).toHaveLength(0);
    let text = '';
    for await (const chunk of answer.body) text += (chunk as Buffer).toString();
    expect(numbers(text)).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, status: 200, outcome: 'ok' });
  });

  it('the provider breaking off while the client is behind: the frames it sent, then the error event, no [DONE]', async () => {
    const count = 8_000;
    const provider = await firehose(count, 4_000, 3_000);
    const { url, logs } = await gatewayOver(provider.url);
    const client = new Client(url);
    defer(() => client.close());
    const answer = await askStream(client);
    await stalled(provider.sent);
    expect(provider.sent()).toBeLessThan(3_000);
    let text = '';
    for await (const chunk of answer.body) text += (chunk as Buffer).toString();
    expect(provider.closed()).toBe(true);
    // Every frame written before the cut reached the client (undici may have cut the last one short: it is
    // left out, a frame is passed on only whole).
    const got = numbers(text);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => i));
    expect(got.length).toBeGreaterThanOrEqual(2_990);
    expect(got.length).toBeLessThanOrEqual(3_000);
    expect(text).toMatch(/event: error\ndata: \{"error":\{[^\n]*"code":"stream_interrupted"\}\}\n\n$/);
    expect(text).not.toContain('[DONE]');
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, status: 200, outcome: 'stream_error' });
  });

  it('a client that leaves while the provider is paused: the provider call is closed, logged canceled', async () => {
    const provider = await firehose(8_000, 4_000);
    const { url, logs } = await gatewayOver(provider.url);
    const client = new Client(url);
    defer(() => client.close());
    const controller = new AbortController();
    const answer = await askStream(client, controller.signal);
    await stalled(provider.sent);
    controller.abort();
    await answer.body.text().catch(() => undefined);
    await expect.poll(() => provider.closed()).toBe(true);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, outcome: 'canceled' });
  });

  it.each([
    ['with [DONE] (its blank line left out): whole, logged ok', 'data: [DONE]', 'ok'],
    ['without [DONE]: not whole, the error event, logged stream_error', '', 'stream_error'],
  ])('a stream ended by the connection closing (no length, not chunked) %s', async (_name, last, outcome) => {
    // HTTP/1.0-style framing: undici reports a reset of such a connection as a normal end.
    const server = createNetServer((socket) => {
      socket.once('data', () => {
        socket.end(
          'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n' +
            frame(0, 10) +
            frame(1, 10) +
            last,
        );
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    defer(() => server.close());
    const { url, logs } = await gatewayOver(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
    const client = new Client(url);
    defer(() => client.close());
    const answer = await askStream(client);
    const text = await answer.body.text();
    expect(numbers(text)).toEqual([0, 1]);
    if (outcome === 'ok') expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    else expect(text).toMatch(/event: error\ndata: \{"error":\{[^\n]*"code":"stream_interrupted"\}\}\n\n$/);
    await expect.poll(() => logs.length).toBe(1);
    expect(logs[0]).toMatchObject({ stream: true, status: 200, outcome });
  });
});
