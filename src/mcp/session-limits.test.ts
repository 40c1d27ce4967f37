import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { FakeClock } from '../core/index.js';
import type { McpServerOptions } from './server.js';
import { connectClient, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Sessions under load from one principal ("5,000 unauthenticated initialize calls filled the 1,000-session
 * table for an hour; a real client then got 503") and "MCP sessions capped per principal; one principal that
 * exhausts its share leaves others unaffected". Raw initialize calls and the official SDK client, over real
 * HTTP.
 */

const echo = resilientTool({
  name: 'echo',
  description: 'Echoes its text.',
  inputSchema: z.object({ text: z.string() }),
  handler: ({ text }) => ({ text }),
});

let gw: Gateway;
const clients: TestClient[] = [];
const streams: AbortController[] = [];

afterEach(async () => {
  for (const tc of clients.splice(0)) await tc.close().catch(() => undefined);
  // The gateway first: its close ends the held streams (a client-side abort leaves the server's end open
  // until the socket times out, and the app's close would wait for it).
  await gw.close();
  for (const stream of streams.splice(0)) stream.abort();
});

async function start(server: Partial<McpServerOptions>): Promise<void> {
  gw = await startGateway({ tools: () => [echo], server });
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'drive-by', version: '1' } },
});

/** A bare initialize as `caller`: its status and session id (never used again). */
async function initialize(caller: string): Promise<{ status: number; id: string | null; body: string }> {
  const response = await fetch(gw.mcpUrl, {
    method: 'POST',
    headers: { ...HEADERS, ...as(caller) },
    body: INITIALIZE,
  });
  return { status: response.status, id: response.headers.get('mcp-session-id'), body: await response.text() };
}

/** A `tools/list` as `caller` in session `id`: its status. */
async function use(caller: string, id: string): Promise<number> {
  const response = await fetch(gw.mcpUrl, {
    method: 'POST',
    headers: { ...HEADERS, ...as(caller), 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  await response.text();
  return response.status;
}

/** Holds a request of session `id` open (its standalone SSE stream) until the test ends. */
async function holdOpen(caller: string, id: string): Promise<void> {
  const stream = new AbortController();
  streams.push(stream);
  const response = await fetch(gw.mcpUrl, {
    headers: {
      ...as(caller),
      accept: 'text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-11-25',
    },
    signal: stream.signal,
  });
  expect(response.status).toBe(200);
}

/** The SDK client as `caller`, and one tool call through it. */
async function realClient(caller: string): Promise<unknown> {
  const tc = await connectClient(gw.mcpUrl, as(caller));
  clients.push(tc);
  const result = await tc.client.callTool({ name: 'echo', arguments: { text: 'hello' } });
  return result.structuredContent;
}

describe('MCP sessions capped per principal', () => {
  it('500 initialize calls of one principal hold at most its share; another principal still initializes and calls a tool', async () => {
    // The attack above scaled down (1,000 sessions, 5,000 calls): 50 sessions, 20 a principal, 500 calls.
    await start({ maxSessions: 50, maxSessionsPerPrincipal: 20 });
    let first: string | null = null;
    // 10 at a time: fewer than her share, so each finds an idle session of hers to close (more at once than
    // her share would be refused with 503 once all of her places are taken by initialize calls under way).
    for (let batch = 0; batch < 50; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => initialize('mallory')));
      for (const answer of answers) expect(answer.status).toBe(200);
      first ??= answers[0]!.id;
    }
    // Each of Mallory's initialize calls past 20 closed her own least recently used idle session.
    expect(gw.routes.server.sessionCount).toBe(20);
    expect(await use('mallory', first!)).toBe(404);

    expect(await realClient('ada')).toEqual({ text: 'hello' });
    expect(gw.routes.server.sessionCount).toBe(21);
  });

  it('a principal whose every session has a request open gets 503 with Retry-After; others are served', async () => {
    await start({ maxSessionsPerPrincipal: 2 });
    for (let i = 0; i < 2; i++) {
      const { id } = await initialize('mallory');
      await holdOpen('mallory', id!);
    }
    const refused = await initialize('mallory');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message:
          'Too many open sessions for this caller (2 of 2), each with a request in progress; close one, or try again in about 5 seconds.',
      },
      id: null,
    });
    expect(await realClient('ada')).toEqual({ text: 'hello' });
  });

  it('a full table closes an idle session of the principal holding the most, not of one holding fewer', async () => {
    await start({ maxSessions: 4, maxSessionsPerPrincipal: 3 });
    const mallory = [];
    for (let i = 0; i < 3; i++) mallory.push((await initialize('mallory')).id!);
    const bob = (await initialize('bob')).id!;
    // Mallory's second session is used again, so her first is her least recently used.
    expect(await use('mallory', mallory[1]!)).toBe(200);

    expect(await realClient('ada')).toEqual({ text: 'hello' });
    expect(gw.routes.server.sessionCount).toBe(4);
    expect(await use('mallory', mallory[0]!)).toBe(404);
    expect(await use('mallory', mallory[1]!)).toBe(200);
    expect(await use('mallory', mallory[2]!)).toBe(200);
    expect(await use('bob', bob)).toBe(200);
  });

  it('a session never used after its initialize is closed after unusedSessionMs; a used one stays', async () => {
    const clock = new FakeClock();
    await start({ clock, unusedSessionMs: 60_000 });
    const unused = (await initialize('mallory')).id!;
    const used = (await initialize('ada')).id!;
    expect(await use('ada', used)).toBe(200);
    clock.tick(59_999);
    expect(gw.routes.server.sessionCount).toBe(2);
    clock.tick(1);
    expect(gw.routes.server.sessionCount).toBe(1);
    expect(await use('mallory', unused)).toBe(404);
    expect(await use('ada', used)).toBe(200);
  });

  it('checks the options: maxSessionsPerPrincipal and unusedSessionMs are integers >= 1', async () => {
    await expect(start({ maxSessionsPerPrincipal: 0 })).rejects.toThrow(
      'createMcpServer: maxSessionsPerPrincipal must be',
    );
    await expect(start({ unusedSessionMs: 1.5 })).rejects.toThrow('createMcpServer: unusedSessionMs must be');
    await start({});
  });
});
