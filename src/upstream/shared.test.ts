import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, type BreakwaterError } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type Store } from '../store/index.js';
import { createUpstream, type Upstream, type UpstreamOptions } from './index.js';
import { TestServer, json, rejection } from './test-support.js';

const T0 = Date.UTC(2026, 0, 1);

/** Polls the store (real time: a write to land, not time to pass) until `key` holds a state. */
async function stored(store: Store, key: string): Promise<unknown> {
  for (let i = 0; i < 2000; i++) {
    const state = await store.counters.get(key);
    if (state !== undefined) return state;
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`stored: ${key} never written`);
}

describe('upstreams sharing their breaker through the store (breaker.shared)', () => {
  let clock: FakeClock;
  let store: Store;
  let serverA: TestServer;
  let serverB: TestServer;
  const upstreams: Upstream[] = [];

  /** A `gift` upstream of one instance: no retry, opens after 3 failures for 30 s, shared every second. */
  function instance(server: TestServer, options: Partial<UpstreamOptions> = {}): Upstream {
    const upstream = createUpstream({
      name: 'gift',
      baseUrl: server.url,
      timeoutMs: 5_000,
      retry: false,
      breaker: {
        consecutiveFailures: 3,
        openMs: 30_000,
        shared: { store: store.counters, refreshMs: 1_000 },
      },
      clock,
      ...options,
    });
    upstreams.push(upstream);
    return upstream;
  }

  beforeEach(async () => {
    clock = new FakeClock(T0);
    store = await openSqliteStore({ path: ':memory:', clock });
    serverA = await TestServer.start();
    serverB = await TestServer.start();
    serverA.on('/gifts', json(503, { title: 'overloaded' }));
    serverB.on('/gifts', json(200, { gifts: ['kite'] }));
  });

  afterEach(async () => {
    await Promise.all(upstreams.splice(0).map((u) => u.close()));
    await serverA.close();
    await serverB.close();
    await store.close();
  });

  it('the first trips its breaker on 503s; the second, after its refresh, fails fast and sends nothing', async () => {
    const a = instance(serverA);
    const b = instance(serverB);
    for (let i = 0; i < 3; i++) {
      expect(((await rejection(a.get('/gifts'))) as BreakwaterError).code).toBe('upstream_unavailable');
    }
    expect(a.breaker!.state()).toMatchObject({ state: 'open', halfOpenAt: T0 + 30_000 });
    expect(await stored(store, 'breaker:gift')).toMatchObject({
      snapshot: { name: 'gift', state: 'open', openedAt: T0, halfOpenAt: T0 + 30_000 },
    });
    expect(b.breaker!.state().state).toBe('closed');

    await clock.tickAsync(1_000); // B's refresh reads the row
    const error = (await rejection(b.get('/gifts'))) as BreakwaterError;
    expect(error.code).toBe('circuit_open');
    expect(error.retryAfterMs).toBe(29_000);
    expect(error.details).toMatchObject({
      circuit_state: 'open',
      dependency_code: 'gift_service_unavailable',
    });
    expect(serverB.count()).toBe(0);
    expect(b.breaker!.state()).toMatchObject({
      state: 'open',
      halfOpenAt: T0 + 30_000,
      lastTransition: { from: 'closed', to: 'open', reason: 'restored', at: T0 + 1_000 },
    });
  });

  it('close() stops the sharing: no timer is left, and a closed upstream takes nothing more', async () => {
    const before = clock.pendingTimers();
    const a = instance(serverA);
    const b = instance(serverB);
    expect(clock.pendingTimers()).toBe(before + 2);
    await b.close();
    expect(clock.pendingTimers()).toBe(before + 1);
    for (let i = 0; i < 3; i++) await rejection(a.get('/gifts'));
    await stored(store, 'breaker:gift');
    await clock.tickAsync(1_000);
    expect(b.breaker!.state().state).toBe('closed');
    await a.close();
    await clock.tickAsync(10_000); // the timeout policy's idle timer fires once and is not re-armed
    expect(clock.pendingTimers()).toBe(before);
  });

  it('without breaker.shared the breaker is per process: no timer, nothing written', async () => {
    const before = clock.pendingTimers();
    const a = instance(serverA, { breaker: { consecutiveFailures: 3, openMs: 30_000 } });
    expect(clock.pendingTimers()).toBe(before);
    for (let i = 0; i < 3; i++) await rejection(a.get('/gifts'));
    expect(a.breaker!.state().state).toBe('open');
    expect(await store.counters.get('breaker:gift')).toBeUndefined();
  });

  it('a bad breaker.shared is a RangeError naming it', () => {
    const make = (shared: unknown) => () =>
      createUpstream({
        name: 'gift',
        baseUrl: serverA.url,
        timeoutMs: 1_000,
        breaker: { shared: shared as { store: Store['counters'] } },
      });
    expect(make('yes')).toThrow(/^createUpstream: breaker\.shared must be an object/);
    expect(make({})).toThrow(/^createUpstream: breaker\.shared\.store must be a CounterStore/);
    expect(make({ store: store.counters, refreshMs: 0 })).toThrow(
      /^createUpstream: breaker\.shared\.refreshMs must be/,
    );
    expect(make({ store: store.counters, refreshMs: 0 })).toThrow(RangeError);
  });
});
