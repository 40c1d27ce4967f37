import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jobTool } from './job-tools.js';
import { mrtrRpc, startGateway, type Gateway } from './test-support.js';

let gw: Gateway | undefined;

afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const NAME = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const;

async function start(): Promise<Gateway> {
  gw = await startGateway({
    startWorker: false,
    defineJobs: (jobs) => jobs.defineJob('greet', ({ payload }) => payload),
    tools: () => [
      jobTool({
        name: 'greet_later',
        description: 'Asks a name, then greets it in the background.',
        inputSchema: { greeting: z.string() },
        jobType: 'greet',
        toPayload: async ({ greeting }, ctx) => {
          const answer = await ctx.requestInput({ key: 'who', message: 'Whom to greet?', schema: NAME });
          return { text: `${greeting}, ${String(answer.content?.['name'])}!` };
        },
      }),
    ],
  });
  return gw;
}

const call = (params: Record<string, unknown>) =>
  mrtrRpc(gw!.mcpUrl, 'ada', 'tools/call', {
    name: 'greet_later',
    arguments: { greeting: 'Hello' },
    ...params,
  });

const TASKS = {
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: {},
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
};

describe("a job tool's toPayload asks the user first (2026-07-28)", () => {
  it('answers input_required and enqueues nothing; the round with the answer enqueues the job with it', async () => {
    const g = await start();
    const first = await call({});
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { who: { method: 'elicitation/create' } },
    });
    expect(await g.store.list({ limit: 10 })).toEqual([]);

    const second = await call({
      inputResponses: { who: { action: 'accept', content: { name: 'Ada' } } },
      requestState: first.result!.requestState,
    });
    const jobId = (second.result!['structuredContent'] as { job_id: string }).job_id;
    const jobs = await g.store.list({ limit: 10 });
    expect(jobs.map((job) => [job.id, job.type, (job.payload as { text: string }).text])).toEqual([
      [jobId, 'greet', 'Hello, Ada!'],
    ]);
  });

  it('with the tasks extension: no task on the asking round, a task (and its job) on the answered one', async () => {
    const g = await start();
    const first = await call({ _meta: TASKS });
    expect(first.result?.['resultType']).toBe('input_required');
    expect(first.result).not.toHaveProperty('taskId');
    expect(await g.store.list({ limit: 10 })).toEqual([]);

    const second = await call({
      _meta: TASKS,
      inputResponses: { who: { action: 'accept', content: { name: 'Bo' } } },
      requestState: first.result!.requestState,
    });
    expect(second.result?.['resultType']).toBe('task');
    expect(second.result).not.toHaveProperty('requestState');
    const job = await g.store.get(second.result!['taskId'] as string);
    expect((job?.payload as { text: string }).text).toBe('Hello, Bo!');
  });
});
