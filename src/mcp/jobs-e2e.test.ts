import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type McpError,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { call, jobIdOf, useGateway, waitForStatus } from './e2e-fixture.js';
import { gate, PUBLIC_URL } from './test-support.js';

const f = useGateway();

describe('job tools', () => {
  it('answers at once with the job handle, then get_job_status shows progress, partials and the result', async () => {
    const handle = await call(f, 'deep_analysis', { recipient: 'mum' });
    const body = handle.structuredContent as Record<string, string>;
    const id = body['job_id']!;
    expect(id).toMatch(/^job_/);
    // The worker may have claimed it already.
    expect(['pending', 'in_progress']).toContain(body['status']);
    expect(body).toEqual({
      job_id: id,
      status: body['status'],
      status_url: `${PUBLIC_URL}jobs/${id}`,
      events_url: `${PUBLIC_URL}jobs/${id}/events`,
      message: `Started job ${id}; it runs in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`,
    });

    await f.started.promise;
    const running = (await call(f, 'get_job_status', { job_id: id })).structuredContent as Record<
      string,
      unknown
    >;
    expect(running).toMatchObject({
      job_id: id,
      status: 'in_progress',
      cancel_requested: false,
      attempts: 1,
      progress: { step: 1, total: 4, message: 'reading the catalog' },
      partial_results: [{ draft: 'scarf for mum' }],
      partial_count: 1,
      finished_at: null,
    });
    expect(running).not.toHaveProperty('result');

    f.release.open();
    await waitForStatus(f, id, 'completed');
    const done = (await call(f, 'get_job_status', { job_id: id })).structuredContent as Record<
      string,
      unknown
    >;
    expect(done).toMatchObject({
      status: 'completed',
      progress: { step: 4, total: 4, message: 'done' },
      result: { gifts: ['scarf', 'book'] },
    });
  });

  it('get_job_status of an unknown job is a not_found result', async () => {
    const result = await call(f, 'get_job_status', { job_id: 'job_nope' });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'There is no job job_nope.' }]);
  });

  it('cancel_job stops a running job', async () => {
    const id = jobIdOf(await call(f, 'deep_analysis', { recipient: 'dad' }));
    await f.started.promise;
    const cancel = await call(f, 'cancel_job', { job_id: id });
    expect(cancel.structuredContent).toEqual({
      job_id: id,
      status: 'in_progress',
      cancel_requested: true,
      status_url: `${PUBLIC_URL}jobs/${id}`,
      message: 'Cancellation was requested; the job stops within a few seconds.',
    });
    await waitForStatus(f, id, 'canceled');
    const status = (await call(f, 'get_job_status', { job_id: id })).structuredContent as Record<
      string,
      unknown
    >;
    expect(status['error']).toEqual({
      code: 'canceled',
      category: 'canceled',
      message: 'The job was canceled before it finished.',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
    });
    const again = await call(f, 'cancel_job', { job_id: id });
    expect((again.structuredContent as Record<string, unknown>)['message']).toBe(
      'The job had already finished (canceled); nothing was canceled.',
    );
  });
});

describe('progress bridge lifetime (tasks; a plain call waits instead, see job-wait.test.ts)', () => {
  /** Calls deep_analysis as a task with an `onprogress`, so its progress is followed. */
  async function startTask(recipient: string): Promise<string> {
    const created = await f.tc.client.request(
      { method: 'tools/call', params: { name: 'deep_analysis', arguments: { recipient } } },
      CreateTaskResultSchema,
      { task: {}, onprogress: () => undefined },
    );
    return created.task.taskId;
  }

  it('ends with the session: the job subscription is disposed when the client terminates it', async () => {
    await f.tc.standaloneStream;
    const baseline = f.gw.activeSubscriptions();
    await startTask('x');
    await f.started.promise;
    const running = f.gw.activeSubscriptions();
    expect(running).toBeGreaterThan(baseline);
    await f.tc.transport.terminateSession();
    expect(f.gw.activeSubscriptions()).toBe(running - 1);
  });

  it('ends with the job: nothing stays subscribed after the terminal event', async () => {
    await f.tc.standaloneStream;
    const baseline = f.gw.activeSubscriptions();
    const id = await startTask('y');
    await f.started.promise;
    f.release.open();
    await waitForStatus(f, id, 'completed');
    // The waiter above has ended too; what remains is what was there before the call.
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.gw.activeSubscriptions()).toBe(baseline);
  });
});

describe('tasks', () => {
  it('runs a job tool as a task: progress to onprogress in order, tasks/get, tasks/list, tasks/result', async () => {
    await f.tc.standaloneStream;
    const progress: Progress[] = [];
    const last = gate();
    const created = await f.tc.client.request(
      { method: 'tools/call', params: { name: 'deep_analysis', arguments: { recipient: 'gran' } } },
      CreateTaskResultSchema,
      {
        task: { ttl: 60_000 },
        onprogress: (p) => {
          progress.push(p);
          if (p.progress === 4) last.open();
        },
      },
    );
    const taskId = created.task.taskId;
    expect(taskId).toMatch(/^job_/);
    expect(created.task).toMatchObject({ status: 'working', ttl: null, pollInterval: 2000 });
    expect(created._meta).toEqual({
      'io.modelcontextprotocol/model-immediate-response': `Started job ${taskId}; it runs in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`,
    });

    await f.started.promise;
    expect((await f.tc.client.experimental.tasks.getTask(taskId)).status).toBe('working');
    const listed = await f.tc.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toEqual([taskId]);

    const result = f.tc.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    f.release.open();
    expect(await result).toEqual({
      content: [{ type: 'text', text: '{"gifts":["scarf","book"]}' }],
      structuredContent: { gifts: ['scarf', 'book'] },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId } },
    });
    await last.promise;
    const _meta = { 'io.modelcontextprotocol/related-task': { taskId } };
    expect(progress).toEqual([
      { progress: 1, total: 4, message: 'reading the catalog', _meta },
      { progress: 3, total: 4, message: 'ranking', _meta },
      { progress: 4, total: 4, message: 'done', _meta },
    ]);
    expect((await f.tc.client.experimental.tasks.getTask(taskId)).status).toBe('completed');
  });

  it('cancels a task: the task is cancelled at once, its job ends canceled, its result is a canceled error', async () => {
    const created = await f.tc.client.request(
      { method: 'tools/call', params: { name: 'deep_analysis', arguments: { recipient: 'aunt' } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const taskId = created.task.taskId;
    await f.started.promise;
    const cancelled = await f.tc.client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({
      taskId,
      status: 'cancelled',
      statusMessage: 'The task was cancelled.',
    });
    const result = await f.tc.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      error: {
        code: 'canceled',
        category: 'canceled',
        message: 'The job was canceled before it finished.',
        retryable: false,
        retry_after_ms: null,
        outcome: 'failed',
      },
    });
    await waitForStatus(f, taskId, 'canceled');
    const again = await f.tc.client.experimental.tasks.cancelTask(taskId).catch((e: unknown) => e);
    expect((again as McpError).code).toBe(-32602);
  });

  it('answers tasks/get of an unknown task with invalid params', async () => {
    const error = await f.tc.client.experimental.tasks.getTask('job_unknown').catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32602);
  });
});
