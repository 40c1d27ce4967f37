import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobEvent, type JobStore } from '../store/index.js';
import { createJobs, type Jobs } from './index.js';

/**
 * Two stores on one SQLite file stand for two processes (a `serve --no-worker` gateway and a `worker`): the
 * notifications of one never reach the other, so only the store's watch of `PRAGMA data_version` can tell
 * the worker about a job the gateway enqueued before the safety-net poll (here one minute) comes round.
 */
describe('SQLite: a worker on another connection hears about new jobs through the data_version watch', () => {
  let dir: string;
  const opened: Array<{ jobs: Jobs; store: JobStore }> = [];

  afterEach(async () => {
    for (const { jobs, store } of opened.splice(0)) {
      await jobs.stop({ graceMs: 0 });
      await store.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  async function runtime(path: string, watchMs?: number): Promise<{ jobs: Jobs; store: JobStore }> {
    const store = await openSqliteStore({ path, watchMs });
    const jobs = createJobs({ store, clock: systemClock, pollMs: 60_000 });
    opened.push({ jobs, store });
    return { jobs, store };
  }

  it('claims a job enqueued through the other connection, and a follower there sees it finish', async () => {
    dir = mkdtempSync(join(tmpdir(), 'bw-xproc-'));
    const path = join(dir, 'bw.db');
    const gateway = await runtime(path);
    const worker = await runtime(path);
    const ran: unknown[] = [];
    for (const side of [gateway, worker]) side.jobs.defineJob('report', ({ payload }) => ran.push(payload));
    worker.jobs.start();

    const id = await gateway.jobs.enqueue('report', { n: 1 });
    const seen: JobEvent['type'][] = [];
    const ended = new Promise<void>((resolve) =>
      gateway.jobs.subscribe(id, 0, (event) => seen.push(event.type), { onEnd: () => resolve() }),
    );
    await vi.waitFor(() => expect(ran).toEqual([{ n: 1 }]), { timeout: 5_000 });
    await ended;
    expect(seen).toEqual(['job.started', 'job.completed']);
  });

  it('the watch reports commits of other connections only, once per change, and not at all when off', async () => {
    dir = mkdtempSync(join(tmpdir(), 'bw-xproc-'));
    const path = join(dir, 'bw.db');
    // Only setInterval is faked: the watch is the store's one timer; SQLite itself is synchronous.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const watched = await openSqliteStore({ path, watchMs: 100 });
      const unwatched = await openSqliteStore({ path, watchMs: 0 });
      const other = await openSqliteStore({ path, watchMs: 0 });
      const heard = { watched: 0, unwatched: 0 };
      watched.subscribe((n) => void (n.kind === 'external_change' && heard.watched++));
      unwatched.subscribe((n) => void (n.kind === 'external_change' && heard.unwatched++));
      const job = { type: 'report', payload: null, runAt: 0, priority: 0, maxAttempts: 1 };

      await watched.enqueue(job); // its own commit
      vi.advanceTimersByTime(100);
      expect(heard.watched).toBe(0);

      await other.enqueue(job);
      await other.enqueue(job);
      vi.advanceTimersByTime(100);
      expect(heard.watched).toBe(1);
      vi.advanceTimersByTime(300); // nothing new
      expect(heard.watched).toBe(1);
      expect(heard.unwatched).toBe(0);

      for (const store of [watched, unwatched, other]) await store.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
