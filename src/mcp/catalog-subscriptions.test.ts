import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { as } from '../../test/support/principals.js';
import { errorOf } from './catalog-test-support.js';
import { resource } from './resource.js';
import { resourceTemplate } from './resource-template.js';
import { MAX_SUBSCRIPTIONS_PER_SESSION } from './subscriptions.js';
import { connectClient, startGateway, type Gateway, type TestClient } from './test-support.js';

/**
 * Resource subscriptions on 2025-11-25 sessions over real HTTP: `resources/subscribe` of what the caller may
 * see, `notifyResourceUpdated` to the subscribed sessions (of the owner only, when named), bounded per session.
 */

let gw: Gateway | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const tc of clients.splice(0)) await tc.close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

async function start(): Promise<Gateway> {
  gw = await startGateway({
    tools: () => [],
    server: {
      resources: [
        resource({ uri: 'gift://stock', name: 'stock', read: () => '3' }),
        resource({ uri: 'gift://audit', name: 'audit', scopes: ['orders:admin'], read: () => '' }),
        resourceTemplate({ uriTemplate: 'gift://orders/{id}', name: 'order', read: ({ id }) => id! }),
      ],
    },
  });
  return gw;
}

/** A session of `caller` with its standalone stream open, and the URIs it hears updated. */
async function listener(caller: string): Promise<{ tc: TestClient; heard: string[] }> {
  const tc = await connectClient(gw!.mcpUrl, as(caller));
  clients.push(tc);
  const heard: string[] = [];
  tc.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void heard.push(n.params.uri));
  await tc.standaloneStream;
  return { tc, heard };
}

describe('resource subscriptions (2025-11-25)', () => {
  it('declares subscribe and tells the subscribed sessions, of the named owner and admins only', async () => {
    await start();
    const ada = await listener('ada');
    const bob = await listener('bob');
    const admin = await listener('admin');
    expect(ada.tc.client.getServerCapabilities()?.resources).toEqual({ listChanged: false, subscribe: true });
    for (const who of [ada, bob, admin]) {
      await who.tc.client.subscribeResource({ uri: 'gift://orders/1' });
      await who.tc.client.subscribeResource({ uri: 'gift://stock' });
    }
    expect(gw!.routes.server.notifyResourceUpdated('gift://orders/1', { principalId: 'key:ada' })).toBe(2);
    expect(gw!.routes.server.notifyResourceUpdated('gift://stock')).toBe(3);
    expect(gw!.routes.server.notifyResourceUpdated('gift://orders/2')).toBe(0);
    await bob.tc.client.unsubscribeResource({ uri: 'gift://stock' });
    expect(gw!.routes.server.notifyResourceUpdated('gift://stock')).toBe(2);
    // Notifications travel on each session's standalone stream: wait for them to arrive.
    await vi.waitFor(() => {
      expect(ada.heard).toEqual(['gift://orders/1', 'gift://stock', 'gift://stock']);
      expect(admin.heard).toEqual(['gift://orders/1', 'gift://stock', 'gift://stock']);
    });
    expect(bob.heard).toEqual(['gift://stock']);
  });

  it('refuses what the caller cannot see and more than the limit, -32602; a closed session is forgotten', async () => {
    await start();
    const ada = await listener('ada');
    for (const uri of ['gift://nothing', 'gift://audit'])
      expect(await errorOf(ada.tc.client.subscribeResource({ uri }))).toMatchObject({
        code: -32602,
        data: { uri },
      });
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_SESSION; i++)
      await ada.tc.client.subscribeResource({ uri: `gift://orders/${i}` });
    expect(await errorOf(ada.tc.client.subscribeResource({ uri: 'gift://stock' }))).toMatchObject({
      code: -32602,
      data: { uri: 'gift://stock', limit: MAX_SUBSCRIPTIONS_PER_SESSION },
    });
    // Subscribing again to one it holds is not a new one.
    await ada.tc.client.subscribeResource({ uri: 'gift://orders/0' });
    await ada.tc.close();
    clients.splice(0);
    expect(gw!.routes.server.notifyResourceUpdated('gift://orders/0')).toBe(0);
  });
});
