/**
 * Shared helpers of the end-to-end tests (not a test file itself): the GiftGenius gateway started for real
 * (`startGateway` on a temporary SQLite file, the three example services on free ports, a request-counting
 * proxy in front of the gift service), the SDK's real MCP client over Streamable HTTP, a reader for the
 * gateway's job event streams, and a cleanup stack run after every test.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { createGiftGeniusApp, type GiftGeniusSettings } from '../../examples/giftgenius/app.js';
import {
  startGiftGeniusServices,
  type GiftGeniusServices,
} from '../../examples/giftgenius/services/index.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway/index.js';
import { tempDb as sharedTempDb } from '../support/cleanups.js';

/**
 * Small timeouts so a hanging service costs a fraction of a second: two attempts of 250 ms per gift call. A
 * little above the brief's 150 ms, so a loaded machine does not turn a healthy call into a timeout.
 */
export const FAST_SETTINGS: GiftGeniusSettings = {
  giftTimeoutMs: 250,
  commerceTimeoutMs: 250,
  analyticsTimeoutMs: 250,
  stepMs: 50,
  llmPort: 0,
};

export { useCleanups } from '../support/cleanups.js';

/** A fresh temporary SQLite path, its folder removed after the test. */
export function tempDb(defer: (cleanup: () => unknown) => void): string {
  return sharedTempDb(defer, 'breakwater-e2e');
}

/** An HTTP proxy that counts the requests it forwards (what reached the service behind it). */
export interface CountingProxy {
  url: string;
  /** Requests received so far. */
  requests(): number;
  close(): Promise<void>;
}

/**
 * Forwards every request to `target` as it is and counts it. A client that goes away ends the forwarded
 * request too, so a service that hangs sees its caller leave, as it would without the proxy.
 */
export async function countingProxy(target: string): Promise<CountingProxy> {
  const to = new URL(target);
  let count = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    count++;
    const forwarded = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    req.pipe(forwarded);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The example services with a counting proxy in front of the gift service. */
export interface Backends {
  services: GiftGeniusServices;
  giftProxy: CountingProxy;
  /** The URLs the app is given: gift through the proxy, the others direct. */
  urls: { giftUrl: string; commerceUrl: string; analyticsUrl: string };
}

/** Starts the three services on free ports (and the proxy); all are closed after the test. */
export async function startBackends(defer: (cleanup: () => unknown) => void): Promise<Backends> {
  const services = await startGiftGeniusServices({});
  defer(() => services.close());
  const giftProxy = await countingProxy(services.gift.url);
  defer(() => giftProxy.close());
  return {
    services,
    giftProxy,
    urls: {
      giftUrl: giftProxy.url,
      commerceUrl: services.commerce.url,
      analyticsUrl: services.analytics.url,
    },
  };
}

/** Starts a GiftGenius gateway on port 0 over `backends`; closed after the test. */
export async function startGiftGenius(
  defer: (cleanup: () => unknown) => void,
  backends: Backends,
  options: { dbPath: string; settings?: GiftGeniusSettings; gateway?: Partial<GatewayOptions> },
): Promise<Gateway> {
  const gateway = await startGateway({
    app: createGiftGeniusApp({ ...FAST_SETTINGS, ...backends.urls, ...options.settings }),
    store: options.dbPath,
    port: 0,
    log: () => undefined,
    ...options.gateway,
  });
  defer(() => gateway.close());
  return gateway;
}

/** A tool result as the tests read it. */
export interface ToolAnswer {
  content: Array<{ type: string; text?: string }>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read fields freely
  structuredContent?: any;
  isError?: boolean;
}

/** The SDK's client, connected, and what the tests need around it. */
export interface McpClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Resolves once the standalone SSE stream (the client's GET) is open: server notifications reach it. */
  standaloneStream: Promise<void>;
  call(name: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  /** Ends the session (DELETE), closes the client and its connections. Idempotent. */
  close(): Promise<void>;
}

/** Connects the SDK's real `Client` over Streamable HTTP to `mcpUrl`; closed after the test. */
export async function connect(defer: (cleanup: () => unknown) => void, mcpUrl: string): Promise<McpClient> {
  let opened!: () => void;
  const standaloneStream = new Promise<void>((resolve) => (opened = resolve));
  // A connection pool of the client's own, destroyed when the client is done: undici keeps idle and
  // spare connections open for seconds, and a gateway shutting down waits for connections it cannot tell
  // are idle (see the report on closeGracefully), so shared pools would slow every close down.
  const agent = new Agent();
  // The client's own fetch, observed: a successful GET is the standalone stream opening.
  const observed = (async (input: string | URL, init?: RequestInit) => {
    const response = await undiciFetch(input, { ...(init as UndiciRequestInit), dispatcher: agent });
    if ((init?.method ?? 'GET') === 'GET' && response.status === 200) opened();
    return response;
  }) as unknown as typeof fetch;
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: observed });
  const client = new Client({ name: 'giftgenius-e2e', version: '1.0.0' });
  await client.connect(transport);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
      await agent.destroy();
    })());
  defer(close);
  return {
    client,
    transport,
    standaloneStream,
    close,
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolAnswer,
  };
}

/** One server-sent event frame (fields as sent; comment lines apart). */
export interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comments: string[];
}

/** Reads `text/event-stream` frames from a response; `close()` disconnects. */
export interface EventStream {
  status: number;
  /** The next frame with an `id` (keep-alive comments skipped), or `undefined` once the stream ended. */
  nextEvent(): Promise<Frame | undefined>;
  /** Every remaining event until the stream ends. */
  rest(): Promise<Frame[]>;
  close(): void;
}

/** Opens `GET url` as an event stream (with `headers`, e.g. `Last-Event-ID`); closed after the test. */
export async function openEvents(
  defer: (cleanup: () => unknown) => void,
  url: string,
  headers: Record<string, string> = {},
): Promise<EventStream> {
  const controller = new AbortController();
  defer(() => controller.abort());
  const response = await fetch(url, { headers, signal: controller.signal });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const nextFrame = async (): Promise<Frame | undefined> => {
    for (;;) {
      const cut = buffer.indexOf('\n\n');
      if (cut >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        return parseFrame(raw);
      }
      const chunk = reader === undefined ? { done: true as const } : await reader.read();
      if (chunk.done) return undefined;
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  };
  const nextEvent = async (): Promise<Frame | undefined> => {
    for (let frame = await nextFrame(); frame !== undefined; frame = await nextFrame()) {
      if (frame.id !== undefined) return frame;
    }
    return undefined;
  };
  return {
    status: response.status,
    nextEvent,
    async rest() {
      const frames: Frame[] = [];
      for (let frame = await nextEvent(); frame !== undefined; frame = await nextEvent()) frames.push(frame);
      return frames;
    },
    close: () => controller.abort(),
  };
}

function parseFrame(raw: string): Frame {
  const frame: Frame = { comments: [] };
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) {
      frame.comments.push(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id' || name === 'event' || name === 'data') frame[name] = value;
  }
  return frame;
}

/** Resolves once `condition()` holds, checking every 5 ms; rejects after `timeoutMs` (default 3 000). */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 3_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise with its resolve exposed. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** JSON of `GET url`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read fields freely
export async function getJson(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}
