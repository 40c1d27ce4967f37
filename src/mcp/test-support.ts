/**
 * Shared test helpers for mcp/ (not a test file itself): a real Fastify app on 127.0.0.1:0 with the MCP
 * routes, a real SQLite job store and jobs runtime, and the SDK's real client over Streamable HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { as, principalFromHeader } from '../../test/support/principals.js';
import { createJobs, type Jobs } from '../jobs/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { JobRecord, JobStatus, JobStore } from '../store/index.js';
import { mcpRoutes, type McpRoutes } from './routes.js';
import type { McpServerOptions } from './server.js';
import type { McpTool } from './tool.js';

/** The `publicUrl` the test gateways announce (job URLs are built on it; nothing is fetched there). */
export const PUBLIC_URL = 'https://gateway.example/';

export interface Gateway {
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  mcpUrl: URL;
  store: JobStore;
  jobs: Jobs;
  routes: McpRoutes;
  /** Store subscriptions open right now (the worker's, job followers', progress bridges'). */
  activeSubscriptions(): number;
  /** Stops the app (closing MCP sessions), the worker and the store. */
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** SQLite file (default `:memory:`). */
  dbPath?: string;
  tools: (jobs: Jobs) => McpTool[];
  /** Defines the job types (before the worker starts). */
  defineJobs?: (jobs: Jobs) => void;
  /** Start the worker (default true). */
  startWorker?: boolean;
  server?: Partial<McpServerOptions>;
  /** Configures the app before the MCP routes are added (a hook, say). */
  configure?: (app: FastifyInstance) => void;
}

/**
 * Starts a gateway: store, jobs (worker started), Fastify with the MCP routes, listening on port 0. The caller
 * of a request is named by its `x-test-principal` header (absent: `local`), standing in for the HTTP edge.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const counted = countingStore(await openSqliteStore({ path: options.dbPath ?? ':memory:' }));
  const store = counted.store;
  // A short poll so a job enqueued by another store handle (the restart test) is seen soon.
  const jobs = createJobs({ store, pollMs: 200, leaseMs: 5_000 });
  options.defineJobs?.(jobs);
  if (options.startWorker ?? true) jobs.start();
  const app = Fastify();
  principalFromHeader(app);
  options.configure?.(app);
  const routes = mcpRoutes({
    name: 'breakwater-test',
    version: '0.0.1',
    tools: options.tools(jobs),
    jobs,
    store,
    publicUrl: PUBLIC_URL,
    ...options.server,
  });
  routes(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    app,
    baseUrl,
    mcpUrl: new URL(`${baseUrl}/mcp`),
    store,
    jobs,
    routes,
    activeSubscriptions: counted.active,
    async close() {
      await app.close();
      await jobs.stop({ graceMs: 0 });
      await store.close();
    },
  };
}

export interface TestClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Resolves once the client's standalone SSE stream (its GET) is open, so server notifications reach it. */
  standaloneStream: Promise<void>;
  close(): Promise<void>;
}

