import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { deferred, fixedBackoff, flush, harness, type Deferred, type Harness } from './test-support.js';

/**
 * Ordering keys through the runtime: enqueue's `orderingKey` and the worker's wake-ups. The FakeClock never
 * reaches the 5 s safety-net poll unless a test moves it, so every "started at once" below was pushed by a
 * store notification.
 */
describe('jobs with ordering keys', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  /** A handler that records each start and waits until the test opens its gate (or its signal aborts). */
  function gated(): {
    started: string[];
    open(name: string): void;
    handler(ctx: { payload: { name: string }; signal: AbortSignal }): Promise<string>;
  } {
    const started: string[] = [];
    const gates = new Map<string, Deferred<void>>();
    const gate = (name: string) => {
      let d = gates.get(name);
      if (d === undefined) gates.set(name, (d = deferred()));
      return d;
    };
    return {
      started,
      open: (name) => gate(name).resolve(),
      async handler({ payload, signal }) {
        started.push(payload.name);
        const aborted = new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error)),
        );
        await Promise.race([gate(payload.name).promise, aborted]);
        return payload.name;
      },
    };
  }

  it('5 jobs of one key run one at a time in enqueue order with concurrency 4; other keys and keyless jobs run alongside', async () => {
    h = await harness();
    const g = gated();
    h.jobs.defineJob('order.event', g.handler, { concurrency: 4 });
    h.jobs.start();
    for (let i = 1; i <= 5; i++) await h.jobs.enqueue('order.event', { name: `a${i}` }, { orderingKey: 'a' });
    await h.jobs.enqueue('order.event', { name: 'b1' }, { orderingKey: 'b' });
    await h.jobs.enqueue('order.event', { name: 'plain' });
    await flush(h.clock);
    expect(g.started).toEqual(['a1', 'b1', 'plain']);
    for (let i = 1; i <= 4; i++) {
      g.open(`a${i}`);
      await flush(h.clock);
      expect(g.started.filter((name) => name.startsWith('a'))).toEqual(
        Array.from({ length: i + 1 }, (_, k) => `a${k + 1}`),
      );
    }
    g.open('a5');
    g.open('b1');
    g.open('plain');
    await flush(h.clock);
    expect((await h.jobs.stats()).counts).toMatchObject({ completed: 7, pending: 0, in_progress: 0 });
  });

  it('the next job of a key, of a type another runtime runs, starts as soon as its predecessor completes', async () => {
    h = await harness();
    // A second runtime on the same store that runs only the successor's type: nothing in it wakes when the
    // first runtime's job completes, except the store's announcement of the successor.
    const other = await harness({ clock: h.clock, owner: 'w2' }, h.store);
    const g = gated();
    h.jobs.defineJob('payment.created', g.handler);
    other.jobs.defineJob('payment.succeeded', g.handler);
    h.jobs.start();
    other.jobs.start();
    try {
      await h.jobs.enqueue('payment.created', { name: 'created' }, { orderingKey: 'order-7' });
      await other.jobs.enqueue('payment.succeeded', { name: 'succeeded' }, { orderingKey: 'order-7' });
      await flush(h.clock);
      expect(g.started).toEqual(['created']);
      g.open('created');
      await flush(h.clock);
      expect(g.started).toEqual(['created', 'succeeded']);
      g.open('succeeded');
      await flush(h.clock);
      expect((await h.jobs.stats()).counts.completed).toBe(2);
    } finally {
      await other.jobs.stop({ graceMs: 0 });
    }
  });

  it('a retrying predecessor holds its successor through the backoff; a dead-lettered one does not', async () => {
    h = await harness();
    const runs: string[] = [];
    let failFirst = 1;
    h.jobs.defineJob<{ name: string }>(
      'step',
      ({ payload }) => {
        runs.push(payload.name);
        if (payload.name === 'first' && failFirst-- > 0) {
          throw new BreakwaterError('upstream_unavailable', { message: 'down' });
        }
        if (payload.name === 'doomed') throw new BreakwaterError('invalid_payload', { message: 'bad' });
        return payload.name;
      },
      { concurrency: 4, backoff: fixedBackoff(1_000) },
    );
    h.jobs.start();
    await h.jobs.enqueue('step', { name: 'first' }, { orderingKey: 'k' });
    await h.jobs.enqueue('step', { name: 'second' }, { orderingKey: 'k' });
    await flush(h.clock);
    expect(runs).toEqual(['first']);
    await h.clock.tickAsync(999);
    expect(runs).toEqual(['first']);
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(runs).toEqual(['first', 'first', 'second']);

    const doomed = await h.jobs.enqueue('step', { name: 'doomed' }, { orderingKey: 'j' });
    await h.jobs.enqueue('step', { name: 'after' }, { orderingKey: 'j' });
    await flush(h.clock);
    expect(runs.slice(3)).toEqual(['doomed', 'after']);
    expect(await h.jobs.get(doomed)).toMatchObject({ status: 'failed' });
  });

  it('a blocked job does not keep the worker claiming (no spin while its predecessor runs)', async () => {
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: ':memory:', clock });
    // The store, counting claims (every call goes through to it).
    let claims = 0;
    const counted = new Proxy(store, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop === 'claim') {
          return (...args: Parameters<typeof target.claim>) => {
            claims++;
            return target.claim(...args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    h = await harness({ clock }, counted);
    const g = gated();
    h.jobs.defineJob('order.event', g.handler, { concurrency: 4 });
    h.jobs.start();
    await h.jobs.enqueue('order.event', { name: 'a1' }, { orderingKey: 'a' });
    await h.jobs.enqueue('order.event', { name: 'a2' }, { orderingKey: 'a' });
    await flush(h.clock);
    expect(g.started).toEqual(['a1']);
    const settled = claims;
    await flush(h.clock);
    await flush(h.clock);
    expect(claims).toBe(settled);
    g.open('a1');
    g.open('a2');
    await flush(h.clock);
    expect(g.started).toEqual(['a1', 'a2']);
  });

  it('enqueue rejects a bad orderingKey with invalid_payload and writes nothing', async () => {
    h = await harness();
    h.jobs.defineJob('step', () => null);
    for (const orderingKey of ['', 'x'.repeat(256), 42 as unknown as string]) {
      await expect(h.jobs.enqueue('step', {}, { orderingKey })).rejects.toMatchObject({
        code: 'invalid_payload',
        details: { field: 'orderingKey' },
      });
    }
    expect(await h.jobs.list()).toEqual([]);
    const id = await h.jobs.enqueue('step', {}, { orderingKey: 'x'.repeat(255) });
    expect((await h.jobs.get(id))!.orderingKey).toBe('x'.repeat(255));
  });
});
