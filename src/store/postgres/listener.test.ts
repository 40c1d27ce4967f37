import { expect, it } from 'vitest';
import { listenerDrops } from '../../../test/support/listener-drop.js';
import { TEST_DATABASE_URL as url, describePostgres } from '../../../test/support/postgres.js';
import type { StoreNotification } from '../jobs.js';
import { LISTENER_RECONNECT, NotificationListener } from './listener.js';

/**
 * The LISTEN connection dropped by `pg_terminate_backend` (as an administrator or a server restart would)
 * reconnects, says so with one `external_change`, and hears NOTIFYs again. What a worker and a follower make
 * of it is in `src/jobs/reconnect.postgres.test.ts`. Real waits are bounded by 5 s each.
 */
describePostgres('listener tests')('PostgreSQL LISTEN connection: reconnects after a drop', () => {
  const drops = listenerDrops('bw_listen');
  const { clock } = drops;

  it('the first connect delivers nothing; every reconnect delivers one external_change', async () => {
    // The first reconnect waits up to firstDelayMs (full jitter), the second up to twice that.
    expect(LISTENER_RECONNECT.firstDelayMs).toBeLessThanOrEqual(1_000);
    const schema = await drops.freshSchema();
    const heard: StoreNotification[] = [];
    const listener = new NotificationListener(url, `${schema}_jobs`, (n) => heard.push(n));
    drops.defer(() => listener.close());
    await listener.start();
    expect(heard).toEqual([]);
    for (let round = 1; round <= 2; round++) {
      const [pid] = await drops.listenerPids();
      await drops.terminate(pid!);
      await drops.eventually(() => expect(heard).toHaveLength(round));
      await drops.eventually(async () => {
        const pids = await drops.listenerPids();
        expect(pids).toHaveLength(1);
        expect(pids).not.toContain(pid);
      });
    }
    expect(heard).toEqual([{ kind: 'external_change' }, { kind: 'external_change' }]);
    await listener.close();
    expect(await drops.listenerPids()).toEqual([]);
  });

  it('after a drop the store hears none of the gap but one external_change, then NOTIFYs again', async () => {
    const { a, b, pidA, pidB } = await drops.twoProcesses();
    const heard: StoreNotification[] = [];
    a.subscribe((n) => heard.push(n));
    const job = (type: string) => ({ type, payload: null, runAt: clock.now(), priority: 0, maxAttempts: 1 });

    await drops.drop(pidA);
    await b.enqueue(job('lost')); // its job_available is sent while A is not listening
    expect(heard).toEqual([]);
    drops.release();
    await drops.eventually(() => expect(heard).toEqual([{ kind: 'external_change' }]));
    const pids = await drops.listenerPids();
    expect(pids).toHaveLength(2);
    expect(pids).toContain(pidB); // B's listener was never touched
    expect(pids).not.toContain(pidA);

    await b.enqueue(job('heard'));
    await drops.eventually(() =>
      expect(heard).toEqual([
        { kind: 'external_change' },
        { kind: 'job_available', type: 'heard', runAt: clock.now() },
      ]),
    );
  });
});
