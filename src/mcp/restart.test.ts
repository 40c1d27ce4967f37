import { join } from 'node:path';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import { connectClient, gate, startGateway, tempDir, type Gateway, type TestClient } from './test-support.js';

const tools = () => [
  jobTool({
    name: 'deep_analysis',
    description: 'Analyses gift ideas in the background.',
    inputSchema: { recipient: z.string() },
    jobType: 'analysis',
    toResult: (result) => ({ ...(result as object), checked: true }),
  }),
];

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function gateway(dbPath: string, defineJobs: (jobs: Jobs) => void): Promise<Gateway> {
  const gw = await startGateway({ dbPath, tools, defineJobs, server: { taskPollIntervalMs: 50 } });
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

async function client(gw: Gateway): Promise<TestClient> {
  const tc = await connectClient(gw.mcpUrl);
  cleanups.push(() => tc.close().catch(() => undefined));
  return tc;
}

async function createTask(tc: TestClient, recipient: string): Promise<string> {
  const created = await tc.client.request(
    { method: 'tools/call', params: { name: 'deep_analysis', arguments: { recipient } } },
    CreateTaskResultSchema,
    { task: {} },
  );
  return created.task.taskId;
}

describe('tasks across a restart', () => {
  it('answers tasks/get, tasks/list and tasks/result from a new process on the same store', async () => {
    const tmp = tempDir();
    cleanups.push(() => tmp.remove());
    const dbPath = join(tmp.dir, 'breakwater.db');

    // First process: one task finishes, the other is still running when the process stops.
    const running = gate();
    const gw1 = await gateway(dbPath, (jobs) =>
      jobs.defineJob<{ recipient: string }>('analysis', async ({ payload, signal }) => {
        if (payload.recipient === 'quick') return { gifts: ['tea'] };
        running.open();
        await new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      }),
    );
    const tc1 = await client(gw1);
    // The SDK client's streaming task API: task created, polled, result fetched.
    const messages = [];
    for await (const message of tc1.client.experimental.tasks.callToolStream(
      { name: 'deep_analysis', arguments: { recipient: 'quick' } },
      CallToolResultSchema,
      { task: {} },
    )) {
      messages.push(message);
    }
    const first = messages[0]!;
    if (first.type !== 'taskCreated') throw new Error(`expected taskCreated, got ${first.type}`);
    const quick = first.task.taskId;
    expect(messages.at(-1)).toEqual({
      type: 'result',
      result: {
        content: [{ type: 'text', text: '{"gifts":["tea"],"checked":true}' }],
        structuredContent: { gifts: ['tea'], checked: true },
        _meta: { 'io.modelcontextprotocol/related-task': { taskId: quick } },
      },
    });
    const slow = await createTask(tc1, 'slow');
    await running.promise;
    expect((await tc1.client.experimental.tasks.getTask(slow)).status).toBe('working');
    const oldSession = tc1.transport.sessionId!;
    await tc1.close();
    await gw1.close(); // the worker gives the running job back: pending again, the run not counted

    // Second process on the same SQLite file: a new store, runtime, app and client session.
    const gw2 = await gateway(dbPath, (jobs) =>
      jobs.defineJob<{ recipient: string }>('analysis', async ({ payload }) => ({
        gifts: [`book for ${payload.recipient}`],
      })),
    );
    const stale = await fetch(gw2.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': oldSession,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stale.status).toBe(404);
    expect(await stale.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32001, message: 'Session not found' },
      id: null,
    });

    const tc2 = await client(gw2);
    expect(await tc2.client.experimental.tasks.getTaskResult(quick, CallToolResultSchema)).toEqual({
      content: [{ type: 'text', text: '{"gifts":["tea"],"checked":true}' }],
      structuredContent: { gifts: ['tea'], checked: true },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: quick } },
    });
    expect(await tc2.client.experimental.tasks.getTaskResult(slow, CallToolResultSchema)).toEqual({
      content: [{ type: 'text', text: '{"gifts":["book for slow"],"checked":true}' }],
      structuredContent: { gifts: ['book for slow'], checked: true },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: slow } },
    });
    const task = await tc2.client.experimental.tasks.getTask(slow);
    expect(task).toMatchObject({ taskId: slow, status: 'completed', ttl: null });
    const listed = await tc2.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => [t.taskId, t.status])).toEqual([
      [slow, 'completed'],
      [quick, 'completed'],
    ]);
    // The slow job ran twice (once per process) but only the second run counted.
    expect((await gw2.jobs.get(slow))?.attempts).toBe(1);
  });
});
