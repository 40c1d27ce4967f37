import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { connect as netConnect } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock } from '../core/index.js';
import { createJobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { jobTool } from './job-tools.js';
import { mcpRoutes } from './routes.js';
import { createMcpServer, type McpServerOptions } from './server.js';
import { connectClient, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';
import { optionsErrorOf } from '../../test/support/options.js';

const echo = resilientTool({
  name: 'echo',
  description: 'Echoes its text.',
  inputSchema: z.object({ text: z.string() }),
  handler: ({ text }) => ({ text }),
});

let app: FastifyInstance | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const tc of clients.splice(0)) await tc.close().catch(() => undefined);
  await app?.close();
  app = undefined;
});

async function serve(
  options: Partial<McpServerOptions> = {},
): Promise<{ url: URL; server: ReturnType<typeof createMcpServer> }> {
  const server = createMcpServer({ name: 'http-test', version: '1.0.0', tools: [echo], ...options });
  app = Fastify();
  mcpRoutes(server)(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), server };
}

async function connect(url: URL): Promise<TestClient> {
  const tc = await connectClient(url);
  clients.push(tc);
  return tc;
}

const ACCEPT = 'application/json, text/event-stream';
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

async function post(url: URL, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
    body,
  });
}

/** Opens a session with a bare initialize (no standalone stream, unlike the SDK client). */
async function rawSession(url: URL): Promise<string> {
  const response = await post(url, JSON.stringify(INITIALIZE));
  expect(response.status).toBe(200);
  await response.text();
  return response.headers.get('mcp-session-id')!;
}

const rpcError = (code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id: null });

