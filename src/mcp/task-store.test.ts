import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock } from '../core/index.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobStore, type LeaseRef } from '../store/index.js';
import { jobTool, jobUrls } from './job-tools.js';
import { JobTaskStore } from './task-store.js';
import type { JobTool } from './tool.js';
import { McpProtocolError } from './types.js';

let clock: FakeClock;
let store: JobStore;
let jobs: Jobs;
let tasks: JobTaskStore;

const toolA = jobTool({
  name: 'tool_a',
  description: 'a',
  inputSchema: { n: z.number().int() },
  jobType: 'a',
  toPayload: ({ n }) => ({ n, doubled: n * 2 }),
  toResult: (result) => ({ wrapped: result }),
});
const toolB = jobTool({
  name: 'tool_b',
  description: 'b',
  inputSchema: { key: z.string().optional() },
  jobType: 'b',
  enqueueOptions: ({ key }) => (key === undefined ? {} : { idempotencyKey: key, priority: 5 }),
});

beforeEach(async () => {
  clock = new FakeClock();
  store = await openSqliteStore({ path: ':memory:', clock });
  jobs = createJobs({ store, clock, owner: 'w1' });
  for (const type of ['a', 'b', 'other']) jobs.defineJob(type, () => undefined);
  const byType = new Map<string, JobTool>([
    ['a', toolA],
    ['b', toolB],
  ]);
  tasks = new JobTaskStore({
    jobs,
    store,
    urls: jobUrls('test', 'https://gw.example'),
    byType,
    clock,
    byName: new Map([
      ['tool_a', toolA],
      ['tool_b', toolB],
    ]),
    pollIntervalMs: 1500,
    pageSize: 2,
  });
});

afterEach(async () => {
  await jobs.stop({ graceMs: 0 });
  await store.close();
});

async function claim(type: string): Promise<LeaseRef> {
  const [claimed] = await store.claim({ owner: 'w1', types: [type], limit: 1, leaseMs: 30_000 });
  return { id: claimed!.job.id, token: claimed!.token };
}

const protocolError = async (promise: Promise<unknown>): Promise<[number, string]> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpProtocolError);
  return [(error as McpProtocolError).rpcCode, (error as McpProtocolError).message];
};

