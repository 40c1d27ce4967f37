/**
 * The wait a job's failure carried, as every reader tells it (docs/jobs.md#what-readers-are-told): the real
 * gateway (`startGateway`) on a FakeClock, a real dependency over a real socket behind an upstream with a
 * breaker, and the official MCP SDK client. The job first meets the breaker its dependency opened (20 s
 * left), waits it out, then gets a 503 with `Retry-After: 30` on its last attempt and ends in the dead letter.
 * `GET /jobs/:id`, the SSE `job.failed` event, MCP `get_job_status`, `tasks/get` and `tasks/result` each say
 * exactly what is left of the wait at the time they are read. On SQLite and, when
 * BREAKWATER_TEST_DATABASE_URL is set, on PostgreSQL.
 */
import { createServer, type Server } from 'node:http';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { defineApp } from '../../src/gateway/app.js';
import { FakeClock } from '../../src/core/index.js';
import { jobTool } from '../../src/mcp/index.js';
import { constantBackoff } from '../../src/policy/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { createUpstream, type Upstream } from '../../src/upstream/index.js';
import { connect, getJson, openEvents, useCleanups, type McpClient } from '../e2e/support.js';
import { eventually } from '../support/eventually.js';
import { tempDb } from '../support/cleanups.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';

const defer = useCleanups();

/** A whole second, so ISO times and `Retry-After` seconds line up exactly. */
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

/** The report service: answers every request with the status and headers set last. */
interface ReportService {
  url: string;
  answer: { status: number; headers: Record<string, string> };
}

