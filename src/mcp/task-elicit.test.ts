import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { as } from '../../test/support/principals.js';
import { jobTool } from './job-tools.js';
import { startGateway, type Gateway } from './test-support.js';

/**
 * A 2025-11-25 client that waits on `tasks/result` of a job that asks for input gets the questions as
 * `elicitation/create` requests related to the task (MCP 2025-11-25, "Tasks"), and its answers reach the
 * job: the official SDK 1.x client, its elicitation handler and a task-augmented call, over real HTTP.
 */

let gw: Gateway;
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await gw.close();
});

const SIGN = {
  type: 'object',
  properties: { name: { type: 'string' } },
  required: ['name'],
} as const;

async function start(): Promise<void> {
  gw = await startGateway({
    tools: () => [
      jobTool({ name: 'approve', description: 'Asks for approvals.', inputSchema: {}, jobType: 'approve' }),
    ],
    defineJobs: (jobs) =>
      jobs.defineJob(
        'approve',
        async (ctx) => {
          const both = await ctx.requestInputs({
            legal: { message: 'Legal: your name?', schema: SIGN },
            finance: { message: 'Finance: your name?', schema: SIGN },
          });
          const sure = await ctx.requestInput({ key: 'sure', message: 'Sure?' });
          return { both, sure };
        },
        { maxAttempts: 1 },
      ),
  });
}

/** The SDK 1.x client declaring elicitation, answering each question with `answer`. */
async function elicitingClient(
  caller: string,
  answer: (params: Record<string, unknown>) => ElicitResult,
): Promise<{ client: Client; asked: Record<string, unknown>[] }> {
  const client = new Client({ name: 'elicit-test', version: '0.0.1' }, { capabilities: { elicitation: {} } });
  const asked: Record<string, unknown>[] = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request.params as Record<string, unknown>);
    return answer(request.params as Record<string, unknown>);
  });
  await client.connect(
    new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as(caller) } }),
  );
  clients.push(client);
  return { client, asked };
}

describe('2025-11-25 tasks: the job asks through elicitation while the client waits on tasks/result', () => {
  it('sends every open question with the related task, stores the answers, then the next round, then the result', async () => {
    await start();
    const names: Record<string, string> = { 'Legal: your name?': 'Lee', 'Finance: your name?': 'Fay' };
    const { client, asked } = await elicitingClient('ada', (params): ElicitResult => {
      const message = params['message'] as string;
      if (message === 'Sure?') return { action: 'accept', content: {} };
      return { action: 'accept', content: { name: names[message]! } };
    });
    const created = await client.request(
      { method: 'tools/call', params: { name: 'approve', arguments: {} } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const taskId = created.task.taskId;
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({
      both: {
        legal: { action: 'accept', content: { name: 'Lee' } },
        finance: { action: 'accept', content: { name: 'Fay' } },
      },
      sure: { action: 'accept', content: {} },
    });
    const related = { 'io.modelcontextprotocol/related-task': { taskId } };
    expect(asked.map((params) => params['message']).sort()).toEqual([
      'Finance: your name?',
      'Legal: your name?',
      'Sure?',
    ]);
    expect(asked.find((params) => params['message'] === 'Legal: your name?')).toEqual({
      mode: 'form',
      message: 'Legal: your name?',
      requestedSchema: SIGN,
      _meta: related,
    });
    expect(asked.at(-1)).toEqual({
      mode: 'form',
      message: 'Sure?',
      requestedSchema: { type: 'object', properties: {} },
      _meta: related,
    });
    const events = [];
    for await (const event of gw.jobs.events(taskId)) events.push(event.type);
    expect(events.filter((type) => type === 'job.input_received')).toHaveLength(3);
  });

  it('an answer that does not fit stays unstored: the question waits for respond_to_job; a stranger is never asked', async () => {
    await start();
    const { client, asked } = await elicitingClient('ada', () => ({
      action: 'accept',
      content: { name: 7 },
    }));
    const created = await client.request(
      { method: 'tools/call', params: { name: 'approve', arguments: {} } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const taskId = created.task.taskId;
    const waiting = client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    for (let i = 0; i < 200 && asked.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(asked).toHaveLength(2);
    expect((await gw.jobs.get(taskId))!.status).toBe('input_required');
    const stranger = await elicitingClient('bob', () => ({ action: 'accept', content: { name: 'Bob' } }));
    await expect(
      stranger.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
    ).rejects.toThrow(`Task not found: ${taskId}`);
    expect(stranger.asked).toEqual([]);
    // Answered another way, the job goes on; the waiting client is asked the next question once.
    await gw.jobs.respond(taskId, 'legal', { action: 'accept', content: { name: 'Lee' } });
    await gw.jobs.respond(taskId, 'finance', { action: 'decline' });
    for (let i = 0; i < 200 && asked.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(asked.map((params) => params['message'])).toContain('Sure?');
    await gw.jobs.respond(taskId, 'sure', { action: 'accept' });
    expect((await waiting).structuredContent).toMatchObject({ sure: { action: 'accept' } });
  });
});
