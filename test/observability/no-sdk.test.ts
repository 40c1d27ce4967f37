/**
 * With no OpenTelemetry SDK registered (the default): the API's no-op tracer, no span made active, no
 * `traceparent` sent, nothing but the log fields carried in a job, and a job enqueued outside any call
 * stored exactly as given.
 */
import { trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hasTrace, tracer } from '../../src/core/trace.js';
import { jobTool, resilientTool } from '../../src/mcp/index.js';
import { connectClient, startGateway } from '../../src/mcp/test-support.js';
import { createUpstream } from '../../src/upstream/index.js';
import { json, TestServer } from '../../src/upstream/test-support.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('without an SDK', () => {
  it("Breakwater's tracer is the API's no-op", () => {
    const span = tracer().startSpan('anything');
    expect(span.isRecording()).toBe(false);
    expect(hasTrace(span)).toBe(false);
    span.end();
  });

  it('a tool call sets no active span and sends no traceparent; a job carries only the log fields', async () => {
    const server = await TestServer.start();
    cleanups.push(() => server.close());
    server.on('/gifts', json(200, ['kite']));
    const gift = createUpstream({ name: 'gift', baseUrl: server.url, timeoutMs: 5_000 });
    cleanups.push(() => gift.close());
    const active: unknown[] = [];
    const gw = await startGateway({
      tools: () => [
        resilientTool({
          name: 'suggest',
          description: 'Suggests gifts.',
          inputSchema: {},
          handler: async (_args, ctx) => {
            active.push(trace.getActiveSpan());
            return (await gift.get('/gifts', { signal: ctx.signal })).body;
          },
        }),
        jobTool({
          name: 'analyse',
          description: 'Analyses.',
          inputSchema: { topic: z.string() },
          jobType: 'analysis',
        }),
      ],
      defineJobs: (jobs) => jobs.defineJob('analysis', () => 'done'),
    });
    cleanups.push(() => gw.close());
    const mcp = await connectClient(gw.mcpUrl, { 'x-correlation-id': 'corr-plain' });
    cleanups.push(() => mcp.close());

    await mcp.client.callTool({ name: 'suggest', arguments: {} });
    expect(active).toEqual([undefined]);
    expect(server.seen[0]!.headers['traceparent']).toBeUndefined();
    expect(server.seen[0]!.headers['x-correlation-id']).toBe('corr-plain');

    const result = await mcp.client.callTool({ name: 'analyse', arguments: { topic: 'kites' } });
    const jobId = (result.structuredContent as { job_id: string }).job_id;
    expect((await gw.store.get(jobId))!.payload).toEqual({
      topic: 'kites',
      $breakwater: { correlation_id: 'corr-plain', tool: 'analyse' },
    });

    const outside = await gw.jobs.enqueue('analysis', { topic: 'boats' });
    expect((await gw.store.get(outside))!.payload).toEqual({ topic: 'boats' });
    await vi.waitFor(async () => expect((await gw.jobs.get(outside))!.status).toBe('completed'));
  });
});
