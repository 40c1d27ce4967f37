/**
 * Spans through `@opentelemetry/api` with a real (test) SDK registered: a tool call that retries an upstream
 * is one trace (tool → upstream → one CLIENT span per attempt, whose context reaches the upstream server as
 * `traceparent`), a breaker's rejection and a bulkhead's wait show on the request's span, and a job runs in
 * a child of its enqueue's span, in the enqueuer's trace.
 */
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { FakeClock, type BreakwaterError } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { jobTool, resilientTool } from '../../src/mcp/index.js';
import { connectClient, startGateway, type Gateway, type TestClient } from '../../src/mcp/test-support.js';
import { constantBackoff } from '../../src/policy/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { createUpstream, type Upstream } from '../../src/upstream/index.js';
import { json, rejection, TestServer, until } from '../../src/upstream/test-support.js';
import { installTracing, traceparentOf, type RecordedSpan, type Tracing } from '../support/tracing.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** The caller's trace, as an instrumented MCP client would send it. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

let tracing: Tracing;
const cleanups: (() => Promise<unknown> | void)[] = [];

beforeAll(() => {
  tracing = installTracing();
});
afterAll(() => tracing.uninstall());
beforeEach(() => tracing.reset());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function upstreamServer(): Promise<TestServer> {
  const server = await TestServer.start();
  cleanups.push(() => server.close());
  return server;
}

function giftUpstream(
  server: TestServer,
  extra: Partial<Parameters<typeof createUpstream>[0]> = {},
): Upstream {
  const upstream = createUpstream({
    name: 'gift',
    baseUrl: server.url,
    timeoutMs: 5_000,
    retry: { maxAttempts: 3, backoff: constantBackoff(0) },
    ...extra,
  });
  cleanups.push(() => upstream.close());
  return upstream;
}

async function gateway(options: Parameters<typeof startGateway>[0]): Promise<Gateway> {
  const gw = await startGateway(options);
  cleanups.push(() => gw.close());
  return gw;
}

async function client(gw: Gateway, headers: Record<string, string>): Promise<TestClient> {
  const c = await connectClient(gw.mcpUrl, headers);
  cleanups.push(() => c.close());
  return c;
}

function port(server: TestServer): number {
  return Number(new URL(server.url).port);
}

describe('a tool call that retries an upstream', () => {
  it('is one trace: tool → upstream → a CLIENT span per attempt, each sent as traceparent', async () => {
    const server = (await upstreamServer()).on('/gifts', json(503, { title: 'busy' }), json(200, ['kite']));
    const gift = giftUpstream(server);
    const gw = await gateway({
      tools: () => [
        resilientTool({
          name: 'suggest',
          description: 'Suggests gifts.',
          inputSchema: {},
          handler: async (_args, ctx) => (await gift.get<string[]>('/gifts', { signal: ctx.signal })).body,
        }),
      ],
    });
    const mcp = await client(gw, {
      'x-correlation-id': 'corr-trace-1',
      traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
    });

    const result = await mcp.client.callTool({ name: 'suggest', arguments: {} });
    expect(result.isError).toBeUndefined();

    const tool = tracing.one('tool suggest');
    const request = tracing.one('upstream gift GET');
    const attempts = tracing.named('GET');
    expect(tool).toMatchObject({
      kind: SpanKind.INTERNAL,
      traceId: CALLER_TRACE,
      parentSpanId: CALLER_SPAN,
      status: { code: SpanStatusCode.UNSET },
      scope: { name: 'breakwater', version: VERSION },
    });
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'suggest',
      'mcp.method.name': 'tools/call',
      'breakwater.correlation_id': 'corr-trace-1',
      'breakwater.outcome': 'succeeded',
    });

    expect(request).toMatchObject({
      kind: SpanKind.INTERNAL,
      traceId: CALLER_TRACE,
      parentSpanId: tool.spanId,
      status: { code: SpanStatusCode.UNSET },
    });
    expect(request.attributes).toEqual({
      'http.request.method': 'GET',
      'url.path': '/gifts',
      'server.address': '127.0.0.1',
      'server.port': port(server),
      'breakwater.dependency': 'gift',
      // The tool call's correlation id reached the upstream without the handler passing it.
      'breakwater.correlation_id': 'corr-trace-1',
      'http.response.status_code': 200,
      'breakwater.attempts': 2,
    });
    expect(request.events).toEqual([
      { name: 'retry', attributes: { 'breakwater.attempt': 2, 'error.type': '503' } },
    ]);

    expect(attempts).toHaveLength(2);
    const [first, second] = attempts as [RecordedSpan, RecordedSpan];
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({
        kind: SpanKind.CLIENT,
        traceId: CALLER_TRACE,
        parentSpanId: request.spanId,
      });
    }
    expect(first.attributes).toEqual({
      'http.request.method': 'GET',
      'url.full': `${server.url}/gifts`,
      'server.address': '127.0.0.1',
      'server.port': port(server),
      'http.response.status_code': 503,
      'error.type': '503',
    });
    expect(first.status).toEqual({ code: SpanStatusCode.ERROR, message: 'the upstream answered HTTP 503' });
    expect(second.attributes).toEqual({
      'http.request.method': 'GET',
      'url.full': `${server.url}/gifts`,
      'server.address': '127.0.0.1',
      'server.port': port(server),
      'http.request.resend_count': 1,
      'http.response.status_code': 200,
    });
    expect(second.status).toEqual({ code: SpanStatusCode.UNSET });

    // Each attempt went out with its own span as parent, and with the tool call's correlation id.
    expect(server.seen.map((s) => [s.headers['traceparent'], s.headers['x-correlation-id']])).toEqual([
      [traceparentOf(first), 'corr-trace-1'],
      [traceparentOf(second), 'corr-trace-1'],
    ]);
  });

  it('a failed call ends every span with an error status and error.type', async () => {
    const server = (await upstreamServer()).on('/gifts', json(503, { title: 'busy' }));
    const gift = giftUpstream(server, { retry: { maxAttempts: 2, backoff: constantBackoff(0) } });
    const gw = await gateway({
      tools: () => [
        resilientTool({
          name: 'suggest',
          description: 'Suggests gifts.',
          inputSchema: {},
          annotations: { readOnlyHint: true },
          handler: async (_args, ctx) => (await gift.get('/gifts', { signal: ctx.signal })).body,
        }),
      ],
    });
    const mcp = await client(gw, { 'x-correlation-id': 'corr-trace-2' });

    const result = await mcp.client.callTool({ name: 'suggest', arguments: {} });
    expect(result.isError).toBe(true);

    const tool = tracing.one('tool suggest');
    expect(tool.parentSpanId).toBeUndefined();
    expect(tool.attributes).toMatchObject({
      'breakwater.outcome': 'failed',
      'breakwater.dependency_code': 'gift_service_busy',
      'error.type': 'upstream_unavailable',
    });
    expect(tool.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream_unavailable' });
    const request = tracing.one('upstream gift GET');
    expect(request.parentSpanId).toBe(tool.spanId);
    expect(request.attributes).toMatchObject({
      'http.response.status_code': 503,
      'error.type': '503',
      'breakwater.attempts': 2,
      'breakwater.dependency_code': 'gift_service_busy',
    });
    expect(request.status.code).toBe(SpanStatusCode.ERROR);
    expect(tracing.named('GET').map((s) => s.attributes['error.type'])).toEqual(['503', '503']);
  });
});