async function reportService(): Promise<ReportService> {
  const service = { url: '', answer: { status: 200, headers: {} as Record<string, string> } };
  const server: Server = createServer((req, res) => {
    req.resume();
    const { status, headers } = service.answer;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(status === 200 ? { rows: 3 } : { detail: `answered ${status}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  service.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return service;
}

interface Setup {
  clock: FakeClock;
  gw: Gateway;
  mcp: McpClient;
  service: ReportService;
  upstream: Upstream;
}

/** The gateway over `store` with a `build_report` job tool: 2 attempts, a 1 s backoff. */
async function setup(clock: FakeClock, store: Store): Promise<Setup> {
  const service = await reportService();
  let upstream!: Upstream;
  const app = defineApp({
    setup({ jobs }) {
      upstream = createUpstream({
        name: 'report',
        baseUrl: service.url,
        timeoutMs: 2_000,
        retry: false,
        breaker: { consecutiveFailures: 1, openMs: 20_000 },
        clock,
      });
      jobs.defineJob('report.build', async () => (await upstream.get<{ rows: number }>('/data')).body, {
        maxAttempts: 2,
        backoff: constantBackoff(1_000),
      });
      return {
        name: 'reports',
        version: '1.0.0',
        tools: [
          jobTool({
            name: 'build_report',
            description: 'Builds the report.',
            inputSchema: {},
            jobType: 'report.build',
          }),
        ],
        upstreams: [upstream],
      };
    },
  });
  const gw = await startGateway({ app, store, port: 0, clock, log: () => undefined, graceMs: 100 });
  defer(() => gw.close());
  return { clock, gw, mcp: await connect(defer, gw.mcpUrl), service, upstream };
}

/** `message` with its "try again shortly" said as the wait left. */
const withWait = (message: string, seconds: number) =>
  message.replace('try again shortly', `try again in about ${seconds} seconds`);

async function runScenario(s: Setup): Promise<void> {
  const { clock, gw, mcp, service } = s;
  // The dependency fails once and its breaker opens at T0 for 20 s.
  service.answer = { status: 500, headers: {} };
  await expect(s.upstream.get('/data')).rejects.toMatchObject({ code: 'upstream_unavailable' });

  const created = await mcp.client.request(
    { method: 'tools/call', params: { name: 'build_report', arguments: {} } },
    CreateTaskResultSchema,
    { task: {} },
  );
  const id = created.task.taskId;
  const status = async () => (await mcp.call('get_job_status', { job_id: id })).structuredContent;
  const view = async () => (await getJson(`${gw.url}/jobs/${id}`)).body;

  // Attempt 1 meets the open breaker: the retry is set for the end of its open time, not T0 + 1 s.
  await eventually(clock, async () => {
    expect(await gw.jobs.get(id)).toMatchObject({ status: 'pending', attempts: 1, runAt: T0 + 20_000 });
  });
  const first = (await gw.jobs.get(id))!.error!;
  expect(first).toMatchObject({ code: 'circuit_open', userFacing: true, retryAt: T0 + 20_000 });
  expect(first.message).toContain('try again shortly');

  clock.tick(5_000);
  expect((await mcp.client.experimental.tasks.getTask(id)).statusMessage).toBe(
    'Retrying after a failure (attempt 1 of 2 failed); the next attempt starts in about 15 seconds.',
  );
  expect((await view()).error).toEqual({
    code: 'circuit_open',
    message: withWait(first.message, 15),
    kind: 'transient',
    userFacing: true,
    dependencyCode: first.dependencyCode,
    retry_at: iso(T0 + 20_000),
    retry_after_ms: 15_000,
  });
  expect((await status()).last_error).toEqual({
    code: first.dependencyCode,
    category: 'circuit_open',
    message: withWait(first.message, 15),
    retryable: true,
    retry_after_ms: 15_000,
    outcome: 'failed',
  });

  // Attempt 2 at exactly T0 + 20 s: the breaker's trial gets a 503 with Retry-After: 30, the last attempt.
  service.answer = { status: 503, headers: { 'retry-after': '30' } };
  await clock.tickAsync(14_999);
  expect(await view()).toMatchObject({ status: 'pending', attempts: 1, error: { retry_after_ms: 1 } });
  await clock.tickAsync(1);
  await eventually(clock, async () => {
    expect(await gw.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 2, finishedAt: T0 + 20_000 });
  });
  const last = (await gw.jobs.get(id))!.error!;
  expect(last).toMatchObject({ code: 'upstream_unavailable', userFacing: true, retryAt: T0 + 50_000 });
  expect(last.message).toContain('try again shortly');

  clock.tick(12_345); // 17 655 ms of the 30 s are left
  const told = withWait(last.message, 18);
  expect((await view()).error).toEqual({
    code: 'upstream_unavailable',
    message: told,
    kind: 'transient',
    userFacing: true,
    dependencyCode: last.dependencyCode,
    retry_at: iso(T0 + 50_000),
    retry_after_ms: 17_655,
  });

  const toolError = {
    code: last.dependencyCode,
    category: 'upstream_unavailable',
    message: told,
    retryable: true,
    retry_after_ms: 17_655,
    outcome: 'failed',
  };
  expect((await status()).error).toEqual(toolError);
  expect((await mcp.client.experimental.tasks.getTask(id)).statusMessage).toBe(told);
  const result = await mcp.client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
  expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: told }] });
  expect(result.structuredContent).toEqual({ error: toolError });

  // The event stream replays the stored events, each error told as of the moment it is sent.
  const frames = await (await openEvents(defer, `${gw.url}/jobs/${id}/events`)).rest();
  const payloads = Object.fromEntries(frames.map((f) => [f.event, JSON.parse(f.data!).payload]));
  expect(frames.map((f) => f.event)).toEqual(['job.started', 'job.retrying', 'job.started', 'job.failed']);
  expect(payloads['job.retrying']).toEqual({
    error: errorViewOf(first, T0 + 20_000, 0),
    nextAttempt: 2,
    runAt: T0 + 20_000,
  });
  expect(payloads['job.failed']).toEqual({ error: (await view()).error, attempts: 2 });
  expect(payloads['job.failed'].error.retry_after_ms).toBe(17_655);

  // Once the wait is over: 0, and the stored sentence as it is.
  clock.tick(17_655);
  expect((await view()).error).toMatchObject({ message: last.message, retry_after_ms: 0 });
  expect((await status()).error).toMatchObject({ message: last.message, retry_after_ms: 0 });
}

/** The error view fields of a stored error whose wait ended at `retryAt`, with `leftMs` left. */
function errorViewOf(
  error: { code: string; message: string; kind: string; userFacing?: boolean; dependencyCode?: string },
  retryAt: number,
  leftMs: number,
) {
  return {
    code: error.code,
    message: error.message,
    kind: error.kind,
    userFacing: error.userFacing,
    dependencyCode: error.dependencyCode,
    retry_at: iso(retryAt),
    retry_after_ms: leftMs,
  };
}

describe('a carried wait as the readers tell it: SQLite', () => {
  it('GET /jobs/:id, SSE, get_job_status, tasks/get and tasks/result give the exact wait left', async () => {
    const clock = new FakeClock(T0);
    const store = await openStore({ url: `sqlite:${tempDb(defer, 'breakwater-wait')}`, clock });
    defer(() => store.close());
    await runScenario(await setup(clock, store));
  });
});

describePostgres('carried wait readers')('a carried wait as the readers tell it: PostgreSQL', () => {
  const schemas = testSchemas('bw_wait');

  it('GET /jobs/:id, SSE, get_job_status, tasks/get and tasks/result give the exact wait left', async () => {
    const clock = new FakeClock(T0);
    const schema = await schemas.create();
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, clock, schema });
    defer(() => store.close());
    await runScenario(await setup(clock, store));
  });
});
