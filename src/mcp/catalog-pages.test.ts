import { afterEach, describe, expect, it } from 'vitest';
import { as } from '../../test/support/principals.js';
import { clientClosers, errorOf, modernClient, v1Client } from './catalog-test-support.js';
import { prompt } from './prompt.js';
import { resource } from './resource.js';
import { resourceTemplate } from './resource-template.js';
import { startGateway, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Paged lists (opaque cursors, a bad one answered -32602) in both eras, and the cache hints of 2026-07-28
 * results (per list, per resource), absent from 2025 results.
 */

let gw: Gateway | undefined;

afterEach(async () => {
  for (const close of clientClosers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const resources = [
  ...['a', 'b', 'c', 'd', 'e'].map((name) => resource({ uri: `gift://${name}`, name, read: () => name })),
  resource({
    uri: 'gift://catalog',
    name: 'catalog',
    cacheHint: { ttlMs: 60_000, cacheScope: 'public' },
    read: () => 'catalog',
  }),
  resourceTemplate({
    uriTemplate: 'gift://orders/{id}',
    name: 'order',
    cacheHint: { ttlMs: 5_000 },
    read: ({ id }) => `order ${id}`,
  }),
];
const prompts = ['p1', 'p2', 'p3'].map((name) => prompt({ name, get: () => [] }));
const noop = resilientTool({ name: 'noop', description: 'Nothing.', inputSchema: {}, handler: () => 'ok' });

async function start(): Promise<Gateway> {
  gw = await startGateway({
    tools: () => [noop],
    server: {
      resources,
      prompts,
      listPageSize: 2,
      cacheHints: {
        tools: { ttlMs: 300_000, cacheScope: 'public' },
        resources: { ttlMs: 1_000 },
        resourceTemplates: { cacheScope: 'public' },
        prompts: { ttlMs: 0, cacheScope: 'private' },
      },
    },
  });
  return gw;
}

/** One 2026-07-28 request by hand, to see the result's fields as sent. */
async function raw(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(gw!.mcpUrl, {
    method: 'POST',
    headers: {
      ...as('ada'),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof params['uri'] === 'string' ? { 'mcp-name': params['uri'] } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (body.result === undefined) throw new Error(JSON.stringify(body.error));
  return body.result;
}

describe('paged lists', () => {
  it('pages resources, templates and prompts with opaque cursors (2025-11-25 client)', async () => {
    await start();
    const client = await v1Client(gw!.mcpUrl, 'ada');
    const uris: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor });
      uris.push(...page.resources.map((r) => r.uri));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(uris).toEqual(['gift://a', 'gift://b', 'gift://c', 'gift://d', 'gift://e', 'gift://catalog']);
    const first = await client.listPrompts();
    expect(first.prompts.map((p) => p.name)).toEqual(['p1', 'p2']);
    const second = await client.listPrompts({ cursor: first.nextCursor! });
    expect(second).toEqual({ prompts: [{ name: 'p3' }] });
    expect(await client.listResourceTemplates()).toEqual({
      resourceTemplates: [{ uriTemplate: 'gift://orders/{id}', name: 'order' }],
    });
  });

  it('answers a cursor it did not make for that list -32602, in both eras', async () => {
    await start();
    const v1 = await v1Client(gw!.mcpUrl, 'ada');
    const promptsCursor = (await v1.listPrompts()).nextCursor!;
    const modern = await modernClient(gw!.mcpUrl, 'ada');
    for (const client of [v1, modern] as const) {
      for (const cursor of ['nonsense!', promptsCursor, Buffer.from('resources:0').toString('base64url')])
        expect(await errorOf(client.listResources({ cursor }))).toMatchObject({
          code: -32602,
          message: expect.stringContaining('Invalid cursor'),
        });
    }
    // A cursor is not bound to a session or an era.
    const resourcesCursor = (await v1.listResources()).nextCursor!;
    const page = await modern.listResources({ cursor: resourcesCursor });
    expect(page.resources.map((r) => r.uri)).toEqual(['gift://c', 'gift://d']);
    // Without a cursor the v2 client walks every page itself.
    expect((await modern.listPrompts()).prompts.map((p) => p.name)).toEqual(['p1', 'p2', 'p3']);
  });
});

describe('cache hints', () => {
  it('are set per list and per resource on 2026-07-28', async () => {
    await start();
    expect(await raw('tools/list')).toMatchObject({ ttlMs: 300_000, cacheScope: 'public' });
    expect(await raw('resources/list')).toMatchObject({ ttlMs: 1_000, cacheScope: 'private' });
    expect(await raw('resources/templates/list')).toMatchObject({ ttlMs: 0, cacheScope: 'public' });
    expect(await raw('prompts/list')).toMatchObject({ ttlMs: 0, cacheScope: 'private' });
    expect(await raw('resources/read', { uri: 'gift://catalog' })).toMatchObject({
      ttlMs: 60_000,
      cacheScope: 'public',
    });
    expect(await raw('resources/read', { uri: 'gift://orders/7' })).toMatchObject({
      ttlMs: 5_000,
      cacheScope: 'private',
    });
    expect(await raw('resources/read', { uri: 'gift://a' })).toMatchObject({
      ttlMs: 0,
      cacheScope: 'private',
    });
  });

  it('never reach a 2025-11-25 result', async () => {
    await start();
    const client = await v1Client(gw!.mcpUrl, 'ada');
    const results = [
      await client.listTools(),
      await client.listResources(),
      await client.readResource({ uri: 'gift://catalog' }),
    ] as Record<string, unknown>[];
    for (const result of results) {
      expect(result).not.toHaveProperty('ttlMs');
      expect(result).not.toHaveProperty('cacheScope');
    }
  });
});
