import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { as } from '../../test/support/principals.js';
import { MAX_URIS_PER_LISTEN } from './resource-listen.js';
import { resource } from './resource.js';
import { resourceTemplate } from './resource-template.js';
import { connectClient, openListen, startGateway, type Gateway } from './test-support.js';

/**
 * Resource updates over 2026-07-28 `subscriptions/listen` (`resourceSubscriptions`), raw JSON-RPC over real
 * HTTP: the acknowledgement of the URIs the caller may read, one notification per update, principal-scoped
 * updates, the bounds, and updates published on another gateway sharing the SQLite file.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const META = (id: number) => ({ 'io.modelcontextprotocol/subscriptionId': id });
const updated = (id: number, uri: string) => ({
  jsonrpc: '2.0',
  method: 'notifications/resources/updated',
  params: { uri, _meta: META(id) },
});

async function gateway(dbPath: string, server: Record<string, unknown> = {}): Promise<Gateway> {
  const gw = await startGateway({
    dbPath,
    tools: () => [],
    server: {
      resources: [
        resource({ uri: 'gift://stock', name: 'stock', read: () => '3' }),
        resource({ uri: 'gift://audit', name: 'audit', scopes: ['orders:admin'], read: () => '' }),
        resourceTemplate({ uriTemplate: 'gift://orders/{id}', name: 'order', read: ({ id }) => id! }),
      ],
      ...server,
    },
  });
  cleanups.push(() => gw.close());
  return gw;
}

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bw-resub-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'store.db');
}

async function listen(gw: Gateway, caller: string, id: number, uris: unknown) {
  const stream = await openListen(gw.mcpUrl, as(caller), id, { resourceSubscriptions: uris }, false);
  cleanups.push(() => stream.close());
  return stream;
}

describe('resource updates over subscriptions/listen (2026-07-28)', () => {
  it('acknowledges the readable URIs, then one notification per update, scoped ones to owner and admin', async () => {
    const gw = await gateway(tempDb());
    const server = gw.routes.server;
    const ada = await listen(gw, 'ada', 1, [
      'gift://stock',
      'gift://orders/1',
      'gift://audit',
      'gift://nope',
    ]);
    expect(ada.status).toBe(200);
    expect(await ada.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        notifications: { resourceSubscriptions: ['gift://stock', 'gift://orders/1'] },
        _meta: META(1),
      },
    });
    const bob = await listen(gw, 'bob', 2, ['gift://orders/1', 'gift://stock']);
    await bob.next();
    const admin = await listen(gw, 'admin', 3, ['gift://orders/1', 'gift://audit']);
    expect(((await admin.next()) as { params: unknown }).params).toEqual({
      notifications: { resourceSubscriptions: ['gift://orders/1', 'gift://audit'] },
      _meta: META(3),
    });

    // No session subscribed: 0 sessions told; the listens hear it all the same.
    expect(server.notifyResourceUpdated('gift://orders/1', { principalId: 'key:ada' })).toBe(0);
    server.notifyResourceUpdated('gift://audit');
    server.notifyResourceUpdated('gift://stock');
    expect(await ada.next()).toEqual(updated(1, 'gift://orders/1'));
    expect(await ada.next()).toEqual(updated(1, 'gift://stock'));
    // Bob never hears ada's order: his next message is the stock update.
    expect(await bob.next()).toEqual(updated(2, 'gift://stock'));
    expect(await admin.next()).toEqual(updated(3, 'gift://orders/1'));
    expect(await admin.next()).toEqual(updated(3, 'gift://audit'));
  });

  it('bounds URIs per listen and listens per principal', async () => {
    const gw = await gateway(tempDb(), { maxResourceListensPerPrincipal: 1 });
    const many = Array.from({ length: MAX_URIS_PER_LISTEN + 1 }, (_, i) => `gift://orders/${i}`);
    const tooMany = await listen(gw, 'ada', 1, many);
    expect(await tooMany.next()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32602,
        message: `resourceSubscriptions must be an array of at most ${MAX_URIS_PER_LISTEN} resource URIs.`,
      },
    });
    const first = await listen(gw, 'ada', 2, ['gift://stock']);
    await first.next();
    const over = await listen(gw, 'ada', 3, ['gift://stock']);
    expect(await over.next()).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32603, message: 'Subscription limit reached' },
    });
    const bob = await listen(gw, 'bob', 4, ['gift://stock']);
    expect(((await bob.next()) as { method: string }).method).toBe(
      'notifications/subscriptions/acknowledged',
    );
  });

  it('an update published on one gateway reaches listens and sessions on another on the same SQLite file', async () => {
    const path = tempDb();
    const one = await gateway(path);
    const two = await gateway(path);
    const here = await listen(one, 'ada', 1, ['gift://stock', 'gift://orders/1']);
    const there = await listen(two, 'ada', 2, ['gift://stock', 'gift://orders/1']);
    const stranger = await listen(two, 'bob', 3, ['gift://orders/1', 'gift://stock']);
    for (const stream of [here, there, stranger]) await stream.next();
    const session = await connectClient(two.mcpUrl, as('ada'));
    cleanups.push(() => session.close());
    const heard: string[] = [];
    session.client.setNotificationHandler(
      ResourceUpdatedNotificationSchema,
      (n) => void heard.push(n.params.uri),
    );
    await session.standaloneStream;
    await session.client.subscribeResource({ uri: 'gift://orders/1' });

    one.routes.server.notifyResourceUpdated('gift://orders/1', { principalId: 'key:ada' });
    expect(await here.next()).toEqual(updated(1, 'gift://orders/1'));
    expect(await there.next()).toEqual(updated(2, 'gift://orders/1'));
    two.routes.server.notifyResourceUpdated('gift://stock');
    // Each listen hears each update once, whichever gateway published it; bob never hears ada's order.
    expect(await there.next()).toEqual(updated(2, 'gift://stock'));
    expect(await here.next()).toEqual(updated(1, 'gift://stock'));
    expect(await stranger.next()).toEqual(updated(3, 'gift://stock'));
    one.routes.server.notifyResourceUpdated('gift://stock');
    expect(await there.next()).toEqual(updated(2, 'gift://stock'));
    expect(await here.next()).toEqual(updated(1, 'gift://stock'));
    expect(heard).toEqual(['gift://orders/1']);
  });
});
