import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobStore } from '../store/index.js';
import { forwardJobProgress, waitForJob } from './progress.js';
import type { ProgressParams } from './run.js';
import { gate } from './test-support.js';
import type { TaskInfo } from './types.js';

let clock: FakeClock;
let store: JobStore;
let jobs: Jobs;
let middle = gate();

beforeEach(async () => {
  middle = gate();
  clock = new FakeClock();
  store = await openSqliteStore({ path: ':memory:', clock });
  jobs = createJobs({ store, clock, owner: 'w1' });
  jobs.defineJob('steps', async ({ progress }) => {
    await progress(1, 4, 'one');
    await middle.promise;
    await progress(3, 4);
    await progress(2, 4, 'back'); // written by the runtime (the step changed), dropped by the bridge
    await progress(4, 4, 'four');
    return 'ok';
  });
  jobs.start();
});

afterEach(async () => {
  middle.open();
  await jobs.stop({ graceMs: 0 });
  await store.close();
});

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await clock.tickAsync(0);
}

type Sent = [string, Record<string, unknown>];

describe('forwardJobProgress', () => {
  it('forwards increasing progress in order, then the final task status, then ends', async () => {
    const id = await jobs.enqueue('steps', {});
    const sent: Sent[] = [];
    let ended = 0;
    const task: TaskInfo = {
      taskId: id,
      status: 'completed',
      ttl: null,
      createdAt: 'c',
      lastUpdatedAt: 'u',
    };
    forwardJobProgress({
      jobs,
      jobId: id,
      progressToken: 'tok',
      taskId: id,
      send: async (method, params) => {
        sent.push([method, params]);
      },
      finalTask: async () => task,
      onEnd: () => ended++,
    });
    await flush();
    middle.open();
    await flush();
    const meta = { 'io.modelcontextprotocol/related-task': { taskId: id } };
    expect(sent).toEqual([
      [
        'notifications/progress',
        { progressToken: 'tok', progress: 1, total: 4, message: 'one', _meta: meta },
      ],
      ['notifications/progress', { progressToken: 'tok', progress: 3, total: 4, _meta: meta }],
      [
        'notifications/progress',
        { progressToken: 'tok', progress: 4, total: 4, message: 'four', _meta: meta },
      ],
      ['notifications/tasks/status', { ...task, _meta: meta }],
    ]);
    expect(ended).toBe(1);
  });

  it('sends nothing more once disposed, and does not call onEnd', async () => {
    const id = await jobs.enqueue('steps', {});
    const sent: Sent[] = [];
    let ended = 0;
    const forwarder = forwardJobProgress({
      jobs,
      jobId: id,
      progressToken: 7,
      send: async (method, params) => {
        sent.push([method, params]);
      },
      onEnd: () => ended++,
    });
    await flush();
    expect(sent).toEqual([
      ['notifications/progress', { progressToken: 7, progress: 1, total: 4, message: 'one' }],
    ]);
    forwarder.dispose();
    middle.open();
    await flush();
    expect((await jobs.get(id))?.status).toBe('completed');
    expect(sent).toHaveLength(1);
    expect(ended).toBe(0);
  });

  it('keeps going after a failed send, and sends no progress without a token', async () => {
    const id = await jobs.enqueue('steps', {});
    const sent: Sent[] = [];
    let calls = 0;
    forwardJobProgress({
      jobs,
      jobId: id,
      progressToken: 'tok',
      send: async (method, params) => {
        if (++calls === 1) throw new Error('no stream yet');
        sent.push([method, params]);
      },
    });
    const silent: Sent[] = [];
    forwardJobProgress({
      jobs,
      jobId: id,
      progressToken: undefined,
      send: async (method, params) => {
        silent.push([method, params]);
      },
    });
    middle.open();
    await flush();
    expect(sent.map(([, p]) => p['progress'])).toEqual([3, 4]);
    expect(silent).toEqual([]);
  });
});

describe('waitForJob', () => {
  /** `jobs` with its subscriptions counted: open until disposed or ended by themselves. */
  function counted(): { jobs: Jobs; open: () => number } {
    let open = 0;
    const subscribe: Jobs['subscribe'] = (jobId, fromSeq, listener, callbacks) => {
      let closed = false;
      const close = (): void => {
        if (!closed) open--;
        closed = true;
      };
      open++;
      const subscription = jobs.subscribe(jobId, fromSeq, listener, {
        ...callbacks,
        onEnd: (error) => {
          close();
          callbacks?.onEnd?.(error);
        },
      });
      return {
        dispose() {
          close();
          subscription.dispose();
        },
      };
    };
    return { jobs: { ...jobs, subscribe }, open: () => open };
  }

  function scope(signal = new AbortController().signal) {
    const sent: ProgressParams[] = [];
    return {
      sent,
      scope: {
        signal,
        progressToken: 'tok',
        sendProgress: async (params: ProgressParams) => {
          sent.push(params);
        },
      },
    };
  }

  it('forwards increasing progress without the token, every send before it ends with the job', async () => {
    const id = await jobs.enqueue('steps', {});
    const { sent, scope: s } = scope();
    const c = counted();
    const end = waitForJob({ jobs: c.jobs, jobId: id, clock, until: clock.now() + 1_000, scope: s });
    await flush();
    expect(c.open()).toBe(1);
    middle.open();
    expect(await end).toBe('ended');
    expect(sent).toEqual([
      { progress: 1, total: 4, message: 'one' },
      { progress: 3, total: 4 },
      { progress: 4, total: 4, message: 'four' },
    ]);
    expect(c.open()).toBe(0);
  });

  it('ends at `until` and lets go of the job, which goes on', async () => {
    const id = await jobs.enqueue('steps', {});
    const { sent, scope: s } = scope();
    const c = counted();
    let end: string | undefined;
    void waitForJob({ jobs: c.jobs, jobId: id, clock, until: clock.now() + 1_000, scope: s }).then(
      (e) => (end = e),
    );
    await flush();
    await clock.tickAsync(999);
    expect(end).toBeUndefined();
    await clock.tickAsync(1);
    expect(end).toBe('deadline');
    expect(c.open()).toBe(0);
    middle.open();
    await flush();
    expect((await jobs.get(id))?.status).toBe('completed');
    expect(sent).toEqual([{ progress: 1, total: 4, message: 'one' }]);
  });

  it('ends when the signal aborts, or at once when it already has, and lets go of the job', async () => {
    const id = await jobs.enqueue('steps', {});
    const controller = new AbortController();
    const { scope: s } = scope(controller.signal);
    const c = counted();
    const end = waitForJob({ jobs: c.jobs, jobId: id, clock, until: clock.now() + 1_000, scope: s });
    await flush();
    expect(c.open()).toBe(1);
    controller.abort();
    expect(await end).toBe('aborted');
    expect(c.open()).toBe(0);
    const before = waitForJob({ jobs: c.jobs, jobId: id, clock, until: clock.now() + 1_000, scope: s });
    expect(await before).toBe('aborted');
    expect(c.open()).toBe(0);
    expect((await jobs.get(id))?.status).toBe('in_progress');
  });
});