describe('JobTaskStore', () => {
  it('creates a task by enqueueing the job of a job tool with its payload', async () => {
    const task = await tasks.createTask({ ttl: 5_000 }, 7, {
      method: 'tools/call',
      params: { name: 'tool_a', arguments: { n: 21 } },
    });
    const at = new Date(clock.now()).toISOString();
    expect(task).toEqual({
      taskId: task.taskId,
      status: 'working',
      ttl: null,
      createdAt: at,
      lastUpdatedAt: at,
      pollInterval: 1500,
    });
    expect((await jobs.get(task.taskId))?.payload).toEqual({ n: 21, doubled: 42 });
  });

  it('applies the tool enqueue options: the same idempotency key gives the same task', async () => {
    const request = { method: 'tools/call', params: { name: 'tool_b', arguments: { key: 'order-7' } } };
    const first = await tasks.createTask({}, 1, request);
    const again = await tasks.createTask({}, 2, request);
    expect(again.taskId).toBe(first.taskId);
    expect((await jobs.get(first.taskId))?.priority).toBe(5);
    const other = await tasks.createTask({}, 3, {
      method: 'tools/call',
      params: { name: 'tool_b', arguments: {} },
    });
    expect(other.taskId).not.toBe(first.taskId);
  });

  it('refuses to create a task for another tool or with invalid arguments', async () => {
    expect(
      await protocolError(tasks.createTask({}, 1, { method: 'tools/call', params: { name: 'echo' } })),
    ).toEqual([-32602, 'Tool echo cannot run as a task.']);
    expect(
      await protocolError(
        tasks.createTask({}, 1, { method: 'tools/call', params: { name: 'tool_a', arguments: { n: 'x' } } }),
      ),
    ).toEqual([-32602, 'The arguments are not valid: n: Invalid input: expected number, received string.']);
    expect(await jobs.list()).toEqual([]);
  });

  it('maps job states to task states, a cancel request included', async () => {
    const pending = await jobs.enqueue('a', {});
    expect((await tasks.getTask(pending))?.status).toBe('working');

    const running = await claim('a');
    clock.tick(1000);
    await jobs.cancel(running.id);
    expect(await tasks.getTask(running.id)).toMatchObject({
      status: 'cancelled',
      statusMessage: 'The task was cancelled.',
    });

    const done = await jobs.enqueue('b', {});
    await store.complete(await claim('b'), { ok: 1 });
    expect((await tasks.getTask(done))?.status).toBe('completed');

    const failed = await jobs.enqueue('b', {});
    const lease = await claim('b');
    await store.fail(lease, {
      code: 'upstream_unavailable',
      message: 'connect ECONNREFUSED 10.0.0.3:5432',
      kind: 'transient',
    });
    expect(await tasks.getTask(failed)).toMatchObject({
      status: 'failed',
      statusMessage: 'A service this request depends on is unavailable right now; try again shortly.',
    });

    const retrying = await jobs.enqueue('b', {}, { maxAttempts: 3 });
    await store.fail(
      await claim('b'),
      { code: 'timeout', message: 'slow', kind: 'transient' },
      clock.now() + 60_000,
    );
    expect(await tasks.getTask(retrying)).toMatchObject({
      status: 'working',
      statusMessage:
        'Retrying after a failure (attempt 1 of 3 failed); the next attempt starts in about 60 seconds.',
    });
  });

  it('hides jobs that are not of a job tool', async () => {
    const other = await jobs.enqueue('other', {});
    expect(await tasks.getTask(other)).toBeNull();
    expect(await protocolError(tasks.getTaskResult(other))).toEqual([-32602, `Task not found: ${other}`]);
    expect(await tasks.getTask('job_missing')).toBeNull();
  });

  it('gives the tool result of a finished task and refuses one still working', async () => {
    const id = await jobs.enqueue('a', {});
    expect(await protocolError(tasks.getTaskResult(id))).toEqual([
      -32602,
      `Task ${id} has not finished yet.`,
    ]);
    await store.complete(await claim('a'), [1, 2]);
    expect(await tasks.getTaskResult(id)).toEqual({
      content: [{ type: 'text', text: '{"wrapped":[1,2]}' }],
      structuredContent: { wrapped: [1, 2] },
    });

    const failed = await jobs.enqueue('b', {});
    await store.fail(await claim('b'), { code: 'lease_expired', message: 'lost', kind: 'transient' });
    expect(await tasks.getTaskResult(failed)).toEqual({
      content: [
        {
          type: 'text',
          text: 'The worker running the job stopped responding and the job ran out of attempts.',
        },
      ],
      structuredContent: {
        error: {
          code: 'lease_expired',
          category: 'upstream_error',
          message: 'The worker running the job stopped responding and the job ran out of attempts.',
          retryable: true,
          retry_after_ms: null,
          outcome: 'failed',
        },
      },
      isError: true,
    });
  });

  it('cancels through updateTaskStatus and refuses every other write', async () => {
    const id = await jobs.enqueue('a', {});
    await tasks.updateTaskStatus(id, 'cancelled');
    expect((await jobs.get(id))?.status).toBe('canceled');
    await expect(tasks.updateTaskStatus(id, 'completed')).rejects.toThrow(
      `Task ${id} is a job: only the job worker changes its status (asked: completed).`,
    );
    await expect(tasks.storeTaskResult(id)).rejects.toThrow(/written by the job worker/);
  });

  it('pages through the tasks of every job tool type, newest first, without gaps or repeats', async () => {
    const ids: string[] = [];
    for (const type of ['a', 'other', 'b', 'a', 'other', 'b', 'a']) {
      const id = await jobs.enqueue(type, {});
      if (type !== 'other') ids.push(id);
    }
    const newest = [...ids].reverse();
    const page1 = await tasks.listTasks();
    expect(page1.tasks.map((t) => t.taskId)).toEqual(newest.slice(0, 2));
    expect(page1.nextCursor).toBe(newest[1]);
    const page2 = await tasks.listTasks(page1.nextCursor);
    expect(page2.tasks.map((t) => t.taskId)).toEqual(newest.slice(2, 4));
    const page3 = await tasks.listTasks(page2.nextCursor);
    expect(page3).toEqual({ tasks: [expect.objectContaining({ taskId: newest[4] })] });
    await expect(tasks.listTasks('not-a-cursor')).rejects.toThrow('Invalid cursor.');
  });

  it('waits for the job to end, and stops waiting when the request aborts', async () => {
    const id = await jobs.enqueue('a', {});
    let ended = false;
    const waiting = tasks.waitUntilFinished(id, new AbortController().signal).then(() => (ended = true));
    await clock.tickAsync(0);
    expect(ended).toBe(false);
    await store.complete(await claim('a'), 1);
    await waiting;
    expect(ended).toBe(true);

    const other = await jobs.enqueue('a', {});
    const controller = new AbortController();
    const aborted = tasks.waitUntilFinished(other, controller.signal);
    controller.abort(new Error('client left'));
    await expect(aborted).rejects.toThrow('client left');
  });
});
