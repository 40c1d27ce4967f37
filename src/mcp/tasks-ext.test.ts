import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { BreakwaterError } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import {
  gate,
  modernRpc,
  openListen,
  startGateway,
  tempDir,
  untilJobStatus,
  type Gateway,
  type RpcAnswer,
} from './test-support.js';

/**
 * The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`) on the job store, over real HTTP with
 * the exact JSON-RPC of SEP-2663 (the SDK v2 client refuses a `resultType: "task"` answer to `tools/call`).
 */

const TTL_MS = 86_400_000;
const POLL_MS = 500;
let release = gate();
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  release.open();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const tools = () => [
  jobTool({
    name: 'deep_analysis',
    description: 'Analyses gift ideas in the background.',
    inputSchema: { recipient: z.string() },
    jobType: 'analysis',
  }),
  jobTool({ name: 'broken', description: 'Has a bug.', inputSchema: {}, jobType: 'broken' }),
  jobTool({ name: 'refused', description: 'Refuses.', inputSchema: {}, jobType: 'refused' }),
  jobTool({
    name: 'only_task',
    description: 'Runs only as a task.',
    inputSchema: {},
    jobType: 'broken',
    taskSupport: 'required',
  }),
];

function defineJobs(jobs: Jobs): void {
  jobs.defineJob('analysis', async ({ progress, signal }) => {
    await progress(1, 2, 'reading reviews');
    await Promise.race([
      release.promise,
      new Promise((resolve) => signal.addEventListener('abort', resolve)),
    ]);
    return { gifts: ['scarf'] };
  });
  jobs.defineJob(
    'broken',
    () => {
      throw new TypeError('a bug');
    },
    { maxAttempts: 1 },
  );
  jobs.defineJob(
    'refused',
    () => {
      throw new BreakwaterError('invalid_payload', { message: 'There is no such recipient.' });
    },
    { maxAttempts: 1 },
  );
}

async function gateway(
  options: { dbPath?: string; maxTaskListensPerPrincipal?: number; startWorker?: boolean } = {},
): Promise<Gateway> {
  const gw = await startGateway({
    dbPath: options.dbPath,
    startWorker: options.startWorker,
    tools,
    defineJobs,
    server: {
      taskTtlMs: TTL_MS,
      taskPollIntervalMs: POLL_MS,
      ...(options.maxTaskListensPerPrincipal === undefined
        ? {}
        : { maxTaskListensPerPrincipal: options.maxTaskListensPerPrincipal }),
    },
  });
  let closed = false;
  const close = gw.close.bind(gw);
  gw.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  cleanups.push(() => gw.close());
  return gw;
}

const rpc = (gw: Gateway, caller: string, method: string, params?: Record<string, unknown>, tasks = true) =>
  modernRpc(gw.mcpUrl, as(caller), method, params, { tasks });

/** The result without the SDK's `serverInfo` stamp. */
function body(answer: RpcAnswer): Record<string, unknown> {
  expect(answer.error).toBeUndefined();
  const { _meta: _ignored, ...rest } = answer.result!;
  return rest;
}

async function startTask(gw: Gateway, caller: string, name: string, args: Record<string, unknown> = {}) {
  const created = body(await rpc(gw, caller, 'tools/call', { name, arguments: args }));
  expect(created['resultType']).toBe('task');
  return created['taskId'] as string;
}

