import { expect, it } from 'vitest';
import { listenerDrops } from '../../test/support/listener-drop.js';
import { describePostgres } from '../../test/support/postgres.js';
import type { JobStore } from '../store/index.js';
import { createJobs } from './jobs.js';
import { deferred } from './test-support.js';
import type { JobContext, Jobs } from './types.js';

/**
 * Wake-ups and live events across processes survive a dropped LISTEN connection on PostgreSQL: two stores on
 * one schema stand for two processes, and the first one's listener is terminated (its reconnect held until
 * released, see `test/support/listener-drop.ts`). Every runtime polls every 10 minutes on a FakeClock that
 * never moves, so the poll never fires: only notifications, and the reconnect's `external_change`, wake
 * anything up. Real waits are bounded by 5 s each.
 */
const NEVER_MS = 600_000;

describePostgres('jobs reconnect tests')('jobs on PostgreSQL across a dropped LISTEN connection', () => {
  const drops = listenerDrops('bw_reconnect');
  const { clock } = drops;

  function runtime(store: JobStore, owner: string): Jobs {
    const jobs = createJobs({ store, clock, owner, pollMs: NEVER_MS });
    drops.defer(() => jobs.stop({ graceMs: 0 }));
    return jobs;
  }

  it('a worker runs jobs enqueued by another process before, during and after its listener is down', async () => {
    const { a, b, pidA } = await drops.twoProcesses();
    const worker = runtime(a, 'worker');
    const ran: unknown[] = [];
    worker.defineJob('mail', ({ payload }) => void ran.push(payload));
    worker.start();
    const started = clock.now();
    const enqueue = async (payload: string): Promise<string> =>
      (await b.enqueue({ type: 'mail', payload, runAt: clock.now(), priority: 0, maxAttempts: 1 })).job.id;
    const completed = (id: string) => async () => expect((await b.get(id))?.status).toBe('completed');

    await drops.eventually(completed(await enqueue('before')));

    await drops.drop(pidA);
    const during = await enqueue('during'); // its job_available is lost
    expect((await b.get(during))?.status).toBe('pending');
    drops.release(); // the reconnect's external_change runs a claim round
    await drops.eventually(completed(during));

    await drops.eventually(completed(await enqueue('after')));
    expect(ran).toEqual(['before', 'during', 'after']);
    expect(clock.now()).toBe(started); // no poll could have fired
  });

  it('a follower of a job running in another process gets every event once, in order, across a drop', async () => {
    const { a, b, pidA } = await drops.twoProcesses();
    const gateway = runtime(a, 'gateway');
    const worker = runtime(b, 'worker');
    const steps = [deferred(), deferred()];
    // Opened after the test (before the runtimes stop), so a failed test never leaves a handler hanging.
    drops.defer(() => steps.forEach((step) => step.resolve()));
    const handler = async (ctx: JobContext): Promise<string> => {
      await ctx.progress(1, 3);
      await steps[0]!.promise;
      await ctx.progress(2, 3);
      await ctx.partial({ part: 'a' });
      await steps[1]!.promise;
      return 'done';
    };
    gateway.defineJob('steps', handler); // to enqueue; the gateway runs no worker
    worker.defineJob('steps', handler);
    worker.start();

    const id = await gateway.enqueue('steps', {});
    const seen: [number, string][] = [];
    let ended: unknown = 'not yet';
    const sub = gateway.subscribe(id, 0, (e) => seen.push([e.seq, e.type]), { onEnd: (e) => (ended = e) });
    drops.defer(() => sub.dispose());
    const first = [
      [1, 'job.started'],
      [2, 'job.progress'],
    ];
    await drops.eventually(() => expect(seen).toEqual(first));

    await drops.drop(pidA);
    steps[0]!.resolve(); // seq 3 and 4 are committed, and announced, while the gateway is not listening
    await drops.eventually(async () => expect(await b.events(id)).toHaveLength(4));
    expect(seen).toEqual(first);
    drops.release(); // the reconnect's external_change makes the follower re-read
    await drops.eventually(() => expect(seen).toHaveLength(4));

    steps[1]!.resolve(); // announced again: the watch outlives the connection
    await drops.eventually(() => expect(ended).toBeUndefined());
    expect(seen).toEqual([...first, [3, 'job.progress'], [4, 'job.partial'], [5, 'job.completed']]);
  });
});
