/**
 * Scaling out the MCP front (docs/deploy.md#scaling-out-the-mcp-front): three GiftGenius gateways over one
 * PostgreSQL database behind a round-robin proxy that sends each HTTP request to the next gateway. On
 * 2026-07-28 (stateless) one client's calls land on all three and every answer is exact: a job started
 * through one gateway is read and cancelled through the others. A 2025-era session is held by the gateway
 * that opened it, so the same proxy breaks it; affinity on `Mcp-Session-Id` (what an operator configures for
 * those clients) makes it work. A task of the tasks extension (`io.modelcontextprotocol/tasks`) is read on
 * every gateway, and its result still arrives when the gateway that created it is closed mid-task.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect, it } from 'vitest';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { createApiKeys } from '../../src/http/keys/index.js';
import { modernRpc } from '../../src/mcp/test-support.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { describePostgres, TEST_DATABASE_URL, testSchemas } from '../support/postgres.js';
import { FAST_SETTINGS, startBackends, until, useCleanups } from './support.js';

const defer = useCleanups();

/** One forwarded request: which gateway answered it, and the JSON-RPC method it carried (`Mcp-Method`). */
interface Hop {
  gateway: number;
  method: string;
}

interface RoundRobin {
  url: string;
  hops: Hop[];
}

/**
 * A round-robin HTTP proxy over `targets`: each request goes to the next target, its body and answer streamed
 * through. With `affinity`, a request carrying an `Mcp-Session-Id` goes to the target whose answer issued
 * that id (a proxy's session affinity), and only requests without one rotate.
 */
