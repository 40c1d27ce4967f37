/**
 * A job that asks the user, across a gateway restart: a job tool's job asks "go on?" and waits
 * (`input_required`); the gateway is closed while it waits; a new gateway on the same SQLite file takes the
 * answer through `respond_to_job` from a new MCP session, and the job reruns with it and completes. Real
 * gateways (`startGateway`), the SDK 1.x client over HTTP.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineApp, type BreakwaterApp } from '../../src/entries/gateway.js';
import { jobTool } from '../../src/entries/mcp.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { untilJobStatus } from '../../src/mcp/test-support.js';
import type { JobStatus } from '../../src/store/index.js';
import { connect, tempDb, useCleanups, type McpClient } from './support.js';

const defer = useCleanups();

/** Runs of the job's handler (it reruns from the start once answered). */
let runs = 0;

function app(): BreakwaterApp {
  return defineApp({
    setup({ jobs }) {
      jobs.defineJob<{ item: string }>('restart.confirm', async (ctx) => {
        runs++;
        const answer = await ctx.requestInput({
          key: 'go_on',
          message: `Order ${ctx.payload.item} again?`,
          schema: { type: 'object', properties: { yes: { type: 'boolean' } }, required: ['yes'] },
        });
        return {
          item: ctx.payload.item,
          ordered: answer.action === 'accept' && answer.content?.['yes'] === true,
        };
      });
      return {
        name: 'input-restart',
        version: '1.0.0',
        tools: [
          jobTool({
            name: 'confirm_order',
            description: 'Asks whether to order again, in the background.',
            inputSchema: { item: z.string() },
            jobType: 'restart.confirm',
          }),
        ],
      };
    },
  });
}

async function gateway(store: string): Promise<Gateway> {
  const gw = await startGateway({ app: app(), store, port: 0, log: () => undefined, graceMs: 500 });
  defer(() => gw.close());
  return gw;
}

/** `get_job_status` of `jobId`, as structured content. */
async function status(mcp: McpClient, jobId: string): Promise<Record<string, unknown>> {
  const result = await mcp.client.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
  return result.structuredContent as Record<string, unknown>;
}

/** `get_job_status` of `jobId` once the job is in `wanted` (followed through the store's event push). */
async function until(gw: Gateway, mcp: McpClient, jobId: string, wanted: JobStatus) {
  await untilJobStatus(gw.jobs, jobId, wanted);
  return status(mcp, jobId);
}

describe('a job waiting for input across a gateway restart', () => {
  it('asks, survives the restart, takes the answer on the new gateway and completes with it', async () => {
    runs = 0;
    const store = tempDb(defer);
    const first = await gateway(store);
    const before = await connect(defer, first.mcpUrl);
    const started = await before.client.callTool({ name: 'confirm_order', arguments: { item: 'scarf' } });
    const jobId = (started.structuredContent as { job_id: string }).job_id;
    const waiting = await until(first, before, jobId, 'input_required');
    expect(waiting['input_request']).toMatchObject({ key: 'go_on', message: 'Order scarf again?' });
    expect(runs).toBe(1);
    await before.close();
    await first.close();

    const second = await gateway(store);
    const after = await connect(defer, second.mcpUrl);
    expect((await status(after, jobId))['status']).toBe('input_required');
    const answered = await after.client.callTool({
      name: 'respond_to_job',
      arguments: { job_id: jobId, key: 'go_on', answer: { action: 'accept', content: { yes: true } } },
    });
    expect(answered.isError).toBeUndefined();
    const done = await until(second, after, jobId, 'completed');
    expect(done['result']).toEqual({ item: 'scarf', ordered: true });
    expect(runs).toBe(2);
  });
});
