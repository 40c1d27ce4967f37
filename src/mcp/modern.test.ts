import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { jobTool } from './job-tools.js';
import { connectClient, gate, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * The MCP 2026-07-28 revision on `/mcp` (stateless, through the SDK's v2 line) next to the 2025-11-25
 * sessions of the same gateway: the SDK v2 client pinned to 2026-07-28 and the v1 client, over real HTTP.
 */

let gw: Gateway;
const v1Clients: TestClient[] = [];
const modernClients: ModernClient[] = [];
let release = gate();

afterEach(async () => {
  release.open();
  for (const client of modernClients.splice(0)) await client.close().catch(() => undefined);
  for (const tc of v1Clients.splice(0)) await tc.close().catch(() => undefined);
  await gw.close();
});

async function start(): Promise<void> {
  release = gate();
  gw = await startGateway({
    tools: () => [
      resilientTool({
        name: 'suggest',
        description: 'Suggests a gift.',
        inputSchema: z.object({ recipient: z.string() }),
        handler: ({ recipient }) => Promise.resolve({ gift: `scarf for ${recipient}` }),
      }),
      resilientTool({
        name: 'count',
        description: 'Counts to two, reporting each step.',
        inputSchema: {},
        handler: async (_args, ctx) => {
          await ctx.progress(1, 2, 'one');
          await ctx.progress(2, 2, 'two');
          return { counted: 2 };
        },
      }),
      resilientTool({
        name: 'read_secret',
        description: 'Tells the secret.',
        inputSchema: {},
        scopes: ['secrets:read'],
        handler: () => Promise.resolve('the secret is 42'),
      }),
      jobTool({
        name: 'quick_analysis',
        description: 'Analyses gift ideas in two steps.',
        inputSchema: {},
        jobType: 'quick',
      }),
      jobTool({
        name: 'deep_analysis',
        description: 'Analyses gift ideas in the background.',
        inputSchema: { recipient: z.string() },
        jobType: 'analysis',
      }),
    ],
    defineJobs: (jobs) => {
      jobs.defineJob('quick', async ({ progress }) => {
        await progress(1, 2, 'reading');
        await progress(2, 2, 'ranking');
        return { gifts: ['mug'] };
      });
      jobs.defineJob('analysis', async ({ signal }) => {
        await Promise.race([
          release.promise,
          new Promise((resolve) => signal.addEventListener('abort', resolve)),
        ]);
        return { gifts: ['scarf'] };
      });
    },
  });
}

async function modern(caller: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'mcp-test-v2', version: '0.0.1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  modernClients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as(caller) } }),
  );
  return client;
}

async function v1(caller: string): Promise<TestClient> {
  const tc = await connectClient(gw.mcpUrl, as(caller));
  v1Clients.push(tc);
  return tc;
}

const post = (caller: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(gw.mcpUrl, {
    method: 'POST',
    headers: {
      ...as(caller),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });

const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('MCP 2026-07-28 on /mcp, next to the 2025-11-25 sessions', () => {
  it('the v2 client on 2026-07-28 and the v1 client on 2025-11-25 call the same gateway’s tools', async () => {
    await start();
    const ada = await modern('ada');
    expect(ada.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await ada.listTools()).tools.map((t) => t.name)).toEqual([
      'suggest',
      'count',
      'read_secret',
      'quick_analysis',
      'deep_analysis',
      'get_job_status',
      'cancel_job',
      'respond_to_job',
    ]);
    const suggested = await ada.callTool({ name: 'suggest', arguments: { recipient: 'mum' } });
    expect(suggested.structuredContent).toEqual({ gift: 'scarf for mum' });
    expect(suggested.isError).toBeUndefined();

    const old = await v1('ada');
    const viaV1 = await old.client.callTool({ name: 'suggest', arguments: { recipient: 'dad' } });
    expect(viaV1.structuredContent).toEqual({ gift: 'scarf for dad' });
    // 2026-07-28 requests open no session.
    expect(gw.routes.server.sessionCount).toBe(1);
  });

  it('a tool’s progress reaches the caller on the request’s own stream', async () => {
    await start();
    const ada = await modern('ada');
    const seen: unknown[] = [];
    const counted = await ada.callTool(
      { name: 'count', arguments: {} },
      { onprogress: (progress) => seen.push(progress) },
    );
    expect(counted.structuredContent).toEqual({ counted: 2 });
    expect(seen).toEqual([
      { progress: 1, total: 2, message: 'one' },
      { progress: 2, total: 2, message: 'two' },
    ]);
  });

  it('a job tool called with a progress token forwards the job’s progress and answers with its result', async () => {
    await start();
    const ada = await modern('ada');
    const seen: unknown[] = [];
    const answered = await ada.callTool(
      { name: 'quick_analysis', arguments: {} },
      { onprogress: (progress) => seen.push(progress) },
    );
    expect(answered.structuredContent).toEqual({ gifts: ['mug'] });
    expect(seen).toEqual([
      { progress: 1, total: 2, message: 'reading' },
      { progress: 2, total: 2, message: 'ranking' },
    ]);
  });

  it('a job tool answers with its job handle; the job is the caller’s, and a stranger cannot read it', async () => {
    await start();
    const ada = await modern('ada');
    const handle = await ada.callTool({ name: 'deep_analysis', arguments: { recipient: 'dad' } });
    const jobId = (handle.structuredContent as { job_id: string }).job_id;
    expect((await gw.jobs.get(jobId))!.owner).toBe('key:ada');
    const own = await ada.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
    expect(own.structuredContent).toMatchObject({ job_id: jobId });
    expect(own.isError).toBeUndefined();

    const bob = await modern('bob');
    for (const name of ['get_job_status', 'cancel_job']) {
      const refused = await bob.callTool({ name, arguments: { job_id: jobId } });
      expect(refused).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: `There is no job ${jobId}.` }],
      });
    }
    expect(await gw.jobs.get(jobId)).toMatchObject({ owner: 'key:ada', cancelRequestedAt: null });
  });

  it('answers server/discover and checks the Mcp-Method header; no session id is given', async () => {
    await start();
    const discover = await post(
      'ada',
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
    );
    expect(discover.status).toBe(200);
    expect(discover.headers.get('mcp-session-id')).toBeNull();
    const body = (await discover.json()) as { result: Record<string, unknown> };
    expect(body.result).toEqual({
      supportedVersions: ['2026-07-28'],
      // The tasks extension is declared with job tools (see tasks-ext.test.ts).
      capabilities: {
        tools: { listChanged: false },
        logging: {},
        extensions: { 'io.modelcontextprotocol/tasks': {} },
      },
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'breakwater-test', version: '0.0.1' } },
    });

    const mismatch = await post(
      'ada',
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
    );
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as { error: { code: number } }).error.code).toBe(-32020);
  });

  it('after close, a 2026-07-28 request gets 503, as a session’s does', async () => {
    await start();
    await gw.routes.server.close();
    const response = await post(
      'ada',
      { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: envelope } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    );
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: unknown }).error).toEqual({
      code: -32000,
      message: 'The server is shutting down; reconnect shortly.',
    });
  });

  it('an unknown tool is a JSON-RPC invalid-params error, as on the 2025 path', async () => {
    await start();
    const response = await post(
      'ada',
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'nope', arguments: {}, _meta: envelope },
      },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'nope' },
    );
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({
      code: -32602,
      message: 'Unknown tool: nope',
    });
  });

  it('a tool whose scope the caller lacks is refused before the SDK, as on the 2025 path: 403, -32001', async () => {
    await start();
    const refused = await post(
      'ada',
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'read_secret', arguments: {}, _meta: envelope },
      },
      {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'read_secret',
      },
    );
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32001,
        message: 'The tool read_secret needs the scope secrets:read, which the credential does not hold.',
        data: { reason: 'insufficient_scope' },
      },
      id: 4,
    });
  });
});
