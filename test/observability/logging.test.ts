/**
 * Structured logs: every line written inside a tool call, an operation or a job's run carries its
 * `correlation_id`, `tool`, `operation_id` and `job_id`; what each component logs (tool call start and end,
 * upstream failures, operation transitions, job run ends, webhook rejections) with its exact fields; and
 * secrets (a bearer token, a cookie, a webhook signature, a key in an error message) never reach a line.
 */
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Log, LogContext, setLogger, type Disposable } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { jobTool, resilientTool } from '../../src/mcp/index.js';
import { connectClient, startGateway, type Gateway } from '../../src/mcp/test-support.js';
import { OperationLedger } from '../../src/operations/index.js';
import { constantBackoff } from '../../src/policy/index.js';
import { createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import { createUpstream } from '../../src/upstream/index.js';
import { json, TestServer } from '../../src/upstream/test-support.js';
import { createWebhookIngress, defineWebhookSource, stripeVerifier } from '../../src/webhooks/index.js';

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** A pino-compatible logger that keeps its lines. */
function fakeLogger(lines: Line[]) {
  const at =
    (level: string) =>
    (fields: object, message: string): void =>
      void lines.push({ level, message, fields: { ...(fields as Record<string, unknown>) } });
  return { info: at('info'), warn: at('warn'), error: at('error') };
}

const BEARER = 'sk-live-7f3a9c1e5b';
const COOKIE = 'session=c0ffee-42';
/** A fresh timestamp with a signature that does not match: `invalid_signature`. */
const SIGNATURE = `t=${Math.floor(Date.now() / 1000)},v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd`;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('lines through the process logger', () => {
  let lines: Line[];
  let installed: Disposable;
  beforeEach(() => {
    lines = [];
    installed = setLogger(fakeLogger(lines));
  });
  afterEach(() => installed.dispose());

  async function gateway(options: Parameters<typeof startGateway>[0]): Promise<Gateway> {
    const gw = await startGateway(options);
    cleanups.push(() => gw.close());
    return gw;
  }

  async function upstreamServer(): Promise<TestServer> {
    const server = await TestServer.start();
    cleanups.push(() => server.close());
    return server;
  }

  it("a tool call: started, the upstream failure and the end, each with the call's correlation_id and tool", async () => {
    const server = (await upstreamServer()).on('/gifts', json(503, { title: 'busy' }));
    const gift = createUpstream({
      name: 'gift',
      baseUrl: server.url,
      timeoutMs: 5_000,
      retry: { maxAttempts: 2, backoff: constantBackoff(0) },
    });
    cleanups.push(() => gift.close());
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
    const mcp = await connectClient(gw.mcpUrl, { 'x-correlation-id': 'corr-log-1' });
    cleanups.push(() => mcp.close());

    await mcp.client.callTool({ name: 'suggest', arguments: {} });

    const call = { correlation_id: 'corr-log-1', tool: 'suggest' };
    expect(lines).toEqual([
      { level: 'info', message: 'tool call started', fields: call },
      {
        level: 'warn',
        message: 'upstream request failed',
        fields: {
          ...call,
          dependency: 'gift',
          method: 'GET',
          path: '/gifts',
          code: 'upstream_unavailable',
          dependency_code: 'gift_service_busy',
          upstream_status: 503,
          reason: 'http_503',
          attempts: 2,
          duration_ms: expect.any(Number),
        },
      },
      {
        level: 'warn',
        message: 'tool call ended',
        fields: {
          ...call,
          outcome: 'failed',
          code: 'upstream_unavailable',
          dependency_code: 'gift_service_busy',
          duration_ms: expect.any(Number),
        },
      },
    ]);
  });

  it("an operation's transitions carry its operation_id inside the tool call's scope", async () => {
    const server = (await upstreamServer()).on('/orders', json(201, { order_id: 'ord_1' }));
    const commerce = createUpstream({ name: 'commerce', baseUrl: server.url, timeoutMs: 5_000 });
    cleanups.push(() => commerce.close());
    const store = await openSqliteStore({ path: ':memory:' });
    cleanups.push(() => store.close());
    const ledger = new OperationLedger({ store: store.operations });
    const action = {
      name: 'commerce.create_order',
      target: 'POST commerce /orders',
      retryAllowed: true,
      send: async (ctx: { operationId: string; signal: AbortSignal }) =>
        (
          await commerce.post(
            '/orders',
            { sku: 'kite' },
            { idempotencyKey: ctx.operationId, signal: ctx.signal },
          )
        ).body,
    };
    const gw = await gateway({
      tools: () => [
        resilientTool({
          name: 'checkout',
          description: 'Buys.',
          inputSchema: {},
          handler: (_args, ctx) => ledger.execute(action, { sku: 'kite' }, { signal: ctx.signal }),
        }),
      ],
    });
    const mcp = await connectClient(gw.mcpUrl, { 'x-correlation-id': 'corr-log-2' });
    cleanups.push(() => mcp.close());

    const result = await mcp.client.callTool({ name: 'checkout', arguments: {} });
    const operationId = (result.structuredContent as { operation_id: string }).operation_id;
    expect(operationId).toMatch(/^op_/);

    const call = { correlation_id: 'corr-log-2', tool: 'checkout' };
    expect(lines).toEqual([
      { level: 'info', message: 'tool call started', fields: call },
      {
        level: 'info',
        message: 'operation transition',
        fields: {
          ...call,
          operation_id: operationId,
          action: 'commerce.create_order',
          step: 'operation.succeeded',
          from: 'in_flight',
          to: 'succeeded',
          attempts: 1,
          observation: 'response_received',
        },
      },
      {
        level: 'info',
        message: 'tool call ended',
        fields: { ...call, outcome: 'succeeded', operation_id: operationId, duration_ms: expect.any(Number) },
      },
    ]);
    // The upstream sent the tool call's correlation id (from the scope) with the operation's key.
    expect(server.seen[0]!.headers['x-correlation-id']).toBe('corr-log-2');
  });

  it("a job's run: its end with job_id, the enqueuer's correlation_id and tool, and a masked error", async () => {
    const gw = await gateway({
      tools: () => [
        jobTool({
          name: 'analyse',
          description: 'Analyses.',
          inputSchema: { topic: z.string() },
          jobType: 'analysis',
        }),
      ],
      defineJobs: (jobs) =>
        jobs.defineJob(
          'analysis',
          async () => {
            new Log().info({ step: 'fetch' }, 'analysis step');
            throw new Error(`provider said: Authorization: Bearer ${BEARER} was refused`);
          },
          { maxAttempts: 1 },
        ),
    });
    const mcp = await connectClient(gw.mcpUrl, { 'x-correlation-id': 'corr-log-3' });
    cleanups.push(() => mcp.close());

    const result = await mcp.client.callTool({ name: 'analyse', arguments: { topic: 'kites' } });
    const jobId = (result.structuredContent as { job_id: string }).job_id;
    await vi.waitFor(() => expect(lines.map((l) => l.message)).toContain('job run ended'));

    const run = { job_id: jobId, job_type: 'analysis', correlation_id: 'corr-log-3', tool: 'analyse' };
    expect(lines.find((l) => l.message === 'tool call ended')).toEqual({
      level: 'info',
      message: 'tool call ended',
      fields: {
        correlation_id: 'corr-log-3',
        tool: 'analyse',
        outcome: 'succeeded',
        job_id: jobId,
        duration_ms: expect.any(Number),
      },
    });
    expect(lines.find((l) => l.message === 'analysis step')).toEqual({
      level: 'info',
      message: 'analysis step',
      fields: { ...run, step: 'fetch' },
    });
    expect(lines.find((l) => l.message === 'job run ended')).toEqual({
      level: 'warn',
      message: 'job run ended',
      fields: {
        ...run,
        attempt: 1,
        outcome: 'failed',
        duration_ms: expect.any(Number),
        // The code the job's stored error has: a plain Error from the handler is the handler's failure.
        code: 'handler_failed',
        err: {
          type: 'Error',
          message: 'provider said: Authorization: Bearer [redacted] was refused',
          stack: expect.stringContaining('Bearer [redacted]'),
        },
      },
    });
    expect(JSON.stringify(lines)).not.toContain(BEARER);
  });

  it('a logger that throws breaks nothing; a component given its own logger does not use the process one', async () => {
    installed.dispose();
    installed = setLogger({
      info: () => {
        throw new Error('disk full');
      },
      warn: () => undefined,
      error: () => undefined,
    });
    expect(() => new Log().info({}, 'line')).not.toThrow();

    const own: Line[] = [];
    const log = new Log(fakeLogger(own));
    LogContext.run({ correlation_id: 'c1', tool: 't1' }, () =>
      LogContext.run({ operation_id: 'op1', tool: undefined }, () => log.info({ extra: 1 }, 'nested')),
    );
    expect(own).toEqual([
      {
        level: 'info',
        message: 'nested',
        fields: { correlation_id: 'c1', tool: 't1', operation_id: 'op1', extra: 1 },
      },
    ]);
    expect(lines).toEqual([]);
  });
});

describe("the server's pino", () => {
  let store: Store;
  let app: FastifyInstance;
  let output: string;

  beforeEach(async () => {
    output = '';
    store = await openSqliteStore({ path: ':memory:' });
    const jobs = createJobs({ store });
    const webhooks = createWebhookIngress({
      store,
      sources: [
        defineWebhookSource({ name: 'shop', verifier: stripeVerifier({ secrets: ['whsec_test_secret'] }) }),
      ],
      admin: false,
    });
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        output += chunk.toString('utf8');
        done();
      },
    });
    app = createServer({
      jobs,
      store,
      logger: { level: 'info', stream },
      routes: [
        webhooks.routes,
        (child) => {
          child.post('/echo', async (request) => {
            // A careless route that logs every header and a config object.
            request.log.info(
              { headers: request.headers, config: { apiKey: BEARER, url: 'https://x' } },
              'echo',
            );
            return { ok: true };
          });
        },
      ],
    });
    await app.ready();
    const installed = setLogger(app.log);
    cleanups.push(async () => {
      installed.dispose();
      await app.close();
      await store.close();
    });
  });

  function lines(): Record<string, unknown>[] {
    return output
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  const secretHeaders = {
    authorization: `Bearer ${BEARER}`,
    cookie: COOKIE,
    'stripe-signature': SIGNATURE,
    'x-api-key': BEARER,
  };

  it('redacts credential headers and fields, and never prints a token, a cookie or a signature', async () => {
    await app.inject({ method: 'POST', url: '/echo', headers: secretHeaders, payload: { a: 1 } });
    const rejected = await app.inject({
      method: 'POST',
      url: '/webhooks/shop',
      headers: { ...secretHeaders, 'content-type': 'application/json' },
      payload: '{"id":"evt_1","type":"order.paid"}',
    });
    expect(rejected.statusCode).toBe(401);

    const echo = lines().find((l) => l['msg'] === 'echo')!;
    expect(echo['headers']).toMatchObject({
      authorization: '[redacted]',
      cookie: '[redacted]',
      'stripe-signature': '[redacted]',
      'x-api-key': '[redacted]',
    });
    expect(echo['config']).toEqual({ apiKey: '[redacted]', url: 'https://x' });
    const rejection = lines().find((l) => l['msg'] === 'webhook delivery rejected')!;
    expect(rejection).toMatchObject({ level: 40, source: 'shop', code: 'invalid_signature', status: 401 });
    for (const secret of [BEARER, COOKIE, 'c0ffee', SIGNATURE, SIGNATURE.slice(16)]) {
      expect(output).not.toContain(secret);
    }
  });

  it('every line written inside a LogContext carries its fields, through the facade or app.log directly', () => {
    const fields = { correlation_id: 'corr-9', tool: 'suggest', operation_id: 'op_9', job_id: 'job_9' };
    LogContext.run(fields, () => {
      app.log.info({ n: 1 }, 'direct');
      new Log().warn({ n: 2 }, 'facade');
    });
    app.log.info({ n: 3 }, 'outside');
    const [direct, facade, outside] = ['direct', 'facade', 'outside'].map((m) =>
      lines().find((l) => l['msg'] === m)!,
    );
    expect(direct).toMatchObject({ ...fields, n: 1, level: 30 });
    expect(facade).toMatchObject({ ...fields, n: 2, level: 40 });
    expect(outside).toMatchObject({ n: 3 });
    expect(Object.keys(outside!).filter((k) => k in fields)).toEqual([]);
  });
});
