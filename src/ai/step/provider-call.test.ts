import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, isBreakwaterError } from '../../core/index.js';
import { ConnectionSlots } from '../connection-slots.js';
import type { Provider } from '../providers.js';
import { callProvider, type ChunkReader } from './attempt.js';
import { ProviderHttpError } from './provider-error.js';
import { stalled } from '../../../test/support/stalled.js';

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
): Promise<{
  provider: Provider;
  seen: IncomingMessage[];
  closed: IncomingMessage[];
  sockets: () => number;
}> {
  const seen: IncomingMessage[] = [];
  const closed: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    res.once('close', () => closed.push(req));
    answer(req, res);
  });
  let sockets = 0;
  server.on('connection', () => sockets++);
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
      basePath: '/v1',
      completionsPath: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      dispatcher,
      slots: connections === undefined ? undefined : new ConnectionSlots(connections),
      secret: '',
    },
    seen,
    closed,
    sockets: () => sockets,
  };
}

const BODY = '{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}';

describe('callProvider, a non-streamed answer (provider-call.ts)', () => {
  it('reads a whole answer sent in pieces after a 103 Early Hints', async () => {
    const { provider: p } = await provider((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(BODY.slice(0, 10));
      setImmediate(() => res.end(BODY.slice(10)));
    });
    const clock = new FakeClock();
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, clock, 1024);
    expect([bytes.status, bytes.raw!.toString()]).toEqual([200, BODY]);
    const reader = new Reader();
    bytes.body.read(reader);
    expect([reader.text(), reader.ended, reader.error]).toEqual(['', true, undefined]);
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

  it('aborted while waiting for a connection: rejects at once, never reaches the provider, and costs no connection', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const { provider: p, sockets } = await provider((_req, res) => {
      calls++;
      if (calls === 1) void held.then(() => res.end(BODY));
      else res.end(BODY);
    }, 1);
    const clock = new FakeClock();
    const first = callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    await expect.poll(() => calls).toBe(1);
    const client = new AbortController();
    const queued = callProvider(p, '{}', 10_000, client.signal, clock, 1024);
    expect(p.slots!.stats).toEqual({ busy: 1, waiting: 1 });
    const reason = new Error('the client left');
    client.abort(reason);
    await expect(queued).rejects.toBe(reason);
    release();
    expect((await first).raw!.toString()).toBe(BODY);
    const after = await callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    expect(after.raw!.toString()).toBe(BODY);
    // The aborted call never reached the provider, and the one connection served both others: undici
    // would have destroyed it had the aborted call waited in its queue instead (see connection-slots.ts).
    expect(calls).toBe(2);
    expect(sockets()).toBe(1);
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a connection cap: calls beyond it wait and go in arrival order, each slot freed by success or failure', async () => {
    const order: string[] = [];
    const pending: ServerResponse[] = [];
    const { provider: p, sockets } = await provider((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        order.push(body);
        pending.push(res);
      });
    }, 2);
    const clock = new FakeClock();
    const call = (n: number) =>
      callProvider(p, `{"n":${n}}`, 10_000, new AbortController().signal, clock, 1024).then(
        (bytes) => bytes.status,
        (error: unknown) => (error instanceof ProviderHttpError ? error.status : -1),
      );
    const answers = [1, 2, 3, 4, 5].map(call);
    await expect.poll(() => order.length).toBe(2);
    expect(p.slots!.stats).toEqual({ busy: 2, waiting: 3 });
    // A failure frees its slot as a success does.
    pending.shift()!.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"x"}}');
    await expect.poll(() => order.length).toBe(3);
    pending.shift()!.end(BODY);
    await expect.poll(() => order.length).toBe(4);
    pending.shift()!.end(BODY);
    await expect.poll(() => order.length).toBe(5);
    pending.splice(0).forEach((res) => res.end(BODY));
    expect(await Promise.all(answers)).toEqual([500, 200, 200, 200, 200]);
    expect(order).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}', '{"n":5}']);
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
    expect(sockets()).toBe(2);
  });

  it('a call timing out while it waits for a connection: first_byte_timeout, and the next waiter takes the slot', async () => {
    const pending: ServerResponse[] = [];
    const { provider: p, sockets } = await provider((_req, res) => pending.push(res), 1);
    const clock = new FakeClock();
    const first = callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    await expect.poll(() => pending.length).toBe(1);
    const late = callProvider(p, '{}', 500, new AbortController().signal, clock, 1024);
    const third = callProvider(p, '{}', 10_000, new AbortController().signal, clock, 1024);
    clock.tick(500);
    const error = await late.catch((e: unknown) => e);
    expect(isBreakwaterError(error) && error.code).toBe('timeout');
    pending.shift()!.end(BODY);
    expect((await first).status).toBe(200);
    await expect.poll(() => pending.length).toBe(1);
    pending.shift()!.end(BODY);
    expect((await third).status).toBe(200);
    expect(sockets()).toBe(1);
    expect(p.slots!.stats).toEqual({ busy: 0, waiting: 0 });
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

/** A stream's reader that keeps what it is pushed; `room` chunks taken before it answers false (full). */
class Reader implements ChunkReader {
  readonly chunks: Buffer[] = [];
  ended = false;
  error: unknown = undefined;
  endedAfter = -1;
  constructor(public room = Infinity) {}
  onChunk(chunk: Buffer): boolean {
    if (this.ended) throw new Error('a chunk after the end');
    this.chunks.push(chunk);
    return --this.room > 0;
  }
  onEnd(error?: unknown): void {
    if (this.ended) throw new Error('a second end');
    this.ended = true;
    this.error = error;
    this.endedAfter = this.chunks.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString();
  }
  bytes(): number {
    return this.chunks.reduce((n, c) => n + c.length, 0);
  }
}

/** A provider streaming `total` bytes in 64 KB writes as fast as its socket takes them; `sent()` so far. */
async function firehose(total: number): Promise<{ provider: Provider; sent: () => number }> {
  const piece = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const { provider: p } = await provider((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const write = (): void => {
      while (sent < total) {
        sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', write);
      }
      res.end();
    };
    write();
  });
  return { provider: p, sent: () => sent };
}

describe('callProvider, a streamed answer (provider-call.ts)', () => {
  it('hands over at the first chunk, kept for the reader; then each chunk as it arrives, then the end', async () => {
    let more!: () => void;
    const { provider: p } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      more = () => {
        res.write('data: 2\n\n');
        setImmediate(() => {
          res.write('data: 3\n\n');
          setImmediate(() => res.end('data: [DONE]\n\n'));
        });
      };
    });
    const clock = new FakeClock();
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, clock);
    expect([bytes.status, bytes.raw]).toEqual([200, undefined]);
    // The first byte cleared the timer: a long stream is never cut by it.
    expect(clock.pendingTimers()).toBe(0);
    const reader = new Reader();
    bytes.body.read(reader);
    more();
    expect(reader.text()).toMatch(/^data: 1\n\n/); // the first chunk, kept for the reader: pushed at once
    await expect.poll(() => reader.ended).toBe(true);
    expect([reader.text(), reader.error]).toEqual([
      'data: 1\n\ndata: 2\n\ndata: 3\n\ndata: [DONE]\n\n',
      undefined,
    ]);
  });

  it('an empty 200 body: ended at once', async () => {
    const { provider: p } = await provider((_req, res) => res.writeHead(200).end());
    const clock = new FakeClock();
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, clock);
    const reader = new Reader();
    bytes.body.read(reader);
    expect([reader.chunks.length, reader.ended, reader.error]).toEqual([0, true, undefined]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('no reader yet pauses the provider past 64 KB queued: its writes stall, and nothing is lost', async () => {
    const total = 64 * 1024 * 1024;
    const { provider: p, sent } = await firehose(total);
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, new FakeClock());
    // Without the pause the gateway would take all 64 MB.
    await stalled(sent);
    expect(sent()).toBeLessThan(total / 2);
    const reader = new Reader();
    bytes.body.read(reader);
    await expect.poll(() => reader.ended, { timeout: 10_000 }).toBe(true);
    expect([reader.bytes(), sent(), reader.error]).toEqual([total, total, undefined]);
  });

  it('a full reader pauses the provider until it resumes; chunks that arrive meanwhile wait, in order', async () => {
    const total = 64 * 1024 * 1024;
    const { provider: p, sent } = await firehose(total);
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, new FakeClock());
    const reader = new Reader(3);
    bytes.body.read(reader);
    await stalled(sent);
    expect(sent()).toBeLessThan(total / 2);
    const taken = reader.chunks.length;
    expect(taken).toBe(3);
    // Resumed again and again with room for 3 more each time, it gets everything, and no more than 3 a time.
    while (!reader.ended) {
      const before = reader.chunks.length;
      reader.room = 3;
      bytes.body.resume();
      if (reader.chunks.length === before) await new Promise((resolve) => setTimeout(resolve, 1));
      expect(reader.chunks.length - before).toBeLessThanOrEqual(3);
    }
    expect([reader.bytes(), sent(), reader.error]).toEqual([total, total, undefined]);
  });

  it('the provider breaking off mid-stream: the chunks received, then the error (after a full reader resumes)', async () => {
    const { provider: p } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setImmediate(() => {
        res.write('data: 2\n\n');
        setImmediate(() => res.socket!.destroy());
      });
    });
    const clock = new FakeClock();
    const bytes = await callProvider(p, '{}', 1_000, new AbortController().signal, clock);
    const reader = new Reader(1); // full after the first chunk
    bytes.body.read(reader);
    await expect.poll(() => pools[0]!.stats.connected).toBe(0);
    expect([reader.text(), reader.ended]).toEqual(['data: 1\n\n', false]);
    reader.room = Infinity;
    bytes.body.resume();
    expect([reader.text(), reader.ended, reader.endedAfter]).toEqual(['data: 1\n\ndata: 2\n\n', true, 2]);
    expect(reader.error).toBeInstanceOf(Error);
    expect((reader.error as Error).name).toBe('SocketError');
  });

  it('aborted: the reader ends at once with the reason, chunks still queued dropped, and the request is closed', async () => {
    const { provider: p, closed } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setImmediate(() => res.write('data: 2\n\n'));
    });
    const clock = new FakeClock();
    const client = new AbortController();
    const bytes = await callProvider(p, '{}', 1_000, client.signal, clock);
    const reader = new Reader(1);
    bytes.body.read(reader);
    await new Promise((resolve) => setTimeout(resolve, 20)); // 'data: 2' arrives (in time or not): it waits, the reader is full
    const reason = new Error('the client left');
    client.abort(reason);
    expect([reader.text(), reader.ended, reader.error]).toEqual(['data: 1\n\n', true, reason]);
    bytes.body.resume(); // nothing more after the end
    expect(reader.chunks.length).toBe(1);
    await expect.poll(() => closed.length).toBe(1);
    expect(bytes.link.aborted).toBe(true);
  });
});
