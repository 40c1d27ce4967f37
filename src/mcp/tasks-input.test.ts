import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import {
  modernRpc,
  untilJobStatus,
  openListen,
  startGateway,
  type Gateway,
  type RpcAnswer,
} from './test-support.js';

/**
 * A job that asks for input, through the tasks extension of 2026-07-28: its task is `input_required` with the
 * question as `inputRequests`, and `tasks/update` answers it (SEP-2663 "Input Requests", "Task Update
 * Requests"), over real HTTP with the exact JSON-RPC.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const CONFIRM_SCHEMA = {
  type: 'object',
  properties: { confirm: { type: 'boolean' } },
  required: ['confirm'],
} as const;

function defineJobs(jobs: Jobs): void {
  jobs.defineJob<{ filename: string }>(
    'delete',
    async (ctx) => {
      const confirm = await ctx.requestInput({
        key: 'confirm',
        message: `Delete ${ctx.payload.filename}?`,
        schema: CONFIRM_SCHEMA,
      });
      if (confirm.action !== 'accept') return { deleted: false, answers: [confirm] };
      const reason = await ctx.requestInput({ key: 'reason', message: 'Why?' });
      return { deleted: confirm.content?.['confirm'] === true, answers: [confirm, reason] };
    },
    { maxAttempts: 1 },
  );
}

async function gateway(): Promise<Gateway> {
  const gw = await startGateway({
    tools: () => [
      jobTool({
        name: 'confirm_delete',
        description: 'Deletes a file once confirmed.',
        inputSchema: { filename: z.string() },
        jobType: 'delete',
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

async function waitingTask(gw: Gateway): Promise<string> {
  const created = body(
    await rpc(gw, 'ada', 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } }),
  );
  const taskId = created['taskId'] as string;
  await until(gw, taskId, 'input_required');
  return taskId;
}

const CONFIRM_REQUEST = {
  method: 'elicitation/create',
  params: { mode: 'form', message: 'Delete a.txt?', requestedSchema: CONFIRM_SCHEMA },
};

describe('tasks extension: a job that asks for input', () => {
  it('tasks/get shows input_required with the question; tasks/update answers it and the task goes on', async () => {
    const gw = await gateway();
    const taskId = await waitingTask(gw);
    const job = (await gw.jobs.get(taskId))!;
    expect(body(await rpc(gw, 'ada', 'tasks/get', { taskId }))).toEqual({
      resultType: 'complete',
      taskId,
      status: 'input_required',
      statusMessage: 'Delete a.txt?',
      inputRequests: { confirm: CONFIRM_REQUEST },
      createdAt: new Date(job.createdAt).toISOString(),
      lastUpdatedAt: new Date(job.updatedAt).toISOString(),
      ttlMs: null,
      pollIntervalMs: 2_000,
    });

    // A key not outstanding is ignored: acknowledged, nothing stored.
    const ignored = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: { other: { action: 'accept' } },
    });
    expect(body(ignored)).toEqual({ resultType: 'complete' });
    expect((await gw.jobs.get(taskId))!.status).toBe('input_required');

    // An answer that does not fit the schema is -32602; the question stays.
    const bad = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: 'yes' } } },
    });
    expect(bad.error).toEqual({
      code: -32602,
      message:
        'inputResponses["confirm"]: The answer does not fit the question\'s schema: confirm must be true or false.',
      data: { problems: ['confirm must be true or false'] },
    });
    expect(body(await rpc(gw, 'ada', 'tasks/get', { taskId }))['inputRequests']).toEqual({
      confirm: CONFIRM_REQUEST,
    });

    const ack = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: {
        confirm: { action: 'accept', content: { confirm: true } },
        extra: { action: 'cancel' },
      },
    });
    expect(body(ack)).toEqual({ resultType: 'complete' });
    // The rerun asks the next question: the task is input_required again, with only that key.
    const next = await until(gw, taskId, 'input_required');
    expect(next['inputRequests']).toEqual({
      reason: {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'Why?', requestedSchema: { type: 'object', properties: {} } },
      },
    });
    expect(
      body(
        await rpc(gw, 'ada', 'tasks/update', { taskId, inputResponses: { reason: { action: 'decline' } } }),
      ),
    ).toEqual({ resultType: 'complete' });
    const done = await until(gw, taskId, 'completed');
    expect(done['inputRequests']).toBeUndefined();
    expect((await gw.jobs.get(taskId))!.result).toEqual({
      deleted: true,
      answers: [{ action: 'accept', content: { confirm: true } }, { action: 'decline' }],
    });
  });

  it('a stranger gets the unknown-task error and stores nothing; a decline ends the job without deleting', async () => {
    const gw = await gateway();
    const taskId = await waitingTask(gw);
    const stranger = await rpc(gw, 'bob', 'tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(stranger.error).toEqual({ code: -32602, message: `Task not found: ${taskId}` });
    expect((await gw.jobs.get(taskId))!.status).toBe('input_required');
    expect((await rpc(gw, 'bob', 'tasks/get', { taskId })).error).toEqual({
      code: -32602,
      message: `Task not found: ${taskId}`,
    });

    const malformed = await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: { confirm: { yes: 1 } },
    });
    expect(malformed.error).toMatchObject({
      code: -32602,
      data: { problems: ['action must be accept, decline or cancel'] },
    });

    await rpc(gw, 'ada', 'tasks/update', { taskId, inputResponses: { confirm: { action: 'decline' } } });
    await until(gw, taskId, 'completed');
    expect((await gw.jobs.get(taskId))!.result).toEqual({ deleted: false, answers: [{ action: 'decline' }] });
  });

  it('notifications/tasks carry the input requests of each question', async () => {
    const gw = await gateway();
    const taskId = await waitingTask(gw);
    const listen = await openListen(gw.mcpUrl, as('ada'), 3, [taskId]);
    cleanups.push(() => listen.close());
    expect(await listen.next()).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
    const first = (await listen.next()) as { method: string; params: Record<string, unknown> };
    expect(first.method).toBe('notifications/tasks');
    expect(first.params).toMatchObject({
      taskId,
      status: 'input_required',
      inputRequests: { confirm: CONFIRM_REQUEST },
    });
    await rpc(gw, 'ada', 'tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: false } } },
    });
    let heard: Record<string, unknown>;
    do heard = ((await listen.next()) as { params: Record<string, unknown> }).params;
    while (heard['status'] !== 'input_required');
    expect(Object.keys(heard['inputRequests'] as object)).toEqual(['reason']);
  });
});
