import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import type { InputSchema, JobStatus } from '../store/index.js';
import { jobTool } from './job-tools.js';
import {
  connectClient,
  PUBLIC_URL,
  startGateway,
  untilJobStatus,
  type Gateway,
  type TestClient,
} from './test-support.js';

/**
 * Input during a job over MCP, with the official SDK clients over real HTTP: `get_job_status` shows the
 * question of an `input_required` job, `respond_to_job` answers it (owner only) and the job completes with
 * the answer; a 2025-11-25 task shows `input_required`; the 2026-07-28 client answers the same way.
 */

let gw: Gateway;
const clients: { close(): Promise<unknown> }[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await gw.close();
});

const SCHEMA: InputSchema = {
  type: 'object',
  properties: { placeAgain: { type: 'boolean' } },
  required: ['placeAgain'],
};

async function start(): Promise<void> {
  gw = await startGateway({
    tools: () => [
      jobTool({
        name: 'confirm_order',
        description: 'Confirms an order, asking the user when unsure.',
        inputSchema: { order: z.string() },
        jobType: 'confirm',
        // A call that waits for the job (a progress token) answers within a second.
        deadlineMs: 1_000,
      }),
    ],
    defineJobs: (jobs) =>
      jobs.defineJob<{ order: string }>('confirm', async (ctx) => {
        const answer = await ctx.requestInput({
          message: `Place order ${ctx.payload.order} again?`,
          schema: SCHEMA,
        });
        return { order: ctx.payload.order, placed: answer.content?.['placeAgain'] === true };
      }),
  });
}

async function v1(caller: string): Promise<TestClient> {
  const tc = await connectClient(gw.mcpUrl, as(caller));
  clients.push(tc);
  return tc;
}

async function waitingFor(id: string, status: JobStatus): Promise<void> {
  expect((await untilJobStatus(gw.jobs, id, status)).status).toBe(status);
}

describe('MCP: a job that asks for input', () => {
  it('get_job_status shows the question, a stranger cannot answer, respond_to_job answers, the job completes', async () => {
    await start();
    const ada = await v1('ada');
    const started = await ada.client.callTool({ name: 'confirm_order', arguments: { order: 'o-7' } });
    const id = (started.structuredContent as { job_id: string }).job_id;
    await waitingFor(id, 'input_required');
    const asked = (await gw.jobs.inputRequest(id))!.askedAt;

    const status = await ada.client.callTool({ name: 'get_job_status', arguments: { job_id: id } });
    expect(status.structuredContent).toMatchObject({
      job_id: id,
      status: 'input_required',
      input_request: {
        key: '0',
        message: 'Place order o-7 again?',
        schema: SCHEMA,
        asked_at: new Date(asked).toISOString(),
        expires_at: null,
      },
      message:
        'The job waits for the user\'s answer: ask them "Place order o-7 again?", then call respond_to_job with this job_id, key "0" and the answer.',
    });

    const bob = await v1('bob');
    const refused = await bob.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, answer: { action: 'accept', content: { placeAgain: true } } },
    });
    expect(refused).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `There is no job ${id}.` }],
    });
    const bad = await ada.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, key: '0', answer: { action: 'accept', content: { placeAgain: 'yes' } } },
    });
    expect(bad).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: "The answer does not fit the question's schema: placeAgain must be true or false.",
        },
      ],
    });
    expect((await gw.jobs.get(id))!.status).toBe('input_required');

    const answered = await ada.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, answer: { action: 'accept', content: { placeAgain: true } } },
    });
    expect(answered.isError).toBeUndefined();
    expect(answered.structuredContent).toEqual({
      job_id: id,
      status: 'pending',
      key: '0',
      status_url: `${PUBLIC_URL}jobs/${id}`,
      message: `The answer was recorded and job ${id} goes on. Call get_job_status with its job_id to see progress and the result.`,
    });
    await waitingFor(id, 'completed');
    const done = await ada.client.callTool({ name: 'get_job_status', arguments: { job_id: id } });
    expect(done.structuredContent).toMatchObject({
      status: 'completed',
      result: { order: 'o-7', placed: true },
    });
    const again = await ada.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, answer: { action: 'cancel' } },
    });
    expect(again).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `Job ${id} is not waiting for input (it is completed).` }],
    });
  });

  it('a 2025-11-25 task of the job is input_required with the question as its status message', async () => {
    await start();
    const ada = await v1('ada');
    const created = await ada.client.request(
      { method: 'tools/call', params: { name: 'confirm_order', arguments: { order: 'o-8' } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const id = created.task.taskId;
    await waitingFor(id, 'input_required');
    const task = await ada.client.experimental.tasks.getTask(id);
    expect(task).toMatchObject({
      taskId: id,
      status: 'input_required',
      statusMessage: `The task asks: Place order o-8 again? Answer it with the respond_to_job tool (job_id ${id} and key "0"); get_job_status shows the question's schema.`,
    });
    await ada.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, answer: { action: 'accept', content: { placeAgain: false } } },
    });
    await waitingFor(id, 'completed');
    const result = await ada.client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
    expect(result).toMatchObject({ structuredContent: { order: 'o-8', placed: false } });
  });

  it('a call that waits for the job answers, at its deadline, with a handle that points at the question', async () => {
    await start();
    const ada = await v1('ada');
    const handle = await ada.client.callTool(
      { name: 'confirm_order', arguments: { order: 'o-10' } },
      undefined,
      { onprogress: () => undefined },
    );
    const id = (handle.structuredContent as { job_id: string }).job_id;
    expect(handle.structuredContent).toMatchObject({
      status: 'input_required',
      message: `Job ${id} waits for the user's answer to a question. Call get_job_status with its job_id to read it, then respond_to_job with the answer.`,
    });
  });

  it('the 2026-07-28 client reads the question and answers with respond_to_job', async () => {
    await start();
    const client = new ModernClient(
      { name: 'mcp-test-v2', version: '0.0.1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as('ada') } }),
    );
    const started = await client.callTool({ name: 'confirm_order', arguments: { order: 'o-9' } });
    const id = (started.structuredContent as { job_id: string }).job_id;
    await waitingFor(id, 'input_required');
    const status = await client.callTool({ name: 'get_job_status', arguments: { job_id: id } });
    expect(status.structuredContent).toMatchObject({ status: 'input_required', input_request: { key: '0' } });
    const answered = await client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: id, key: '0', answer: { action: 'accept', content: { placeAgain: true } } },
    });
    expect(answered.structuredContent).toMatchObject({ status: 'pending' });
    await waitingFor(id, 'completed');
  });
});
