import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { BreakwaterError, PrincipalContext } from '../core/index.js';
import { prompt } from './prompt.js';
import { resource } from './resource.js';
import { connectClient, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Resources and prompts over real HTTP, with the SDK's v1 client (2025-11-25 sessions) and its v2 client
 * pinned to 2026-07-28: the same listings, contents and errors in both eras.
 */

let gw: Gateway | undefined;
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const suggest = resilientTool({
  name: 'suggest',
  description: 'Suggests a gift.',
  inputSchema: {},
  handler: () => Promise.resolve({ gift: 'scarf' }),
});

const catalog = {
  resources: [
    resource({
      uri: 'giftgenius://catalog/categories',
      name: 'categories',
      title: 'Gift categories',
      description: 'The categories of the gift catalog.',
      mimeType: 'application/json',
      read: () => JSON.stringify(['books', 'scarves']),
    }),
    resource({
      uri: 'giftgenius://logo.png',
      name: 'logo',
      mimeType: 'image/png',
      read: () => Promise.resolve(new Uint8Array([0x89, 0x50, 0x4e, 0x47])),
    }),
    resource({
      uri: 'giftgenius://whoami',
      name: 'whoami',
      read: () => PrincipalContext.get()?.id ?? 'nobody',
    }),
    resource({
      uri: 'giftgenius://down',
      name: 'down',
      read: () => {
        throw new BreakwaterError('upstream_unavailable', { retryAfterMs: 2_000 });
      },
    }),
    resource({
      uri: 'giftgenius://slow',
      name: 'slow',
      deadlineMs: 20,
      read: (ctx) =>
        new Promise<string>((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        ),
    }),
    resource({
      uri: 'giftgenius://buggy',
      name: 'buggy',
      read: () => 42 as unknown as string,
    }),
  ],
  prompts: [
    prompt({
      name: 'gift_brief',
      title: 'Gift brief',
      description: 'A brief for finding a gift.',
      arguments: {
        recipient: z.string().min(1).describe('Who the gift is for'),
        occasion: z.string().optional(),
      },
      get: ({ recipient, occasion }) => ({
        description: 'A gift brief',
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Find a gift for ${recipient} (${occasion ?? 'any occasion'}).` },
          },
        ],
      }),
    }),
    prompt({
      name: 'whoami',
      get: () => [{ role: 'user', content: { type: 'text', text: PrincipalContext.get()?.id ?? 'nobody' } }],
    }),
  ],
};

async function start(withCatalog = true): Promise<Gateway> {
  gw = await startGateway({ tools: () => [suggest], server: withCatalog ? catalog : {} });
  return gw;
}

async function v1(caller: string): Promise<TestClient['client']> {
  const tc = await connectClient(gw!.mcpUrl, as(caller));
  closers.push(() => tc.close());
  return tc.client;
}

async function modern(caller: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'mcp-test-v2', version: '0.0.1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  closers.push(() => client.close());
  await client.connect(
    new StreamableHTTPClientTransport(gw!.mcpUrl, { requestInit: { headers: as(caller) } }),
  );
  return client;
}

/** The two eras' clients: the calls used here have the same names and shapes in both. */
type AnyClient = Pick<ModernClient, 'listResources' | 'readResource' | 'listPrompts' | 'getPrompt'>;
const eras: [string, (caller: string) => Promise<AnyClient>][] = [
  ['2025-11-25', (caller) => v1(caller) as unknown as Promise<AnyClient>],
  ['2026-07-28', modern],
];

const errorOf = async (
  promise: Promise<unknown>,
): Promise<{ code: number; message: string; data: unknown }> => {
  try {
    await promise;
  } catch (error) {
    const { code, message, data } = error as { code: number; message: string; data: unknown };
    return { code, message, data };
  }
  throw new Error('expected a JSON-RPC error');
};

describe.each(eras)('resources and prompts on %s', (_era, connect) => {
  it('lists the resources and prompts exactly', async () => {
    await start();
    const client = await connect('ada');
    expect((await client.listResources()).resources).toEqual([
      {
        uri: 'giftgenius://catalog/categories',
        name: 'categories',
        title: 'Gift categories',
        description: 'The categories of the gift catalog.',
        mimeType: 'application/json',
      },
      { uri: 'giftgenius://logo.png', name: 'logo', mimeType: 'image/png' },
      { uri: 'giftgenius://whoami', name: 'whoami' },
      { uri: 'giftgenius://down', name: 'down' },
      { uri: 'giftgenius://slow', name: 'slow' },
      { uri: 'giftgenius://buggy', name: 'buggy' },
    ]);
    expect((await client.listPrompts()).prompts).toEqual([
      {
        name: 'gift_brief',
        title: 'Gift brief',
        description: 'A brief for finding a gift.',
        arguments: [
          { name: 'recipient', description: 'Who the gift is for', required: true },
          { name: 'occasion', required: false },
        ],
      },
      { name: 'whoami' },
    ]);
  });

  it('reads text and binary contents, for the calling principal', async () => {
    await start();
    const client = await connect('ada');
    expect((await client.readResource({ uri: 'giftgenius://catalog/categories' })).contents).toEqual([
      { uri: 'giftgenius://catalog/categories', mimeType: 'application/json', text: '["books","scarves"]' },
    ]);
    expect((await client.readResource({ uri: 'giftgenius://logo.png' })).contents).toEqual([
      { uri: 'giftgenius://logo.png', mimeType: 'image/png', blob: 'iVBORw==' },
    ]);
    expect((await client.readResource({ uri: 'giftgenius://whoami' })).contents).toEqual([
      { uri: 'giftgenius://whoami', text: 'key:ada' },
    ]);
    const bob = await connect('bob');
    expect((await bob.getPrompt({ name: 'whoami' })).messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'key:bob' } },
    ]);
  });

  it('gets a prompt with its arguments', async () => {
    await start();
    const client = await connect('ada');
    const got = await client.getPrompt({
      name: 'gift_brief',
      arguments: { recipient: 'mum', occasion: 'birthday' },
    });
    expect(got.description).toBe('A gift brief');
    expect(got.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Find a gift for mum (birthday).' } },
    ]);
  });

  it('an unknown URI is -32602 with data.uri; an unknown prompt and bad arguments are -32602', async () => {
    await start();
    const client = await connect('ada');
    expect(await errorOf(client.readResource({ uri: 'giftgenius://nope' }))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Resource not found: giftgenius://nope') as unknown,
      data: { uri: 'giftgenius://nope' },
    });
    expect(await errorOf(client.getPrompt({ name: 'nope' }))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown prompt: nope') as unknown,
      data: { name: 'nope' },
    });
    expect(
      await errorOf(client.getPrompt({ name: 'gift_brief', arguments: { recipient: '' } })),
    ).toMatchObject({
      code: -32602,
      message: expect.stringContaining(
        'The arguments of prompt gift_brief are not valid: recipient: Too small: expected string to have >=1 characters.',
      ) as unknown,
      data: { name: 'gift_brief' },
    });
  });

  it('a failing read is -32603 with the failure’s error info; a read past its deadline too; a bug says nothing', async () => {
    const reported: unknown[] = [];
    gw = await startGateway({
      tools: () => [suggest],
      server: { ...catalog, onError: (error) => reported.push(error) },
    });
    const client = await connect('ada');
    expect(await errorOf(client.readResource({ uri: 'giftgenius://down' }))).toEqual({
      code: -32603,
      message: expect.stringContaining(
        'A service this request depends on is unavailable right now',
      ) as unknown,
      data: {
        error: {
          code: 'upstream_unavailable',
          category: 'upstream_unavailable',
          message:
            'A service this request depends on is unavailable right now; try again in about 2 seconds.',
          retryable: true,
          retry_after_ms: 2_000,
          outcome: 'failed',
        },
      },
    });
    expect(await errorOf(client.readResource({ uri: 'giftgenius://slow' }))).toMatchObject({
      code: -32603,
      data: { error: { category: 'deadline_exceeded', outcome: 'failed', retryable: true } },
    });
    expect(await errorOf(client.readResource({ uri: 'giftgenius://buggy' }))).toMatchObject({
      code: -32603,
      data: { error: { category: 'internal_error', retryable: false } },
    });
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toBe(
      'resource giftgenius://buggy: read must return a string or a Uint8Array',
    );
  });
});

describe('capabilities', () => {
  it('are declared only when the app has resources or prompts', async () => {
    await start();
    const withCatalog = await v1('ada');
    expect(withCatalog.getServerCapabilities()).toMatchObject({
      resources: { listChanged: false },
      prompts: { listChanged: false },
    });
    await gw!.close();
    gw = undefined;
    for (const close of closers.splice(0)) await close().catch(() => undefined);

    await start(false);
    const plain = await v1('ada');
    expect(plain.getServerCapabilities()).toEqual({ tools: { listChanged: false }, logging: {} });
    const modernPlain = await modern('ada');
    expect(modernPlain.getServerCapabilities()).toEqual({ tools: { listChanged: false }, logging: {} });
    expect(await errorOf(plain.listResources())).toMatchObject({ code: -32601 });
    const raw = await fetch(gw!.mcpUrl, {
      method: 'POST',
      headers: {
        ...as('ada'),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'prompts/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'prompts/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    expect(((await raw.json()) as { error: unknown }).error).toMatchObject({ code: -32601 });
  });
});
