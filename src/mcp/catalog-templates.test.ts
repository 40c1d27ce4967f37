import type { Client as ModernClient } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BreakwaterError, PrincipalContext } from '../core/index.js';
import { clientClosers, errorOf, modernClient, v1Client } from './catalog-test-support.js';
import { prompt } from './prompt.js';
import { resource } from './resource.js';
import { resourceTemplate } from './resource-template.js';
import { startGateway, type Gateway } from './test-support.js';

/**
 * Resource templates, completions and scopes over real HTTP, with the SDK's v1 client (2025-11-25 sessions)
 * and its v2 client pinned to 2026-07-28: the same listings, reads, completions and errors in both eras.
 */

let gw: Gateway | undefined;

afterEach(async () => {
  for (const close of clientClosers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const ORDERS: Record<string, { owner: string; item: string }> = {
  '1001': { owner: 'key:ada', item: 'scarf' },
  '1002': { owner: 'key:bob', item: 'book' },
};
const OCCASIONS = ['birthday', 'baby shower', 'bar mitzvah', 'anniversary'];

const resources = [
  resource({ uri: 'gift://guide', name: 'guide', read: () => 'guide' }),
  resource({ uri: 'gift://secret', name: 'secret', scopes: ['orders:admin'], read: () => 'secret' }),
  resourceTemplate({
    uriTemplate: 'gift://orders/{orderId}',
    name: 'order',
    title: 'An order',
    mimeType: 'application/json',
    read: ({ orderId }) => {
      const order = ORDERS[orderId!];
      // Another principal's order is "not found", as one that does not exist.
      if (order === undefined || order.owner !== PrincipalContext.get()?.id)
        throw new BreakwaterError('not_found');
      return JSON.stringify({ orderId, item: order.item });
    },
    list: () =>
      Object.entries(ORDERS)
        .filter(([, order]) => order.owner === PrincipalContext.get()?.id)
        .map(([id]) => ({ uri: `gift://orders/${id}`, name: `order ${id}` })),
    complete: {
      orderId: (value) =>
        Object.entries(ORDERS)
          .filter(([id, order]) => order.owner === PrincipalContext.get()?.id && id.startsWith(value))
          .map(([id]) => id),
    },
  }),
  resourceTemplate({
    uriTemplate: 'gift://search{?q,lang}',
    name: 'search',
    read: (variables) => JSON.stringify(variables),
  }),
  resourceTemplate({
    uriTemplate: 'gift://audit/{day}',
    name: 'audit',
    scopes: ['orders:admin'],
    read: ({ day }) => `audit of ${day}`,
  }),
];

const prompts = [
  prompt({
    name: 'plan_gift',
    arguments: { recipient: z.string(), occasion: z.string().optional() },
    complete: {
      occasion: (value) => OCCASIONS.filter((o) => o.startsWith(value)),
      recipient: () => Array.from({ length: 150 }, (_, i) => `friend ${i}`),
    },
    get: ({ recipient }) => [
      { role: 'user', content: { type: 'text', text: `Plan a gift for ${recipient}.` } },
    ],
  }),
  prompt({ name: 'audit_prompt', scopes: ['orders:admin'], get: () => [] }),
];

async function start(): Promise<Gateway> {
  gw = await startGateway({ tools: () => [], server: { resources, prompts } });
  return gw;
}

type AnyClient = Pick<
  ModernClient,
  'listResources' | 'listResourceTemplates' | 'readResource' | 'listPrompts' | 'getPrompt' | 'complete'
>;
const eras: [string, (caller: string) => Promise<AnyClient>][] = [
  ['2025-11-25', (caller) => v1Client(gw!.mcpUrl, caller) as unknown as Promise<AnyClient>],
  ['2026-07-28', (caller) => modernClient(gw!.mcpUrl, caller)],
];

describe.each(eras)('resource templates on %s', (_era, connect) => {
  it('lists the templates a caller may see, and the concrete resources of their list', async () => {
    await start();
    const ada = await connect('ada');
    expect((await ada.listResourceTemplates()).resourceTemplates).toEqual([
      {
        uriTemplate: 'gift://orders/{orderId}',
        name: 'order',
        title: 'An order',
        mimeType: 'application/json',
      },
      { uriTemplate: 'gift://search{?q,lang}', name: 'search' },
    ]);
    expect((await ada.listResources()).resources).toEqual([
      { uri: 'gift://guide', name: 'guide' },
      { uri: 'gift://orders/1001', name: 'order 1001' },
    ]);
    const admin = await connect('admin');
    expect((await admin.listResourceTemplates()).resourceTemplates.map((t) => t.name)).toEqual([
      'order',
      'search',
      'audit',
    ]);
    expect((await admin.listResources()).resources.map((r) => r.uri)).toEqual([
      'gift://guide',
      'gift://secret',
    ]);
  });

  it('reads through the first template that makes the URI; another owner gets "not found"', async () => {
    await start();
    const ada = await connect('ada');
    expect(await ada.readResource({ uri: 'gift://orders/1001' })).toMatchObject({
      contents: [
        {
          uri: 'gift://orders/1001',
          mimeType: 'application/json',
          text: '{"orderId":"1001","item":"scarf"}',
        },
      ],
    });
    expect((await ada.readResource({ uri: 'gift://search?lang=en&q=red%20scarf' })).contents).toEqual([
      { uri: 'gift://search?lang=en&q=red%20scarf', text: '{"lang":"en","q":"red scarf"}' },
    ]);
    for (const uri of [
      'gift://orders/1002',
      'gift://orders/9',
      'gift://nothing',
      'gift://audit/monday',
      'gift://secret',
    ])
      expect(await errorOf(ada.readResource({ uri }))).toMatchObject({
        code: -32602,
        message: expect.stringContaining(`Resource not found: ${uri}`),
        data: { uri },
      });
    const admin = await connect('admin');
    expect((await admin.readResource({ uri: 'gift://audit/monday' })).contents).toEqual([
      { uri: 'gift://audit/monday', text: 'audit of monday' },
    ]);
  });

  it('completes template variables and prompt arguments, at most 100 values with total and hasMore', async () => {
    await start();
    const ada = await connect('ada');
    const template = { type: 'ref/resource' as const, uri: 'gift://orders/{orderId}' };
    expect(await ada.complete({ ref: template, argument: { name: 'orderId', value: '10' } })).toMatchObject({
      completion: { values: ['1001'], total: 1, hasMore: false },
    });
    const plan = { type: 'ref/prompt' as const, name: 'plan_gift' };
    expect(await ada.complete({ ref: plan, argument: { name: 'occasion', value: 'b' } })).toMatchObject({
      completion: { values: ['birthday', 'baby shower', 'bar mitzvah'], total: 3, hasMore: false },
    });
    const many = await ada.complete({ ref: plan, argument: { name: 'recipient', value: '' } });
    expect(many.completion.values).toHaveLength(100);
    expect(many.completion.values[99]).toBe('friend 99');
    expect(many.completion).toMatchObject({ total: 150, hasMore: true });
    // An argument without a completer has no values.
    expect(
      await ada.complete({
        ref: { type: 'ref/resource', uri: 'gift://search{?q,lang}' },
        argument: { name: 'q', value: 'x' },
      }),
    ).toMatchObject({ completion: { values: [], total: 0, hasMore: false } });
  });

  it('answers -32602 for a completion of an unknown or unseen prompt or template', async () => {
    await start();
    const ada = await connect('ada');
    expect(
      await errorOf(
        ada.complete({
          ref: { type: 'ref/prompt', name: 'audit_prompt' },
          argument: { name: 'a', value: '' },
        }),
      ),
    ).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown prompt: audit_prompt'),
      data: { name: 'audit_prompt' },
    });
    const ref = { type: 'ref/resource' as const, uri: 'gift://audit/{day}' };
    expect(await errorOf(ada.complete({ ref, argument: { name: 'day', value: '' } }))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Resource template not found: gift://audit/{day}'),
      data: { ref },
    });
    expect((await ada.listPrompts()).prompts.map((p) => p.name)).toEqual(['plan_gift']);
    expect(await errorOf(ada.getPrompt({ name: 'audit_prompt' }))).toMatchObject({ code: -32602 });
    const admin = await connect('admin');
    expect((await admin.listPrompts()).prompts.map((p) => p.name)).toEqual(['plan_gift', 'audit_prompt']);
  });
});

describe('the completions capability', () => {
  it('is declared when a prompt or template has completers, and only then', async () => {
    await start();
    expect((await v1Client(gw!.mcpUrl, 'ada')).getServerCapabilities()).toMatchObject({ completions: {} });
    expect((await modernClient(gw!.mcpUrl, 'ada')).getServerCapabilities()).toMatchObject({
      completions: {},
    });
    await gw!.close();
    gw = await startGateway({ tools: () => [], server: { resources: resources.slice(0, 1) } });
    expect((await v1Client(gw.mcpUrl, 'ada')).getServerCapabilities()?.completions).toBeUndefined();
    expect((await modernClient(gw.mcpUrl, 'ada')).getServerCapabilities()?.completions).toBeUndefined();
  });
});
