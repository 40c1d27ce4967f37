import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { requestSignal } from '../../src/server/index.js';
import { harness, listen, type Harness } from '../../src/server/test-support.js';

const never = (): Promise<never> => new Promise(() => undefined);

class Raw {
  data = '';
  ended = false;
  readonly closed: Promise<void>;
  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (this.data += c));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => ((this.ended = true), resolve())));
  }
  static async open(base: string): Promise<Raw> {
    const url = new URL(base);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    return new Raw(socket);
  }
}

describe('explore', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('lazy signal after timeout', async () => {
    let late: AbortSignal | undefined;
    let go!: () => void;
    const wait = new Promise<void>((r) => (go = r));
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.post('/work', async (request) => {
            await wait;
            late = requestSignal(request);
            return { late: late.aborted };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const res = fetch(`${base}/work`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    await new Promise((r) => setTimeout(r, 30));
    await h.clock.tickAsync(50);
    const got = await res;
    console.log('status', got.status, await got.text());
    go();
    await new Promise((r) => setTimeout(r, 30));
    console.log('late aborted', late?.aborted, late?.reason);
  });

  it('handler that reacts to abort synchronously-ish', async () => {
    h = await harness({
      requestTimeoutMs: 50,
      routes: [
        (app) => {
          app.get('/race', async (request) => {
            const signal = requestSignal(request);
            await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
            return { partial: true };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const errors: unknown[] = [];
    const onErr = (e: unknown) => errors.push(e);
    process.on('unhandledRejection', onErr);
    process.on('uncaughtException', onErr);
    const res = fetch(`${base}/race`);
    await new Promise((r) => setTimeout(r, 30));
    await h.clock.tickAsync(50);
    const got = await res;
    console.log('race status', got.status, await got.text());
    await new Promise((r) => setTimeout(r, 50));
    process.off('unhandledRejection', onErr);
    process.off('uncaughtException', onErr);
    console.log('errors', errors);
  });

  it('pipelined disconnect', async () => {
    const signals: AbortSignal[] = [];
    h = await harness({
      requestTimeoutMs: 10_000,
      routes: [
        (app) => {
          app.get('/hang', (request) => {
            signals.push(requestSignal(request));
            return never();
          });
        },
      ],
    });
    const base = await listen(h.app);
    const raw = await Raw.open(base);
    raw.socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\nGET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
    await expect.poll(() => signals.length).toBe(2);
    raw.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    console.log('pipelined', signals.map((s) => [s.aborted, (s.reason as { code?: string })?.code]), h.clock.pendingTimers());
  });

  it('slow body plain POST', async () => {
    let ran = 0;
    h = await harness({
      requestTimeoutMs: 100,
      routes: [
        (app) => {
          app.post('/orders', async () => {
            ran++;
            return { ok: true };
          });
        },
      ],
    });
    const base = await listen(h.app);
    const raw = await Raw.open(base);
    raw.socket.write('POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"a":');
    await new Promise((r) => setTimeout(r, 30));
    await h.clock.tickAsync(100);
    await expect.poll(() => raw.data.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    console.log('slow body answer', JSON.stringify(raw.data), 'ended', raw.ended, h.clock.pendingTimers());
    raw.socket.write('1234567890123}');
    await new Promise((r) => setTimeout(r, 50));
    raw.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((r) => setTimeout(r, 100));
    console.log('after', JSON.stringify(raw.data), 'ended', raw.ended, 'ran', ran);
    raw.socket.destroy();
  });
});
