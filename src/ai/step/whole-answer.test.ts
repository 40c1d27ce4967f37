import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, isBreakwaterError } from '../../core/index.js';
import type { Provider } from '../providers.js';
import { callProvider } from './attempt.js';
import { ProviderHttpError } from './provider-error.js';

const servers: Server[] = [];
const pools: Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.destroy()));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A provider over a real HTTP server; `answer` handles each request. */
async function provider(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
  connections?: number,
): Promise<{ provider: Provider; seen: IncomingMessage[]; closed: IncomingMessage[] }> {
  const seen: IncomingMessage[] = [];
  const closed: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    res.once('close', () => closed.push(req));
    answer(req, res);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dispatcher = new Pool(origin, connections === undefined ? {} : { connections });
  pools.push(dispatcher);
  return {
    provider: {
      name: 'p',
      origin,
      completionsPath: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      dispatcher,
      secret: '',
    },
    seen,
    closed,
  };
}

const BODY = '{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}';

describe('callProvider, a non-streamed answer (the dispatch handler)', () => {
  it('reads a whole answer sent in pieces after a 103 Early Hints', async () => {
    const { provider: p } = await provider((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(BODY.slice(0, 10));
      setImmediate(() => res.end(BODY.slice(10)));
    });
    const clock = new FakeClock();
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, clock, 1024);
    expect([bytes.status, bytes.raw!.toString(), bytes.first]).toEqual([200, BODY, undefined]);
    expect(await bytes.rest.next()).toEqual({ done: true, value: undefined });
    expect(bytes.link.aborted).toBe(false);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('an error answer over 64 KB: its status and message from the first 64 KB, the rest not read', async () => {
    const head = JSON.stringify({ error: { message: 'bad things', type: 'x', pad: 'y'.repeat(1000) } });
    const { provider: p, closed } = await provider((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '7' });
      res.write(head);
      const piece = Buffer.alloc(16 * 1024, 0x20);
      let sent = 0;
      const more = (): void => {
        while (sent < 64 * 1024 * 1024 && !res.destroyed) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
      };
      more();
    });
    const clock = new FakeClock();
    const error = await callProvider(p, '{}', 1_000, new AbortController().signal, clock, 1024).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProviderHttpError);
    const http = error as ProviderHttpError;
    // Padded with spaces past the JSON, the text up to 64 KB still parses.
    expect([http.status, http.headers['retry-after'], http.providerError?.message]).toEqual([
      500,
      '7',
      'bad things',
    ]);
    await expect.poll(() => closed.length).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('aborted while queued for a connection: rejects at once with the reason; the pool serves after', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const { provider: p } = await provider((_req, res) => {
      calls++;
      if (calls === 1) void held.then(() => res.end(BODY));
      else res.end(BODY);
    }, 1);
    const clock = new FakeClock();
    const first = callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    await expect.poll(() => calls).toBe(1);
    const client = new AbortController();
    const queued = callProvider(p, '{}', 10_000, client.signal, clock, 1024);
    const reason = new Error('the client left');
    client.abort(reason);
    await expect(queued).rejects.toBe(reason);
    release();
    expect((await first).raw!.toString()).toBe(BODY);
    const after = await callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    expect(after.raw!.toString()).toBe(BODY);
    // The aborted call never reached the provider.
    expect(calls).toBe(2);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('no first byte in time: first_byte_timeout, the request aborted, no timer left', async () => {
    const { provider: p, seen, closed } = await provider(() => undefined);
    const clock = new FakeClock();
    const call = callProvider(p, '{}', 2_000, new AbortController().signal, clock, 1024).catch(
      (e: unknown) => e,
    );
    await expect.poll(() => seen.length).toBe(1);
    clock.tick(1_999);
    expect(closed).toHaveLength(0);
    clock.tick(1);
    const error = await call;
    expect(isBreakwaterError(error) && [error.code, error.details]).toEqual([
      'timeout',
      { timeout_ms: 2_000, reason: 'first_byte_timeout' },
    ]);
    await expect.poll(() => closed.length).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('nothing listening: the network error as undici reports it', async () => {
    const { provider: p } = await provider(() => undefined);
    servers[0]!.close();
    await once(servers[0]!, 'close');
    const clock = new FakeClock();
    const error = (await callProvider(p, '{}', 1_000, new AbortController().signal, clock, 1024).catch(
      (e: unknown) => e,
    )) as { code?: string };
    expect(error.code).toBe('ECONNREFUSED');
    expect(clock.pendingTimers()).toBe(0);
  });
});
