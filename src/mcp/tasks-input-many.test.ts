import { afterEach, describe, expect, it } from 'vitest';
import { as } from '../../test/support/principals.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import { modernRpc, untilJobStatus, startGateway, type Gateway, type RpcAnswer } from './test-support.js';

/**
 * A job that asks several questions at once (`ctx.requestInputs`), through the tasks extension of 2026-07-28:
 * its task shows every open question in `inputRequests`, a partial `tasks/update` leaves the unanswered ones,
 * and the task goes on once none is left (SEP-2663 "Input Requests", "Task Update Requests").
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const SIGN = {
  type: 'object',
  properties: { name: { type: 'string' }, confirm: { type: 'boolean' } },
  required: ['name', 'confirm'],
} as const;

function defineJobs(jobs: Jobs): void {
  jobs.defineJob(
    'approve',
    async (ctx) => {
      const answers = await ctx.requestInputs({
        legal: { message: 'Legal: sign?', schema: SIGN },
        finance: { message: 'Finance: sign?', schema: SIGN },
      });
      return { answers };
    },
    { maxAttempts: 1 },
  );
}

async function gateway(): Promise<Gateway> {
  const gw = await startGateway({
    tools: () => [
      jobTool({
        name: 'approve',
        description: 'Asks two approvers at once.',
        inputSchema: {},
        jobType: 'approve',
      }),
    ],
    defineJobs,
  });
  cleanups.push(() => gw.close());
  return gw;
}

const rpc = (gw: Gateway, caller: string, method: string, params?: Record<string, unknown>) =>
  modernRpc(gw.mcpUrl, as(caller), method, params, { tasks: true });

function body(answer: RpcAnswer): Record<string, unknown> {
  expect(answer.error).toBeUndefined();
  const { _meta: _ignored, ...rest } = answer.result!;
  return rest;
}

async function until(gw: Gateway, taskId: string, status: string): Promise<Record<string, unknown>> {
  // The task follows its job: input_required while the job waits, completed once the job has ended.
  if (status === 'input_required') await untilJobStatus(gw.jobs, taskId, 'input_required');
  else for await (const _event of gw.jobs.events(taskId)); // drains until the job's terminal event
  const task = body(await rpc(gw, 'ada', 'tasks/get', { taskId }));
  expect(task['status']).toBe(status);
  return task;
}

const ask = (message: string) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: SIGN },
});

describe('tasks extension: a job that asks several questions at once', () => {
  it('shows every open key; a partial update keeps the rest; the last answer lets the task finish', async () => {
    const gw = await gateway();
    const created = body(await rpc(gw, 'ada', 'tools/call', { name: 'approve', arguments: {} }));
    const taskId = created['taskId'] as string;
    const waiting = await until(gw, taskId, 'input_required');
    expect([waiting['statusMessage'], waiting['inputRequests']]).toEqual([
      'Legal: sign?',
      { legal: ask('Legal: sign?'), finance: ask('Finance: sign?') },
    ]);

    // A stranger's update: the unknown-task error, nothing stored.
    const stranger = await rpc(gw, 'bob', 'tasks/update', {
      taskId,
      inputResponses: { legal: { action: 'accept', content: { name: 'Bob', confirm: true } } },
    });
    expect(stranger.error).toEqual({ code: -32602, message: `Task not found: ${taskId}` });

    const partial = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: { finance: { action: 'accept', content: { name: 'Fay', confirm: true } } },
    });
    expect(body(partial)).toEqual({ resultType: 'complete' });
    const left = body(await rpc(gw, 'ada', 'tasks/get', { taskId }));
    expect([left['status'], left['statusMessage'], left['inputRequests']]).toEqual([
      'input_required',
      'Legal: sign?',
      { legal: ask('Legal: sign?') },
    ]);

    // The answered key again is ignored; the open one completes the set.
    const rest = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: {
        finance: { action: 'decline' },
        legal: { action: 'accept', content: { name: 'Lee', confirm: false } },
      },
    });
    expect(body(rest)).toEqual({ resultType: 'complete' });
    await until(gw, taskId, 'completed');
    expect((await gw.jobs.get(taskId))!.result).toEqual({
      answers: {
        legal: { action: 'accept', content: { name: 'Lee', confirm: false } },
        finance: { action: 'accept', content: { name: 'Fay', confirm: true } },
      },
    });
  });

  it('one update may answer both; a malformed answer stops there and keeps the questions after it open', async () => {
    const gw = await gateway();
    const taskId = body(await rpc(gw, 'ada', 'tools/call', { name: 'approve', arguments: {} }))[
      'taskId'
    ] as string;
    await until(gw, taskId, 'input_required');
    const bad = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: {
        legal: { action: 'accept', content: { name: 'Lee', confirm: true } },
        finance: { action: 'accept', content: { name: 'Fay' } },
      },
    });
    expect(bad.error).toMatchObject({ code: -32602, data: { problems: ['confirm is required'] } });
    expect(
      Object.keys(body(await rpc(gw, 'ada', 'tasks/get', { taskId }))['inputRequests'] as object),
    ).toEqual(['finance']);
    await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: {
        legal: { action: 'cancel' },
        finance: { action: 'accept', content: { name: 'Fay', confirm: true } },
      },
    });
    await until(gw, taskId, 'completed');
    expect((await gw.jobs.get(taskId))!.result).toEqual({
      answers: {
        legal: { action: 'accept', content: { name: 'Lee', confirm: true } },
        finance: { action: 'accept', content: { name: 'Fay', confirm: true } },
      },
    });
  });
});