/** Connects the SDK's real client over Streamable HTTP. */
export async function connectClient(url: URL, headers: Record<string, string> = {}): Promise<TestClient> {
  let opened!: () => void;
  const standaloneStream = new Promise<void>((resolve) => (opened = resolve));
  // The client's own fetch, observed: the GET that opens the standalone stream is the signal we wait for.
  const observed: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && response.status === 200) opened();
    return response;
  };
  const transport = new StreamableHTTPClientTransport(url, { fetch: observed, requestInit: { headers } });
  const client = new Client({ name: 'mcp-test', version: '0.0.1' }, { capabilities: {} });
  await client.connect(transport);
  return {
    client,
    transport,
    standaloneStream,
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/**
 * The real store, with its `subscribe` counted: every other call goes straight to it. Lets a test see that
 * a subscription was disposed.
 */
function countingStore(real: JobStore): { store: JobStore; active: () => number } {
  let active = 0;
  const subscribe: JobStore['subscribe'] = (listener) => {
    const subscription = real.subscribe(listener);
    active++;
    let disposed = false;
    return {
      dispose() {
        if (!disposed) active--;
        disposed = true;
        subscription.dispose();
      },
    };
  };
  const store = new Proxy(real, {
    get(target, property, receiver) {
      if (property === 'subscribe') return subscribe;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store, active: () => active };
}

/**
 * Resolves with the job once job `id` is in `status`, following the store's own event push (no polling, no
 * timer); throws when the job ends in another status.
 */
export async function untilJobStatus(jobs: Jobs, id: string, status: JobStatus): Promise<JobRecord> {
  const now = await jobs.get(id);
  if (now?.status === status) return now;
  for await (const _event of jobs.events(id)) {
    const job = await jobs.get(id);
    if (job?.status === status) return job;
  }
  const last = await jobs.get(id);
  if (last?.status === status) return last;
  throw new Error(`job ${id} ended ${String(last?.status)}, never ${status}`);
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'breakwater-mcp-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A promise with its resolve exposed. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The answer of {@link modernRpc}: the HTTP status and the JSON-RPC response. */
export interface RpcAnswer {
  status: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * One 2026-07-28 request as the spec writes it, over raw HTTP: the `_meta` envelope (client capabilities
 * declaring the tasks extension unless `tasks: false`), `MCP-Protocol-Version`, `Mcp-Method` and, for the
 * methods that name something, `Mcp-Name` (the tool name or the task id). For what the SDK v2 client does not
 * send or read (it refuses a `resultType: "task"` answer to `tools/call`).
 */
export async function modernRpc(
  url: URL | string,
  headers: Record<string, string>,
  method: string,
  params: Record<string, unknown> = {},
  options: { tasks?: boolean; id?: number } = {},
): Promise<RpcAnswer> {
  const name = params['taskId'] ?? params['name'];
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      ...headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id ?? 1,
      method,
      params: { ...params, _meta: modernEnvelope(options.tasks ?? true) },
    }),
  });
  const body = (await response.json()) as Omit<RpcAnswer, 'status'>;
  return { status: response.status, result: body.result, error: body.error };
}

/** The per-request `_meta` envelope of 2026-07-28, declaring the tasks extension when `tasks`. */
export function modernEnvelope(tasks: boolean): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
    'io.modelcontextprotocol/clientCapabilities': tasks
      ? { extensions: { 'io.modelcontextprotocol/tasks': {} } }
      : {},
  };
}

/** A `subscriptions/listen` stream read message by message (see {@link openListen}). */
export interface ListenStream {
  status: number;
  /** The next JSON-RPC message, or undefined once the stream has ended. */
  next(): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Opens a 2026-07-28 `subscriptions/listen` for task notifications (`notifications.taskIds`), as SEP-2663
 * writes it, declaring the tasks extension unless `tasks` is false. A JSON answer (an error) is one message.
 */
export async function openListen(
  url: URL | string,
  headers: Record<string, string>,
  id: number,
  /** The task ids to follow, or the whole `notifications` filter (`{ resourceSubscriptions }`, say). */
  taskIds: string[] | Record<string, unknown>,
  tasks = true,
): Promise<ListenStream> {
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      ...headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: {
        notifications: Array.isArray(taskIds) ? { taskIds } : taskIds,
        _meta: modernEnvelope(tasks),
      },
    }),
  });
  const queue: unknown[] = [];
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    queue.push(await response.json());
    return { status: response.status, next: () => Promise.resolve(queue.shift()), close: async () => {} };
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    status: response.status,
    async next() {
      for (;;) {
        if (queue.length > 0) return queue.shift();
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (data !== '') queue.push(JSON.parse(data));
          continue;
        }
        const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (chunk.done) return undefined;
        buffer += chunk.value;
      }
    },
    async close() {
      abort.abort();
      await reader.cancel().catch(() => undefined);
    },
  };
}

/** The `_meta` envelope of {@link mrtrRpc}: 2026-07-28, a client that declares elicitation, sampling, roots. */
const MRTR_ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {}, roots: {} },
};

/** A JSON-RPC answer of {@link mrtrRpc}. */
export interface MrtrAnswer {
  result?: Record<string, unknown> & { requestState?: string; inputRequests?: Record<string, unknown> };
  error?: { code: number; message: string; data?: unknown };
  /** The HTTP status of the answer. */
  status: number;
}

let nextId = 1;

/**
 * One raw 2026-07-28 request over HTTP as `caller` (see `as`) for the multi-round-trip tests: a client that
 * declares elicitation, sampling and roots; `params._meta` overrides the envelope's keys; `Mcp-Name` from the
 * name or URI. Reads a JSON or an SSE answer.
 */
export async function mrtrRpc(
  url: URL,
  caller: string,
  method: string,
  params: Record<string, unknown>,
): Promise<MrtrAnswer> {
  const name = (params['name'] ?? params['uri']) as string;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      ...as(caller),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: { ...params, _meta: { ...MRTR_ENVELOPE, ...(params['_meta'] as object | undefined) } },
    }),
  });
  const text = await response.text();
  if (response.headers.get('content-type')?.includes('text/event-stream')) {
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as MrtrAnswer & { id?: number });
    return { ...data.find((message) => message.id !== undefined)!, status: response.status };
  }
  return { ...(JSON.parse(text) as MrtrAnswer), status: response.status };
}
