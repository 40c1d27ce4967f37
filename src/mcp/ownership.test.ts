import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import { connectClient, gate, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Tasks across sessions ("a fresh session's tasks/list returns every session's task ids, and tasks/result or
 * get_job_status then returns their results") and "Ownership": tasks and the job tools answer only the
 * principal that started the job, or admin. The official SDK client over real HTTP.
 */

let gw: Gateway;
const clients: TestClient[] = [];
let release = gate();

afterEach(async () => {
  for (const tc of clients.splice(0)) await tc.close().catch(() => undefined);
  await gw.close();
});

const tools = (jobs: Jobs) => [
  jobTool({
    name: 'deep_analysis',
    description: 'Analyses gift ideas in the background.',
    inputSchema: { recipient: z.string() },
    jobType: 'analysis',
  }),
  // An application tool that enqueues a job itself, inside its tool call.
  resilientTool({
    name: 'plan_party',
    description: 'Starts planning in the background.',
    inputSchema: z.object({ guests: z.number() }),
    handler: async ({ guests }) => ({
      job_id: await jobs.enqueue('analysis', { recipient: `${guests} guests` }),
    }),
  }),
];

async function start(options: { pageSize?: number } = {}): Promise<void> {
  release = gate();
  gw = await startGateway({
    tools,
    defineJobs: (jobs) =>
      jobs.defineJob('analysis', async ({ payload, signal }) => {
        // Held until the test releases it, or the worker stops (the gateway's close).
        await Promise.race([
          release.promise,
          new Promise((resolve) => signal.addEventListener('abort', resolve)),
        ]);
        return { gifts: [`scarf for ${(payload as { recipient: string }).recipient}`] };
      }),
    server: { taskPageSize: options.pageSize ?? 50 },
  });
}

async function connect(caller: string): Promise<TestClient> {
  const tc = await connectClient(gw.mcpUrl, as(caller));
  clients.push(tc);
  return tc;
}

async function startTask(tc: TestClient, recipient: string): Promise<string> {
  const created = await tc.client.request(
    { method: 'tools/call', params: { name: 'deep_analysis', arguments: { recipient } } },
    CreateTaskResultSchema,
    { task: {} },
  );
  return created.task.taskId;
}

const rpcError = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected an error');
    },
    (error: unknown) => ({ code: (error as McpError).code, message: (error as McpError).message }),
  );