/** Polls `tasks/get` until `done` holds (each poll is a real request; no timing is asserted). */
async function until(
  gw: Gateway,
  caller: string,
  taskId: string,
  done: (task: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (;;) {
    const task = body(await rpc(gw, caller, 'tasks/get', { taskId }));
    if (done(task)) return task;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('the tasks extension (io.modelcontextprotocol/tasks) on 2026-07-28', () => {
  it('answers a job tool with a task once its job is committed; tasks/get shows progress, then the result', async () => {
    release = gate();
    const gw = await gateway();
    const created = body(
      await rpc(gw, 'ada', 'tools/call', { name: 'deep_analysis', arguments: { recipient: 'dad' } }),
    );
    const taskId = created['taskId'] as string;
    // The job row exists when the answer arrives, and belongs to the caller.
    const job = (await gw.jobs.get(taskId))!;
    expect(job).toMatchObject({ owner: 'key:ada', type: 'analysis', payload: { recipient: 'dad' } });
    expect(created).toEqual({
      resultType: 'task',
      content: [], // added by the SDK to every tools/call result
      taskId,
      status: 'working',
      createdAt: iso(job.createdAt),
      lastUpdatedAt: created['lastUpdatedAt'],
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
    });
    expect(Date.parse(created['lastUpdatedAt'] as string)).toBeGreaterThanOrEqual(job.createdAt);

    const working = await until(gw, 'ada', taskId, (task) => task['statusMessage'] === 'reading reviews');
    expect(working).toMatchObject({ taskId, status: 'working', resultType: 'complete' });
    expect(Object.keys(working).sort()).toEqual([
      'createdAt',
      'lastUpdatedAt',
      'pollIntervalMs',
      'resultType',
      'status',
      'statusMessage',
      'taskId',
      'ttlMs',
    ]);

    release.open();
    const done = await until(gw, 'ada', taskId, (task) => task['status'] !== 'working');
    const finished = (await gw.jobs.get(taskId))!;
    expect(done).toEqual({
      resultType: 'complete',
      taskId,
      status: 'completed',
      createdAt: iso(finished.createdAt),
      lastUpdatedAt: iso(finished.updatedAt),
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
      result: {
        content: [{ type: 'text', text: '{"gifts":["scarf"]}' }],
        structuredContent: { gifts: ['scarf'] },
      },
    });
  });

  it('an internal failure is failed with the JSON-RPC error inline; a tool error is completed with isError', async () => {
    const gw = await gateway();
    const broken = await startTask(gw, 'ada', 'broken');
    const failed = await until(gw, 'ada', broken, (task) => task['status'] !== 'working');
    const sentence = 'Something went wrong inside the gateway; this is a bug, not a temporary failure.';
    expect(failed['status']).toBe('failed');
    expect(failed['result']).toBeUndefined();
    expect(failed['statusMessage']).toBe(sentence);
    expect(failed['error']).toEqual({
      code: -32603,
      message: sentence,
      data: {
        error: {
          code: 'internal_error',
          category: 'internal_error',
          message: sentence,
          retryable: false,
          retry_after_ms: null,
          outcome: 'failed',
        },
      },
    });

    const refused = await startTask(gw, 'ada', 'refused');
    const completed = await until(gw, 'ada', refused, (task) => task['status'] !== 'working');
    expect(completed['status']).toBe('completed');
    expect(completed['error']).toBeUndefined();
    expect(completed['result']).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'There is no such recipient.' }],
    });
  });

  it('tasks/cancel acknowledges; the task is cancelled at once and its job ends canceled', async () => {
    release = gate();
    const gw = await gateway();
    const taskId = await startTask(gw, 'ada', 'deep_analysis', { recipient: 'mum' });
    await until(gw, 'ada', taskId, (task) => task['statusMessage'] === 'reading reviews');
    expect(body(await rpc(gw, 'ada', 'tasks/cancel', { taskId }))).toEqual({ resultType: 'complete' });
    expect(body(await rpc(gw, 'ada', 'tasks/get', { taskId }))).toMatchObject({
      status: 'cancelled',
      statusMessage: 'The task was cancelled.',
    });
    await untilJobStatus(gw.jobs, taskId, 'canceled');
    // Idempotent on a finished task; tasks/update of a task with nothing outstanding is acknowledged.
    expect(body(await rpc(gw, 'ada', 'tasks/cancel', { taskId }))).toEqual({ resultType: 'complete' });
    expect(body(await rpc(gw, 'ada', 'tasks/update', { taskId, inputResponses: { nope: {} } }))).toEqual({
      resultType: 'complete',
    });
  });

  it('a stranger gets the answer of an unknown id and changes nothing; admin sees every task', async () => {
    release = gate();
    const gw = await gateway();
    const taskId = await startTask(gw, 'ada', 'deep_analysis', { recipient: 'dad' });
    const notFound = { code: -32602, message: `Task not found: ${taskId}` };
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const answer = await rpc(gw, 'bob', method, { taskId, inputResponses: {} });
      expect({ status: answer.status, error: answer.error }).toEqual({ status: 200, error: notFound });
    }
    expect((await rpc(gw, 'bob', 'tasks/get', { taskId: 'job_nope' })).error).toEqual({
      code: -32602,
      message: 'Task not found: job_nope',
    });
    expect((await gw.jobs.get(taskId))!.cancelRequestedAt).toBeNull();
    expect(body(await rpc(gw, 'admin', 'tasks/get', { taskId }))).toMatchObject({
      taskId,
      status: 'working',
    });
  });

  it('checks its options: taskTtlMs is an integer >= 1 or null', async () => {
    await expect(startGateway({ tools, defineJobs, server: { taskTtlMs: 0 } })).rejects.toThrow(
      'createMcpServer: taskTtlMs must be an integer >= 1 (ms) or null, got 0',
    );
  });

  it('without the extension: the handle as before, tasks/* refused with -32021; server/discover declares it', async () => {
    release = gate();
    const gw = await gateway();
    const discovered = body(await rpc(gw, 'ada', 'server/discover', {}, false));
    expect(discovered['capabilities']).toEqual({
      tools: { listChanged: false },
      logging: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const plain = body(
      await rpc(gw, 'ada', 'tools/call', { name: 'deep_analysis', arguments: { recipient: 'x' } }, false),
    );
    expect(plain['resultType']).toBe('complete');
    const jobId = (plain['structuredContent'] as { job_id: string }).job_id;
    expect(plain['taskId']).toBeUndefined();
    const missing = {
      code: -32021,
      message:
        'Missing required client capability: tasks/get needs the io.modelcontextprotocol/tasks extension.',
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    };
    const refused = await rpc(gw, 'ada', 'tasks/get', { taskId: jobId }, false);
    expect({ status: refused.status, error: refused.error }).toEqual({ status: 400, error: missing });
    const required = await rpc(gw, 'ada', 'tools/call', { name: 'only_task', arguments: {} }, false);
    expect(required.error).toEqual({
      ...missing,
      message:
        'Missing required client capability: tools/call of only_task needs the io.modelcontextprotocol/tasks extension.',
    });
    // The 2025-11-25 methods that the extension removed are unknown on 2026-07-28.
    expect((await rpc(gw, 'ada', 'tasks/result', { taskId: jobId })).error?.code).toBe(-32601);
    expect((await rpc(gw, 'ada', 'tasks/list', {})).error?.code).toBe(-32601);
  });

  it('tasks/get and notifications/tasks from a second gateway on the same store, and after the first reopens', async () => {
    release = gate();
    const tmp = tempDir();
    cleanups.push(() => tmp.remove());
    const dbPath = join(tmp.dir, 'breakwater.db');
    const first = await gateway({ dbPath });
    // No worker here: whatever this gateway says about the task comes from the store.
    const second = await gateway({ dbPath, startWorker: false });
    const taskId = await startTask(first, 'ada', 'deep_analysis', { recipient: 'dad' });
    expect(body(await rpc(second, 'ada', 'tasks/get', { taskId }))).toMatchObject({
      taskId,
      status: 'working',
    });
    expect((await rpc(second, 'bob', 'tasks/get', { taskId })).error?.code).toBe(-32602);
    const listen = await openListen(second.mcpUrl, as('ada'), 1, [taskId]);
    cleanups.push(() => listen.close());
    expect(await listen.next()).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });

    await first.close();
    release.open();
    const reopened = await gateway({ dbPath });
    const done = await until(reopened, 'ada', taskId, (task) => task['status'] !== 'working');
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { gifts: ['scarf'] } } });
    expect(body(await rpc(second, 'ada', 'tasks/get', { taskId }))).toEqual(done);
    let heard: Record<string, unknown>;
    do heard = ((await listen.next()) as { params: Record<string, unknown> }).params;
    while (heard['status'] === 'working');
    const { resultType: _complete, ...task } = done;
    expect(heard).toEqual({ ...task, _meta: { 'io.modelcontextprotocol/subscriptionId': 1 } });
  });

  it('notifications/tasks over subscriptions/listen: the acknowledgement, each change, then the graceful close', async () => {
    release = gate();
    const gw = await gateway({ maxTaskListensPerPrincipal: 1 });
    const taskId = await startTask(gw, 'ada', 'deep_analysis', { recipient: 'dad' });
    const other = await startTask(gw, 'bob', 'deep_analysis', { recipient: 'bob' });
    const listen = await openListen(gw.mcpUrl, as('ada'), 7, [taskId, other, 'job_nope']);
    cleanups.push(() => listen.close());
    const subscription = { 'io.modelcontextprotocol/subscriptionId': 7 };
    expect(await listen.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] }, _meta: subscription },
    });
    // A second listen of the same principal is over the bound; a listen without the extension is refused.
    const over = await openListen(gw.mcpUrl, as('ada'), 8, [taskId]);
    expect(await over.next()).toEqual({
      jsonrpc: '2.0',
      id: 8,
      error: { code: -32603, message: 'Subscription limit reached' },
    });
    const undeclared = await openListen(gw.mcpUrl, as('bob'), 9, [other], false);
    expect(undeclared.status).toBe(400);
    expect(((await undeclared.next()) as { error: { code: number } }).error.code).toBe(-32021);

    const seen: Record<string, unknown>[] = [];
    for (;;) {
      const note = (await listen.next()) as { params: Record<string, unknown> };
      seen.push(note.params);
      if (note.params['statusMessage'] === 'reading reviews') break;
    }
    release.open();
    let last: Record<string, unknown>;
    do last = ((await listen.next()) as { params: Record<string, unknown> }).params;
    while (last['status'] === 'working');
    const job = (await gw.jobs.get(taskId))!;
    expect(last).toEqual({
      taskId,
      status: 'completed',
      createdAt: iso(job.createdAt),
      lastUpdatedAt: iso(job.updatedAt),
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
      result: {
        content: [{ type: 'text', text: '{"gifts":["scarf"]}' }],
        structuredContent: { gifts: ['scarf'] },
      },
      _meta: subscription,
    });
    expect(seen.every((task) => task['taskId'] === taskId && task['status'] === 'working')).toBe(true);
    expect(await listen.next()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { resultType: 'complete', _meta: subscription },
    });
    expect(await listen.next()).toBeUndefined();
    // The ended listen no longer counts against the principal's bound.
    const again = await openListen(gw.mcpUrl, as('ada'), 10, [taskId]);
    cleanups.push(() => again.close());
    expect(((await again.next()) as { method: string }).method).toBe(
      'notifications/subscriptions/acknowledged',
    );
  });
});