describe('policies on the request span', () => {
  it("a breaker's rejection is an event, and no attempt is sent", async () => {
    const server = (await upstreamServer()).on('/gifts', json(500, { title: 'down' }));
    const gift = giftUpstream(server, {
      retry: false,
      breaker: { consecutiveFailures: 1, openMs: 60_000 },
      clock: new FakeClock(),
    });
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('first', (span) => rejection(gift.get('/gifts')).finally(() => span.end()));
    tracing.reset();

    const error = (await tracer.startActiveSpan('second', (span) =>
      rejection(gift.get('/gifts')).finally(() => span.end()),
    )) as BreakwaterError;
    expect(error.code).toBe('circuit_open');

    const request = tracing.one('upstream gift GET');
    expect(request.parentSpanId).toBe(tracing.one('second').spanId);
    expect(request.events).toEqual([
      {
        name: 'circuit_breaker.rejected',
        attributes: { 'breakwater.circuit.state': 'open', 'breakwater.retry_after_ms': 60_000 },
      },
    ]);
    expect(request.attributes).toMatchObject({ 'error.type': 'circuit_open', 'breakwater.attempts': 0 });
    expect(request.status.code).toBe(SpanStatusCode.ERROR);
    expect(tracing.named('GET')).toEqual([]);
    expect(server.count('/gifts')).toBe(1);
  });

  it('a call that waits for the bulkhead gets a bulkhead.wait span; one that does not, none', async () => {
    const held: ServerResponse[] = [];
    const server = (await upstreamServer()).on('/slow', (_req, res) => void held.push(res));
    const gift = giftUpstream(server, {
      retry: false,
      breaker: false,
      bulkhead: { maxConcurrent: 1, maxQueue: 1 },
    });
    const tracer = trace.getTracer('test');
    const a = tracer.startActiveSpan('A', (span) => gift.get('/slow').finally(() => span.end()));
    await until(() => held.length === 1);
    const b = tracer.startActiveSpan('B', (span) => gift.get('/slow').finally(() => span.end()));
    const answer = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    };
    answer(held[0]!);
    await a;
    await until(() => held.length === 2);
    answer(held[1]!);
    await b;

    const requests = tracing.named('upstream gift GET');
    const ofB = requests.find((s) => s.parentSpanId === tracing.one('B').spanId)!;
    const ofA = requests.find((s) => s.parentSpanId === tracing.one('A').spanId)!;
    const wait = tracing.one('bulkhead.wait');
    expect(wait.parentSpanId).toBe(ofB.spanId);
    expect(wait.attributes).toEqual({
      'breakwater.bulkhead.queued': 1,
      'breakwater.bulkhead.outcome': 'admitted',
    });
    expect(wait.status.code).toBe(SpanStatusCode.UNSET);
    expect(tracing.spans.filter((s) => s.parentSpanId === ofA.spanId).map((s) => s.name)).toEqual(['GET']);
  });
});

