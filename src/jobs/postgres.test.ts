import { afterEach, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { eventually } from '../../test/support/eventually.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';
import { fixedBackoff, harness, type Harness } from './test-support.js';

/**
 * A subset of the jobs tests on PostgreSQL (BREAKWATER_TEST_DATABASE_URL), each in a fresh schema dropped
 * after it. Store I/O and NOTIFY take real time here, so conditions are polled for up to 5 s of real time
 * (the only real waits of the jobs tests); all job timing still runs on the FakeClock.
 */

describePostgres('jobs tests')('jobs on PostgreSQL', () => {
  const schemas = testSchemas();
  let schema: string;
  let h: Harness;

  async function pgHarness(): Promise<Harness> {
    schema = await schemas.create();
    const clock = new FakeClock();
    return harness({ clock }, await openPostgresStore({ url, clock, schema }));
  }

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
    await schemas.drop(schema);
  });

  it('enqueue → run → complete, with events seq 1..n', async () => {
    h = await pgHarness();
    h.jobs.defineJob<{ n: number }>('double', async (ctx) => {
      await ctx.progress(1, 1);
      return ctx.payload.n * 2;
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('double', { n: 21 }, { idempotencyKey: 'k' });
    expect(await h.jobs.enqueue('double', { n: 0 }, { idempotencyKey: 'k' })).toBe(id);
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: 42, attempts: 1 });
    });
    expect((await h.store.events(id)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'job.started'],
      [2, 'job.progress'],
      [3, 'job.completed'],
    ]);
  });

  it('cancel of a running job aborts its handler; it ends canceled and is not retried', async () => {
    h = await pgHarness();
    let runs = 0;
    let reason: unknown;
    h.jobs.defineJob('long', async (ctx) => {
      runs++;
      reason = await new Promise((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(ctx.signal.reason)),
      );
      throw reason;
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('long', {});
    await eventually(h.clock, async () => expect(runs).toBe(1));
    await h.jobs.cancel(id);
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'canceled', attempts: 1 });
    });
    expect(reason).toBeInstanceOf(BreakwaterError);
    expect(reason).toMatchObject({ code: 'canceled' });
    await h.clock.tickAsync(60_000);
    expect(runs).toBe(1);
  });

  it('ordering key: one at a time in enqueue order with concurrency 4, across runtimes, woken by NOTIFY', async () => {
    h = await pgHarness();
    // A second runtime on its own store (a second process, as far as the database can tell) runs the
    // successor's type. The FakeClock never reaches the safety-net poll: only notifications wake the workers.
    const other = await harness(
      { clock: h.clock, owner: 'w2' },
      await openPostgresStore({ url, clock: h.clock, schema }),
    );
    const order: string[] = [];
    let active = 0;
    let overlap = 0;
    const handler = async ({ payload }: { payload: { name: string } }) => {
      active++;
      overlap = Math.max(overlap, active);
      order.push(payload.name);
      // Stay busy for a few turns of the event loop, so an overlapping run would be seen.
      for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      active--;
      return payload.name;
    };
    h.jobs.defineJob('order.event', handler, { concurrency: 4 });
    other.jobs.defineJob('order.closed', handler, { concurrency: 4 });
    try {
      for (let i = 1; i <= 5; i++)
        await h.jobs.enqueue('order.event', { name: `e${i}` }, { orderingKey: 'o1' });
      await other.jobs.enqueue('order.closed', { name: 'closed' }, { orderingKey: 'o1' });
      h.jobs.start();
      other.jobs.start();
      await eventually(h.clock, async () => {
        expect((await h.jobs.stats()).counts.completed).toBe(6);
      });
      expect(order).toEqual(['e1', 'e2', 'e3', 'e4', 'e5', 'closed']);
      expect(overlap).toBe(1);
    } finally {
      await other.jobs.stop({ graceMs: 0 });
      await other.store.close();
    }
  });

  it('a dead-lettered job runs again after retry(id)', async () => {
    h = await pgHarness();
    let calls = 0;
    h.jobs.defineJob(
      'once',
      () => {
        calls++;
        if (calls === 1) throw new BreakwaterError('upstream_error', { message: 'rejected' });
        return 'ok';
      },
      { backoff: fixedBackoff(1) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('once', {});
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'failed', error: { code: 'upstream_error' } });
    });
    await h.jobs.retry(id);
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: 'ok', attempts: 1 });
    });
    expect((await h.store.events(id)).map((e) => e.type)).toEqual([
      'job.started',
      'job.failed',
      'job.started',
      'job.completed',
    ]);
  });

  it('a circuit_open wait of 20 s with a 1 s backoff reruns at +20 s; the dead letter keeps the wait', async () => {
    h = await pgHarness();
    const t0 = h.clock.now();
    const runs: number[] = [];
    h.jobs.defineJob(
      'analysis',
      () => {
        runs.push(h.clock.now());
        throw new BreakwaterError('circuit_open', {
          retryAfterMs: 20_000,
          details: { dependency_code: 'gift_service_unavailable' },
        });
      },
      { maxAttempts: 2, backoff: fixedBackoff(1_000) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('analysis', {});
    const error = (retryAt: number) => ({
      code: 'circuit_open',
      message: 'The service is temporarily unavailable after repeated failures; try again shortly.',
      kind: 'transient',
      userFacing: true,
      dependencyCode: 'gift_service_unavailable',
      retryAt,
    });
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'pending', runAt: t0 + 20_000 });
    });
    expect((await h.jobs.get(id))?.error).toEqual(error(t0 + 20_000));
    await h.clock.tickAsync(19_999);
    expect(runs).toEqual([t0]);
    await h.clock.tickAsync(1);
    await eventually(h.clock, async () => {
      expect(await h.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 2 });
    });
    expect(runs).toEqual([t0, t0 + 20_000]);
    expect((await h.jobs.get(id))?.error).toEqual(error(t0 + 40_000));
    const failed = (await h.store.events(id)).at(-1);
    expect(failed).toMatchObject({ type: 'job.failed', payload: { error: error(t0 + 40_000), attempts: 2 } });
  });
});