describe('the MCP endpoint over HTTP', () => {
  it('answers a request without a session that is not an initialize with 400', async () => {
    const { url } = await serve();
    const response = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(rpcError(-32000, 'Bad Request: No valid session ID provided'));
    const get = await fetch(url, { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(400);
    await get.text();
  });

  it('answers an unknown session with 404, so the client starts a new one', async () => {
    const { url } = await serve();
    const response = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), {
      'mcp-session-id': 'no-such-session',
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual(rpcError(-32001, 'Session not found'));
  });

  it('answers a body that is not JSON with a JSON-RPC parse error, and a non-JSON media type with 415', async () => {
    const { url } = await serve();
    const bad = await post(url, '{"jsonrpc": ');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual(rpcError(-32700, 'Parse error: Invalid JSON'));
    const text = await post(url, '<hello/>', { 'content-type': 'application/xml' });
    expect(text.status).toBe(415);
    expect(await text.json()).toEqual(
      rpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json'),
    );
  });

  it('answers a body that does not arrive within the request timeout with 408, and closes the connection', async () => {
    const server = createMcpServer({ name: 'http-test', version: '1.0.0', tools: [echo] });
    app = Fastify({ handlerTimeout: 100 });
    mcpRoutes(server)(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const socket = netConnect({ host: '127.0.0.1', port });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: ${ACCEPT}\r\n` +
        'Content-Length: 200\r\n\r\n{"jsonrpc":',
    );
    await closed;
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(received.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))).toEqual(
      rpcError(-32000, 'Request Timeout: the request body did not arrive in time'),
    );
  });

  it('keeps one session per client and closes it on DELETE', async () => {
    const { url, server } = await serve();
    const a = await connect(url);
    const b = await connect(url);
    expect(server.sessionCount).toBe(2);
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    expect((await a.client.callTool({ name: 'echo', arguments: { text: 'a' } })).structuredContent).toEqual({
      text: 'a',
    });
    const id = a.transport.sessionId!;
    await a.transport.terminateSession();
    expect(server.sessionCount).toBe(1);
    const after = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }), {
      'mcp-session-id': id,
    });
    expect(after.status).toBe(404);
    await after.text();
  });

  it('at maxSessions, an initialize closes the least recently used idle session; none idle: 503 and Retry-After', async () => {
    const { url, server } = await serve({ maxSessions: 1 });
    const idle = await rawSession(url);
    const fresh = await rawSession(url);
    expect(server.sessionCount).toBe(1);
    const gone = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), {
      'mcp-session-id': idle,
    });
    expect(gone.status).toBe(404);
    await gone.text();

    // The one session left has a request open (its standalone SSE stream): nothing can be closed.
    const stream = new AbortController();
    const get = await fetch(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': fresh, 'mcp-protocol-version': '2025-11-25' },
      signal: stream.signal,
    });
    expect(get.status).toBe(200);
    const response = await post(url, JSON.stringify(INITIALIZE));
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toEqual(
      rpcError(-32000, 'Too many open sessions; try again in about 5 seconds.'),
    );
    stream.abort();
  });

  it('closes a session with no request for sessionIdleMs', async () => {
    const clock = new FakeClock();
    const { url, server } = await serve({ clock, sessionIdleMs: 1_000 });
    const id = await rawSession(url);
    expect(server.sessionCount).toBe(1);
    clock.tick(999);
    expect(server.sessionCount).toBe(1);
    clock.tick(1);
    expect(server.sessionCount).toBe(0);
    const response = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), {
      'mcp-session-id': id,
    });
    expect(response.status).toBe(404);
    await response.text();
  });

  it('closes every session when the app closes, open streams included; later requests get 503', async () => {
    const { url, server } = await serve();
    const tc = await connect(url);
    await tc.standaloneStream;
    expect(server.sessionCount).toBe(1);
    await app!.close(); // would wait on the open stream if the preClose hook did not end it
    expect(server.sessionCount).toBe(0);

    // The same (closed) server mounted again: it refuses new sessions.
    app = Fastify();
    mcpRoutes(server)(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const response = await post(new URL(`http://127.0.0.1:${port}/mcp`), JSON.stringify(INITIALIZE));
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual(
      rpcError(-32000, 'The server is shutting down; reconnect shortly.'),
    );
  });

  it('stores stream events in the given event store (resumable streams)', async () => {
    const events = new RecordingEventStore();
    const { url } = await serve({ eventStore: events });
    const tc = await connect(url);
    await tc.client.callTool({ name: 'echo', arguments: { text: 'kept' } });
    const stored = events.messages().filter((m) => 'result' in m) as {
      result: { structuredContent?: unknown };
    }[];
    expect(stored.map((m) => m.result.structuredContent).filter(Boolean)).toEqual([{ text: 'kept' }]);
  });
});

/** A minimal in-memory EventStore (the SDK interface), recording what the transport stores. */
class RecordingEventStore implements EventStore {
  private readonly events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];

  messages(): JSONRPCMessage[] {
    return this.events.map((e) => e.message);
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}:${this.events.length + 1}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const index = this.events.findIndex((e) => e.id === lastEventId);
    const streamId = this.events[index]?.streamId ?? '';
    for (const e of this.events.slice(index + 1)) if (e.streamId === streamId) await send(e.id, e.message);
    return streamId;
  }
}

describe('per-session event stores', () => {
  it('asks the factory for one event store per session, with the session id', async () => {
    const made = new Map<string, RecordingEventStore>();
    const { url } = await serve({
      eventStore: (sessionId) => {
        const store = new RecordingEventStore();
        made.set(sessionId, store);
        return store;
      },
    });
    const a = await connect(url);
    const b = await connect(url);
    expect([...made.keys()].sort()).toEqual([a.transport.sessionId, b.transport.sessionId].sort());
    await a.client.callTool({ name: 'echo', arguments: { text: 'for a' } });
    const results = (store: RecordingEventStore) =>
      store
        .messages()
        .map((m) =>
          'result' in m ? (m.result as { structuredContent?: unknown }).structuredContent : undefined,
        )
        .filter(Boolean);
    expect(results(made.get(a.transport.sessionId!)!)).toEqual([{ text: 'for a' }]);
    expect(results(made.get(b.transport.sessionId!)!)).toEqual([]);
  });

  it('refuses an eventStore that is neither a store nor a function', () => {
    expect(() => createMcpServer({ name: 'n', version: '1', tools: [], eventStore: {} as never })).toThrow(
      'createMcpServer: eventStore must be an EventStore or a function (sessionId) => EventStore, got an object',
    );
  });
});

describe('createMcpServer options', () => {
  const job = jobTool({ name: 'work', description: 'w', inputSchema: {}, jobType: 'w' });

  it('refuses duplicate tool names and things that are not tools', () => {
    expect(() => createMcpServer({ name: 'n', version: '1', tools: [echo, echo] })).toThrow(
      new RangeError("createMcpServer: tools must be tools with unique names, got 'echo'"),
    );
    expect(() => createMcpServer({ name: 'n', version: '1', tools: [{} as never] })).toThrow(RangeError);
  });

  it('needs jobs, store and an http(s) publicUrl when there are job tools', async () => {
    expect(() => createMcpServer({ name: 'n', version: '1', tools: [job] })).toThrow(
      'createMcpServer: jobs must be a Jobs runtime (there are job tools), got undefined',
    );
    const store = await openSqliteStore({ path: ':memory:' });
    const jobs = createJobs({ store });
    try {
      expect(() => createMcpServer({ name: 'n', version: '1', tools: [job], jobs })).toThrow(
        'createMcpServer: store must be the JobStore of jobs, got undefined',
      );
      expect(() =>
        createMcpServer({ name: 'n', version: '1', tools: [job], jobs, store, publicUrl: 'ftp://x' }),
      ).toThrow("createMcpServer: publicUrl must be an absolute http(s) URL, got 'ftp://x'");
      const server = createMcpServer({
        name: 'n',
        version: '1',
        tools: [job],
        jobs,
        store,
        publicUrl: 'http://gw',
      });
      expect(server.tools.map((t) => t.name)).toEqual([
        'work',
        'get_job_status',
        'cancel_job',
        'respond_to_job',
      ]);
      expect(server.taskStore).toBeDefined();
      const bare = createMcpServer({
        name: 'n',
        version: '1',
        tools: [job],
        jobs,
        store,
        publicUrl: 'http://gw',
        jobStatusTools: false,
      });
      expect(bare.tools.map((t) => t.name)).toEqual(['work']);
    } finally {
      await store.close();
    }
  });

  it('checks numbers: maxSessions, sessionIdleMs, taskPageSize', () => {
    const base = { name: 'n', version: '1', tools: [] };
    expect(() => createMcpServer({ ...base, maxSessions: 0 })).toThrow(
      'createMcpServer: maxSessions must be an integer >= 1, got 0',
    );
    expect(() => createMcpServer({ ...base, sessionIdleMs: -1 })).toThrow(RangeError);
    expect(() => createMcpServer({ ...base, taskPageSize: 1001 })).toThrow(
      'createMcpServer: taskPageSize must be an integer in [1, 1000], got 1001',
    );
    expect(() => mcpRoutes(base, { bodyLimitBytes: 0 })).toThrow(RangeError);
  });

  it('reports every bad option at once in one OptionsError', () => {
    const e = optionsErrorOf(() =>
      createMcpServer({
        name: '',
        version: '1',
        tools: [job, echo, echo],
        maxSessions: 0,
        taskPageSize: 1001,
        logger: {} as never,
        onError: 'log' as never,
        publicUrl: '/relative',
      }),
    );
    expect([e.code, e.owner, e.problems.map((p) => p.option)]).toEqual([
      'invalid_options',
      'createMcpServer',
      ['name', 'taskPageSize', 'maxSessions', 'logger', 'onError', 'tools', 'jobs', 'store', 'publicUrl'],
    ]);
    expect(e.message).toBe(
      "createMcpServer: name must be a non-empty string, got ''; taskPageSize must be an integer in [1, 1000], " +
        'got 1001; maxSessions must be an integer >= 1, got 0; logger must be a pino-compatible logger with ' +
        "info, warn and error methods, got an object; onError must be a function, got 'log'; tools must be " +
        "tools with unique names, got 'echo'; jobs must be a Jobs runtime (there are job tools), got " +
        'undefined; store must be the JobStore of jobs, got undefined; publicUrl must be an absolute http(s) ' +
        "URL, got '/relative'",
    );
    // A tool of the app may not take the name of a job status tool.
    const clash = resilientTool({ name: 'cancel_job', description: 'd', inputSchema: {}, handler: () => 1 });
    expect(() =>
      createMcpServer({ name: 'n', version: '1', tools: [job, clash], publicUrl: 'http://gw' }),
    ).toThrow("createMcpServer: tools must be tools with unique names, got 'cancel_job'");
    const routes = optionsErrorOf(() =>
      mcpRoutes({ name: 'n', version: '1', tools: [] }, { path: '', bodyLimitBytes: 0 }),
    );
    expect([routes.owner, routes.message]).toEqual([
      'mcpRoutes',
      "mcpRoutes: path must be a non-empty string, got ''; bodyLimitBytes must be an integer >= 1, got 0",
    ]);
  });
});