describe('jobs', () => {
  it('a job tool: tool → enqueue → job run → its upstream call, one trace, the context carried in the job', async () => {
    const server = (await upstreamServer()).on('/gifts', json(200, ['kite']));
    const gift = giftUpstream(server);
    const seen: unknown[] = [];
    const gw = await gateway({
      tools: () => [
        jobTool({
          name: 'analyse',
          description: 'Analyses a topic.',
          inputSchema: { topic: z.string() },
          jobType: 'analysis',
        }),
      ],
      defineJobs: (jobs) =>
        jobs.defineJob('analysis', async (ctx) => {
          seen.push(ctx.payload);
          return (await gift.get('/gifts', { signal: ctx.signal })).body;
        }),
    });
    const mcp = await client(gw, { 'x-correlation-id': 'corr-job-1' });

    const result = await mcp.client.callTool({ name: 'analyse', arguments: { topic: 'kites' } });
    const jobId = (result.structuredContent as { job_id: string }).job_id;
    await vi.waitFor(() => tracing.one('job analysis'));

    const tool = tracing.one('tool analyse');
    const enqueue = tracing.one('enqueue analysis');
    const run = tracing.one('job analysis');
    const request = tracing.one('upstream gift GET');
    expect(tool.attributes).toMatchObject({ 'breakwater.outcome': 'succeeded', 'breakwater.job_id': jobId });
    expect(enqueue).toMatchObject({
      kind: SpanKind.PRODUCER,
      traceId: tool.traceId,
      parentSpanId: tool.spanId,
    });
    expect(enqueue.attributes).toEqual({
      'messaging.system': 'breakwater',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'analysis',
      'messaging.message.id': jobId,
      'breakwater.job.created': true,
    });
    expect(run).toMatchObject({
      kind: SpanKind.CONSUMER,
      traceId: tool.traceId,
      parentSpanId: enqueue.spanId,
    });
    expect(run.attributes).toEqual({
      'messaging.system': 'breakwater',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'analysis',
      'messaging.message.id': jobId,
      'breakwater.job.attempt': 1,
      'breakwater.job.outcome': 'completed',
    });
    expect(request).toMatchObject({ traceId: tool.traceId, parentSpanId: run.spanId });
    // The enqueuer's correlation id travelled with the job and reached the job's upstream call.
    expect(request.attributes['breakwater.correlation_id']).toBe('corr-job-1');
    expect(server.seen[0]!.headers['x-correlation-id']).toBe('corr-job-1');

    // The carrier is in the stored payload, and nowhere else.
    expect((await gw.store.get(jobId))!.payload).toEqual({
      topic: 'kites',
      $breakwater: {
        trace: { traceparent: traceparentOf(enqueue) },
        correlation_id: 'corr-job-1',
        tool: 'analyse',
      },
    });
    expect((await gw.jobs.get(jobId))!.payload).toEqual({ topic: 'kites' });
    expect(seen).toEqual([{ topic: 'kites' }]);
  });

  it('a job enqueued inside a span runs in a child of its enqueue span, same trace; without one, in a new trace', async () => {
    const store = await openSqliteStore({ path: ':memory:' });
    const jobs = createJobs({ store, pollMs: 50 });
    cleanups.push(async () => {
      await jobs.stop({ graceMs: 0 });
      await store.close();
    });
    const active: (string | undefined)[] = [];
    jobs.defineJob('report', (ctx) => {
      active.push(trace.getActiveSpan()?.spanContext().spanId);
      return ctx.payload;
    });
    jobs.start();
    const tracer = trace.getTracer('test');
    const id = await tracer.startActiveSpan('request', async (span) => {
      try {
        return await jobs.enqueue('report', { month: '2026-01' });
      } finally {
        span.end();
      }
    });
    // An array payload cannot carry the context: its run starts a trace of its own.
    const bare = await tracer.startActiveSpan('other', async (span) => {
      try {
        return await jobs.enqueue('report', ['no', 'carrier']);
      } finally {
        span.end();
      }
    });
    await vi.waitFor(() => expect(tracing.named('job report')).toHaveLength(2));

    const request = tracing.one('request');
    const enqueues = tracing.named('enqueue report');
    const [run, bareRun] = [id, bare].map((jobId) =>
      tracing.named('job report').find((s) => s.attributes['messaging.message.id'] === jobId)!,
    ) as [RecordedSpan, RecordedSpan];
    const enqueue = enqueues.find((s) => s.attributes['messaging.message.id'] === id)!;
    expect(enqueue.parentSpanId).toBe(request.spanId);
    expect(run).toMatchObject({ traceId: request.traceId, parentSpanId: enqueue.spanId });
    expect(bareRun.parentSpanId).toBeUndefined();
    expect(bareRun.traceId).not.toBe(tracing.one('other').traceId);
    // The handler ran with its run's span active.
    expect(active.sort()).toEqual([run.spanId, bareRun.spanId].sort());
    expect((await store.get(bare))!.payload).toEqual(['no', 'carrier']);
  });
});
