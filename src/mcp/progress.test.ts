import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobStore } from '../store/index.js';
import { forwardJobProgress } from './progress.js';
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