describe('MCP tasks and job tools answer only their owner and admin', () => {
  it("a stranger's fresh session neither lists, reads, awaits nor cancels another's task", async () => {
    await start();
    const ada = await connect('ada');
    const taskId = await startTask(ada, 'mum');
    const bob = await connect('bob');

    expect((await bob.client.experimental.tasks.listTasks()).tasks).toEqual([]);
    const unknown = 'job_00000000-0000-7000-8000-000000000000';
    // Every answer is the one an id that does not exist gets.
    expect(await rpcError(bob.client.experimental.tasks.getTask(taskId))).toEqual(
      await rpcError(bob.client.experimental.tasks.getTask(unknown)),
    );
    expect(await rpcError(bob.client.experimental.tasks.getTask(taskId))).toEqual({
      code: -32602,
      message: 'MCP error -32602: MCP error -32602: Failed to retrieve task: Task not found',
    });
    // (The SDK client prefixes the server's own "MCP error -32602:" once more.)
    const notFound = (id: string) => ({
      code: -32602,
      message: `MCP error -32602: MCP error -32602: Task not found: ${id}`,
    });
    const taskResult = (id: string) => bob.client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
    expect(await rpcError(taskResult(taskId))).toEqual(notFound(taskId));
    expect(await rpcError(taskResult(unknown))).toEqual(notFound(unknown));
    expect(await rpcError(bob.client.experimental.tasks.cancelTask(taskId))).toEqual(notFound(taskId));
    expect(await rpcError(bob.client.experimental.tasks.cancelTask(unknown))).toEqual(notFound(unknown));
    const status = await bob.client.callTool({ name: 'get_job_status', arguments: { job_id: taskId } });
    expect(status).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `There is no job ${taskId}.` }],
    });
    const cancel = await bob.client.callTool({ name: 'cancel_job', arguments: { job_id: taskId } });
    expect(cancel).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `There is no job ${taskId}.` }],
    });
    // Nothing of Bob's reached the job.
    const job = await gw.jobs.get(taskId);
    expect(job).toMatchObject({ owner: 'key:ada', cancelRequestedAt: null });
    expect(['pending', 'in_progress']).toContain(job!.status);

    // Its owner, and admin, see it.
    expect((await ada.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([taskId]);
    const admin = await connect('admin');
    expect((await admin.client.experimental.tasks.getTask(taskId)).status).toBe('working');
    release.open();
    const result = await ada.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ gifts: ['scarf for mum'] });
    const adminStatus = await admin.client.callTool({
      name: 'get_job_status',
      arguments: { job_id: taskId },
    });
    expect(adminStatus.structuredContent).toMatchObject({
      status: 'completed',
      result: { gifts: ['scarf for mum'] },
    });
  });

  it('tasks/list pages through the caller’s own tasks only (keyset cursor); admin lists every task', async () => {
    await start({ pageSize: 2 });
    const ada = await connect('ada');
    const bob = await connect('bob');
    const a1 = await startTask(ada, 'a1');
    const b1 = await startTask(bob, 'b1');
    const a2 = await startTask(ada, 'a2');
    const a3 = await startTask(ada, 'a3');
    const b2 = await startTask(bob, 'b2');

    const first = await ada.client.experimental.tasks.listTasks();
    expect(first.tasks.map((t) => t.taskId)).toEqual([a3, a2]);
    expect(first.nextCursor).toBe(a2);
    const second = await ada.client.experimental.tasks.listTasks(first.nextCursor);
    expect(second.tasks.map((t) => t.taskId)).toEqual([a1]);
    expect(second.nextCursor).toBeUndefined();
    expect((await bob.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([b2, b1]);

    const admin = await connect('admin');
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await admin.client.experimental.tasks.listTasks(cursor);
      all.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(all).toEqual([b2, a3, a2, b1, a1]);
    release.open();
  });

  it('a job tool and an application tool that enqueues inside its call give the job to the caller', async () => {
    await start();
    const ada = await connect('ada');
    const handle = await ada.client.callTool({ name: 'deep_analysis', arguments: { recipient: 'dad' } });
    const viaTool = (handle.structuredContent as { job_id: string }).job_id;
    const party = await ada.client.callTool({ name: 'plan_party', arguments: { guests: 12 } });
    const viaApp = (party.structuredContent as { job_id: string }).job_id;
    expect((await gw.jobs.get(viaTool))!.owner).toBe('key:ada');
    expect((await gw.jobs.get(viaApp))!.owner).toBe('key:ada');
    const bob = await connect('bob');
    const seen = await bob.client.callTool({ name: 'get_job_status', arguments: { job_id: viaApp } });
    expect(seen.isError).toBe(true);
    release.open();
  });

  it("a request naming another principal's session gets 404 Session not found, as an unknown one", async () => {
    await start();
    const ada = await connect('ada');
    const sessionId = ada.transport.sessionId!;
    const post = (caller: string, id: string) =>
      fetch(gw.mcpUrl, {
        method: 'POST',
        headers: {
          ...as(caller),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': id,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
    const stranger = await post('bob', sessionId);
    const unknown = await post('bob', 'no-such-session');
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32001, message: 'Session not found' },
      id: null,
    });
    expect(unknown.status).toBe(404);
    await unknown.text();
    const deleted = await fetch(gw.mcpUrl, {
      method: 'DELETE',
      headers: { ...as('bob'), 'mcp-session-id': sessionId },
    });
    expect(deleted.status).toBe(404);
    await deleted.text();
    // The owner's session is untouched.
    expect((await ada.client.listTools()).tools.map((t) => t.name)).toContain('deep_analysis');
    release.open();
  });
});
