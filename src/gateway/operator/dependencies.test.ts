/**
 * Breaker and timeout notices from a real upstream (`createUpstream`) calling a real HTTP server, on a fake
 * clock: the exact lines an operator sees, and how a storm is paced.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, type Disposable } from '../../core/index.js';
import { createUpstream, type Upstream, type UpstreamOptions } from '../../upstream/index.js';
import { textNotices, watchOperatorEvents } from './index.js';

/** A dependency answering 200, 503, or never, as `mode` says; counts the requests it received. */
class Dependency {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  received = 0;
  url = '';
  private readonly server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      this.received++;
      if (this.mode === 'hang') return;
      res.writeHead(this.mode === 'ok' ? 200 : 503, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Partial<UpstreamOptions>) {
  const dependency = await new Dependency().start();
  const clock = new FakeClock();
  const upstream: Upstream = createUpstream({
    name: 'gift',
    baseUrl: dependency.url,
    timeoutMs: 4_000,
    retry: false,
    clock,
    ...options,
  });
  const lines: string[] = [];
  const watching: Disposable = watchOperatorEvents({
    sink: textNotices((line) => lines.push(line), clock),
    clock,
    upstreams: [upstream],
  });
  cleanups.push(
    () => dependency.close(),
    () => upstream.close(),
    () => watching.dispose(),
  );
  /** One call; resolves whatever it ends with. */
  const call = () =>
    upstream.get('/gifts').then(
      () => 'ok',
      (error: { code?: string }) => error.code,
    );
  return { dependency, clock, upstream, lines, call };
}

/** Waits for real I/O (the dependency receiving a request), never for time. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  if (!condition()) throw new Error('until: the condition never held');
}

describe('operator notices: breakers', () => {
  it('opening, closing and reopening, each with what happens next; a flapping breaker is summed up', async () => {
    const { dependency, clock, lines, call } = await setup({
      breaker: { consecutiveFailures: 3, openMs: 5_000 },
    });
    const fail = async (times: number) => {
      dependency.mode = 'fail';
      for (let i = 0; i < times; i++) expect(await call()).toBe('upstream_unavailable');
    };
    const trial = async (mode: 'ok' | 'fail') => {
      await clock.tickAsync(5_000);
      dependency.mode = mode;
      await call();
    };
    await fail(3); // 00:00 opened
    await trial('ok'); // 00:05 closed
    await fail(3); // 00:05 opened
    await trial('fail'); // 00:10 reopened
    await trial('ok'); // 00:15 closed: the fifth change within the minute, held back
    await fail(3); // 00:15 opened: held back
    expect(lines).toEqual([
      '2026-01-01T00:00:00Z breaker gift opened after 3 failures in a row; calls fail fast for 5 s, then a trial call',
      '2026-01-01T00:00:05Z breaker gift closed: the trial call succeeded; calls flow again',
      '2026-01-01T00:00:05Z breaker gift opened after 3 failures in a row; calls fail fast for 5 s, then a trial call',
      '2026-01-01T00:00:10Z breaker gift reopened: the trial call failed; calls fail fast for 5 s, then a trial call (opened 2 times in a row)',
    ]);
    await clock.tickAsync(44_999);
    expect(lines).toHaveLength(4);
    await clock.tickAsync(1);
    // The end of the minute that began at the first line; the open period of 00:15 has ended by then.
    expect(lines.slice(4)).toEqual([
      '2026-01-01T00:01:00Z breaker gift: 2 more state changes within 1 min not shown; now half-open',
    ]);
  });

  it('isolated and reset by hand, and a state another process decided (shared breakers)', async () => {
    const { clock, upstream, lines } = await setup({});
    const breaker = upstream.policies.breaker!;
    breaker.isolate();
    await clock.tickAsync(1_000);
    breaker.reset();
    breaker.restore({
      version: 1,
      name: 'gift',
      state: 'open',
      openedAt: clock.now() - 5_000,
      halfOpenAt: clock.now() + 25_000,
      openDurationMs: 30_000,
      consecutiveOpens: 1,
      takenAt: clock.now(),
    });
    expect(lines).toEqual([
      '2026-01-01T00:00:00Z breaker gift isolated by hand; calls fail fast until it is reset',
      '2026-01-01T00:00:01Z breaker gift reset by hand; calls flow again',
      '2026-01-01T00:00:01Z breaker gift opened in another process (shared state); calls fail fast for 25 s, then a trial call',
    ]);
  });
});

describe('operator notices: timeouts', () => {
  it('"timing out repeatedly" at the third timeout within a minute, then at most once a minute', async () => {
    const { dependency, clock, lines, call } = await setup({
      breaker: { consecutiveFailures: 100, openMs: 30_000 },
    });
    dependency.mode = 'hang';
    const timeout = async () => {
      const seen = dependency.received;
      const ended = call();
      await until(() => dependency.received === seen + 1);
      await clock.tickAsync(4_000);
      expect(await ended).toBe('timeout');
    };
    await timeout(); // 00:04
    await timeout(); // 00:08
    expect(lines).toEqual([]);
    await timeout(); // 00:12: the third within a minute
    expect(lines).toEqual([
      '2026-01-01T00:00:12Z dependency gift timing out repeatedly: 3 timeouts within 1 min (the last cut off after 4 s); callers get timeout errors, and its breaker opens if they go on',
    ]);
    // The storm goes on, a timeout every 4 s: silent until a minute after that line.
    while (clock.now() < Date.UTC(2026, 0, 1, 0, 1, 8)) await timeout();
    expect(lines).toHaveLength(1);
    await timeout(); // 01:12
    expect(lines.slice(1)).toEqual([
      // 00:16 to 01:12: the buckets of the last minute.
      '2026-01-01T00:01:12Z dependency gift timing out repeatedly: 15 timeouts within 1 min (the last cut off after 4 s); callers get timeout errors, and its breaker opens if they go on',
    ]);
  });
});
