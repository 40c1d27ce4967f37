/**
 * GiftGenius end to end across a restart: a task created on one gateway, the gateway closed while the job
 * runs, a new gateway on the same SQLite file, and the task's result read from a new MCP session. What
 * happens to the running job depends on the shutdown grace: shorter than the work left, the job is stopped
 * and its lease released (pending again, the run not counted) and the next gateway runs it from the start;
 * longer, the shutdown waits for it to finish.
 */
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { createUpstream } from '../../src/entries/upstream.js';
import { defineApp } from '../../src/entries/gateway.js';
import { openStore, type JobRecord } from '../../src/entries/jobs.js';
import { sleep } from '../../src/entries/index.js';
import {
  connect,
  gate,
  startBackends,
  startGiftGenius,
  tempDb,
  useCleanups,
  type McpClient,
} from './support.js';

const defer = useCleanups();

const REQUEST = { interests: ['music'], budget_usd: 80, recipient: 'Robin' };
const GIFTS = recommendGifts(loadCatalog(), REQUEST);
const RESULT = {
  content: [
    {
      type: 'text',
      text: JSON.stringify({
        gifts: GIFTS,
        summary: `5 gifts for Robin, best first: ${GIFTS.map((g) => g.name).join('; ')}.`,
      }),
    },
  ],
  structuredContent: {
    gifts: GIFTS,
    summary: `5 gifts for Robin, best first: ${GIFTS.map((g) => g.name).join('; ')}.`,
  },
};

async function createTask(mcp: McpClient): Promise<string> {
  const created = await mcp.client.request(
    { method: 'tools/call', params: { name: 'start_deep_analysis', arguments: REQUEST } },
    CreateTaskResultSchema,
    { task: {} },
  );
  return created.task.taskId;
}

/** Resolves once the job has reported progress `step` (read from the store's own event push). */
async function untilStep(gw: Gateway, jobId: string, step: number): Promise<void> {
  for await (const event of gw.jobs.events(jobId)) {
    if (event.type === 'job.progress' && (event.payload as { step: number }).step >= step) return;
  }
  throw new Error(`job ${jobId} ended before step ${step}`);
}

/** The job and its event types as stored in the SQLite file, read with a store of the test's own. */
async function stored(dbPath: string, jobId: string): Promise<{ job: JobRecord; types: string[] }> {
  const store = await openStore({ url: dbPath });
  try {
    const job = await store.get(jobId);
    if (job === undefined) throw new Error(`no job ${jobId}`);
    return { job, types: (await store.events(jobId)).map((e) => e.type) };
  } finally {
    await store.close();
  }
}

const RUN = ['job.started', 'job.progress', 'job.progress', 'job.progress', 'job.partial'] as const;
const FULL_RUN = [...RUN, 'job.progress', 'job.progress', 'job.completed'];

describe('a task across a gateway restart', () => {
  it('grace shorter than the work: the lease is released, the next gateway reruns it, the result is read', async () => {
    const backends = await startBackends(defer);
    const dbPath = tempDb(defer);
    const gw1 = await startGiftGenius(defer, backends, {
      dbPath,
      settings: { stepMs: 10_000 },
      gateway: { graceMs: 100 },
    });
    const mcp1 = await connect(defer, gw1.mcpUrl);
    const taskId = await createTask(mcp1);
    await untilStep(gw1, taskId, 0);
    await gw1.close();

    const between = await stored(dbPath, taskId);
    expect(between.job).toMatchObject({
      status: 'pending',
      attempts: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      result: null,
    });
    expect(between.types).toEqual(['job.started', 'job.progress']);

    const gw2 = await startGiftGenius(defer, backends, { dbPath, settings: { stepMs: 20 } });
    const mcp2 = await connect(defer, gw2.mcpUrl);
    expect(mcp2.transport.sessionId).not.toBe(mcp1.transport.sessionId);
    const result = await mcp2.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toEqual({ ...RESULT, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } });
    expect(await mcp2.client.experimental.tasks.getTask(taskId)).toMatchObject({
      taskId,
      status: 'completed',
    });

    const after = await stored(dbPath, taskId);
    // Only the second run counted; the first run's events stay, and the job has one terminal event.
    expect(after.job).toMatchObject({ status: 'completed', attempts: 1 });
    expect(after.types).toEqual(['job.started', 'job.progress', ...FULL_RUN]);
  });

  it('grace longer than the work: the shutdown waits for the job, the next gateway serves its result', async () => {
    const backends = await startBackends(defer);
    const dbPath = tempDb(defer);
    const gw1 = await startGiftGenius(defer, backends, { dbPath, settings: { stepMs: 150 } });
    const mcp1 = await connect(defer, gw1.mcpUrl);
    const taskId = await createTask(mcp1);
    await untilStep(gw1, taskId, 1);
    await gw1.close(); // the default grace (10 s) outlasts the three steps left

    const between = await stored(dbPath, taskId);
    expect(between.job).toMatchObject({ status: 'completed', attempts: 1 });
    expect(between.types).toEqual(FULL_RUN);

    const gw2 = await startGiftGenius(defer, backends, { dbPath });
    const mcp2 = await connect(defer, gw2.mcpUrl);
    const result = await mcp2.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toEqual({ ...RESULT, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } });
  });

  it("shutdown lets a running job call its upstreams before the app's upstreams close", async () => {
    const backends = await startBackends(defer);
    const dbPath = tempDb(defer);
    const running = gate();
    const app = defineApp({
      setup({ jobs, clock }) {
        const gift = createUpstream({
          name: 'gift',
          baseUrl: backends.urls.giftUrl,
          timeoutMs: 2_000,
          clock,
        });
        jobs.defineJob('late_call', async () => {
          running.open();
          await sleep(clock, 200); // the gateway is shutting down meanwhile
          const { body } = await gift.post<{ gifts: Array<{ id: string }> }>(
            '/recommendations',
            { interests: ['tea'], budget_usd: 30, limit: 1 },
            { idempotent: true },
          );
          return body.gifts.map((g) => g.id);
        });
        return { name: 'late', version: '1.0.0', upstreams: [gift] };
      },
    });
    const gw = await startGateway({ app, store: dbPath, port: 0, log: () => undefined });
    defer(() => gw.close());
    const jobId = await gw.jobs.enqueue('late_call', {});
    await running.promise;
    await gw.close();

    const { job } = await stored(dbPath, jobId);
    expect(job).toMatchObject({ status: 'completed', result: ['p015'], error: null });
  });
});
