/**
 * Shared parts of the front-door adversarial suites (not a test file itself): a GiftGenius gateway started
 * for real with the admin token and two API keys made through the admin API, a raw HTTP client that sends
 * any header (`Host` included) as given, and the official MCP SDK client carrying a key.
 */
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import type { Gateway, GatewayOptions } from '../../src/gateway/index.js';
import { startBackends, startGiftGenius, tempDb, type Backends, type ToolAnswer } from '../e2e/support.js';

/** The admin token of every front-door gateway (at least 16 characters). */
export const ADMIN_TOKEN = 'front-door-admin-token-0123456789';

/** An answer read whole. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read fields freely
  json: any;
}

/**
 * One request over a fresh connection with exactly `headers` (Node sends `Host` as given; none is added
 * when `headers.host` is set).
 */
export function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers: { connection: 'close', ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** `Authorization: Bearer <credential>`. */
export const bearer = (credential: string): Record<string, string> => ({
  authorization: `Bearer ${credential}`,
});

/** A key made through `POST /admin/api/keys`: its secret and id. */
export interface MadeKey {
  key: string;
  id: string;
}

/** Creates a key through the admin API (the admin token as a bearer). */
export async function createKey(
  gw: Gateway,
  body: { name: string; scopes: string[]; expires_in_ms?: number },
): Promise<MadeKey> {
  const answer = await raw(`${gw.url}/admin/api/keys`, {
    method: 'POST',
    headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (answer.status !== 201) throw new Error(`key not created: ${answer.status} ${answer.text}`);
  return { key: answer.json.key as string, id: answer.json.id as string };
}

/** The gateway under attack, its backends and two keys A and B (scopes mcp, jobs, ai). */
export interface FrontDoor {
  gw: Gateway;
  backends: Backends;
  a: MadeKey;
  b: MadeKey;
}

/** Starts GiftGenius with the admin token (credentials mode) and makes keys A and B. */
export async function frontDoor(
  defer: (cleanup: () => unknown) => void,
  options: { stepMs?: number; gateway?: Partial<GatewayOptions> } = {},
): Promise<FrontDoor> {
  const backends = await startBackends(defer);
  const gw = await startGiftGenius(defer, backends, {
    dbPath: tempDb(defer),
    settings: { stepMs: options.stepMs ?? 50, giftTimeoutMs: 2_000, commerceTimeoutMs: 2_000 },
    gateway: { adminToken: ADMIN_TOKEN, graceMs: 200, ...options.gateway },
  });
  const a = await createKey(gw, { name: 'A', scopes: ['mcp', 'jobs', 'ai'] });
  const b = await createKey(gw, { name: 'B', scopes: ['mcp', 'jobs', 'ai'] });
  return { gw, backends, a, b };
}

/** The SDK's client with a credential in every request's headers. */
export interface KeyedClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  call(name: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  close(): Promise<void>;
}

/** Connects the official MCP client to `mcpUrl` with `credential` as a bearer; closed after the test. */
export async function connectAs(
  defer: (cleanup: () => unknown) => void,
  mcpUrl: string,
  credential: string,
): Promise<KeyedClient> {
  const agent = new Agent();
  const fetchVia = ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as UndiciRequestInit), dispatcher: agent })) as unknown as typeof fetch;
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    fetch: fetchVia,
    requestInit: { headers: bearer(credential) },
  });
  const client = new Client({ name: 'front-door-attacker', version: '1.0.0' });
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
    close,
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as ToolAnswer,
  };
}

/** The `initialize` request body of a raw MCP client. */
export const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw-attacker', version: '1.0.0' },
  },
});

/** Headers a Streamable HTTP POST needs. */
export const MCP_POST_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

/** What the deep analysis is asked for. */
export const ANALYSIS = { interests: ['music', 'cooking'], budget_usd: 80, recipient: 'Alex' };