async function roundRobin(targets: readonly string[], affinity = false): Promise<RoundRobin> {
  const hops: Hop[] = [];
  const bySession = new Map<string, number>();
  const sockets = new Set<Socket>();
  let next = 0;
  const server: Server = createServer((req, res) => {
    const session = req.headers['mcp-session-id'];
    const pinned = affinity && typeof session === 'string' ? bySession.get(session) : undefined;
    const gateway = pinned ?? next++ % targets.length;
    hops.push({ gateway, method: String(req.headers['mcp-method'] ?? req.method) });
    const to = new URL(targets[gateway]!);
    const forwarded = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const issued = answer.headers['mcp-session-id'];
        if (typeof issued === 'string') bySession.set(issued, gateway);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, hops };
}

const schemas = testSchemas('bw_rr');

/** Three gateways, each with its own store connection on one fresh schema, and a key for `ada`. */
async function threeGateways(): Promise<{ gateways: Gateway[]; key: string }> {
  const schema = await schemas.create();
  const backends = await startBackends(defer);
  // Steps of 1 s: the analysis is still running when the test cancels it, however loaded the machine.
  const app = createGiftGeniusApp({ ...FAST_SETTINGS, stepMs: 1_000, ...backends.urls });
  const gateways: Gateway[] = [];
  let key = '';
  for (let i = 0; i < 3; i++) {
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
    defer(() => store.close());
    if (i === 0) key = (await createApiKeys({ store }).create({ name: 'ada', scopes: ['mcp', 'jobs'] })).key;
    // A short lease: a worker hears a cancel made on another gateway at its next heartbeat (a third of it).
    const gateway = await startGateway({
      app,
      store,
      port: 0,
      env: {},
      log: () => undefined,
      leaseMs: 1_500,
      // A closed gateway gives a running job back at once (another gateway's worker takes it over).
      graceMs: 100,
    });
    let closed = false;
    const close = gateway.close.bind(gateway);
    gateway.close = async () => {
      if (closed) return;
      closed = true;
      await close();
    };
    defer(() => gateway.close());
    gateways.push(gateway);
  }
  return { gateways, key };
}

const request = { interests: ['coffee', 'travel'], budget_usd: 40, recipient: 'Sam', limit: 3 };

describePostgres('three GiftGenius gateways behind round robin')('three gateways behind round robin', () => {
  it('a 2026-07-28 client is served by all three in turn, its job read and cancelled on other gateways', async () => {
    const { gateways, key } = await threeGateways();
    const proxy = await roundRobin(gateways.map((gateway) => gateway.url));
    const client = new ModernClient(
      { name: 'round-robin-e2e', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new ModernTransport(new URL(`${proxy.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    defer(() => client.close());

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('start_deep_analysis');
    const gifts = await client.callTool({ name: 'suggest_gifts', arguments: request });
    expect(gifts.structuredContent).toEqual({ gifts: recommendGifts(loadCatalog(), request) });

    const started = await client.callTool({ name: 'start_deep_analysis', arguments: request });
    expect(started.isError).toBeUndefined();
    const jobId = (started.structuredContent as { job_id: string }).job_id;
    const startedOn = proxy.hops.findLast((hop) => hop.method === 'tools/call')!.gateway;

    // Every status read lands on the next gateway: each one answers from the shared store.
    const readers = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const status = await client.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
      expect(status.isError).toBeUndefined();
      expect(status.structuredContent).toMatchObject({ job_id: jobId });
      readers.add(proxy.hops.at(-1)!.gateway);
    }
    expect([...readers].sort()).toEqual([0, 1, 2]);

    const cancel = await client.callTool({ name: 'cancel_job', arguments: { job_id: jobId } });
    const cancelledOn = proxy.hops.at(-1)!.gateway;
    expect(cancelledOn).not.toBe(startedOn);
    expect(cancel.isError).toBeUndefined();
    expect(cancel.structuredContent).toMatchObject({ job_id: jobId, cancel_requested: true });
    let ended = '';
    await until(
      async () => {
        const status = await client.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
        ended = (status.structuredContent as { status: string }).status;
        return ended === 'canceled' || ended === 'completed' || ended === 'failed';
      },
      'the job to end',
      10_000,
    );
    expect(ended).toBe('canceled');

    const served = new Set(proxy.hops.map((hop) => hop.gateway));
    expect([...served].sort()).toEqual([0, 1, 2]);
  }, 30_000);

  it('a task is created on one gateway, read on the others, and delivered after its gateway closes mid-task', async () => {
    const { gateways, key } = await threeGateways();
    const auth = { authorization: `Bearer ${key}` };
    const proxy = await roundRobin(gateways.map((gateway) => gateway.url));
    const rpc = (url: string, method: string, params: Record<string, unknown>) =>
      modernRpc(`${url}/mcp`, auth, method, params);

    const created = await rpc(proxy.url, 'tools/call', { name: 'start_deep_analysis', arguments: request });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: null });
    const taskId = created.result!['taskId'] as string;
    const createdOn = proxy.hops.at(-1)!.gateway;

    const readers = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const got = await rpc(proxy.url, 'tasks/get', { taskId });
      expect(got.result).toMatchObject({ resultType: 'complete', taskId, status: 'working' });
      readers.add(proxy.hops.at(-1)!.gateway);
    }
    expect([...readers].sort()).toEqual([0, 1, 2]);

    // The gateway that created the task goes away while its job runs; the other two carry on.
    await gateways[createdOn]!.close();
    const rest = await roundRobin(gateways.filter((_, i) => i !== createdOn).map((gateway) => gateway.url));
    let task: Record<string, unknown> = {};
    await until(
      async () => {
        task = (await rpc(rest.url, 'tasks/get', { taskId })).result!;
        return task['status'] !== 'working';
      },
      'the task to end',
      20_000,
    );
    expect(task['status']).toBe('completed');
    const result = task['result'] as { structuredContent: { gifts: unknown[] }; isError?: boolean };
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent.gifts.length).toBeGreaterThan(0);
    expect(new Set(rest.hops.map((hop) => hop.gateway)).size).toBe(2);
  }, 40_000);

  it('a 2025-11-25 session breaks under plain round robin and works with Mcp-Session-Id affinity', async () => {
    const { gateways, key } = await threeGateways();
    const urls = gateways.map((gateway) => gateway.url);
    const connect = async (proxyUrl: string): Promise<LegacyClient> => {
      const client = new LegacyClient({ name: 'round-robin-e2e-v1', version: '1.0.0' });
      await client.connect(
        new LegacyTransport(new URL(`${proxyUrl}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${key}` } },
        }),
      );
      defer(() => client.close());
      return client;
    };

    // `initialize` opens the session on one gateway; the next request goes to another, which has none.
    const plain = await roundRobin(urls);
    await expect(connect(plain.url).then((client) => client.listTools())).rejects.toThrow(/404|[Ss]ession/);

    const sticky = await roundRobin(urls, true);
    const client = await connect(sticky.url);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('suggest_gifts');
    const gifts = await client.callTool({ name: 'suggest_gifts', arguments: request });
    expect(gifts.structuredContent).toEqual({ gifts: recommendGifts(loadCatalog(), request) });
    expect(new Set(sticky.hops.map((hop) => hop.gateway)).size).toBe(1);
  });
});
