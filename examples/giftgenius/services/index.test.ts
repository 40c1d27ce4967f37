import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PORTS, startGiftGeniusServices, startGiftService } from './index.js';
import type { GiftGeniusServices } from './index.js';
import { call } from './testing.js';

const running: GiftGeniusServices[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((services) => services.close()));
});

async function start(
  options: Parameters<typeof startGiftGeniusServices>[0] = {},
): Promise<GiftGeniusServices> {
  const services = await startGiftGeniusServices(options);
  running.push(services);
  return services;
}

describe('startGiftGeniusServices', () => {
  it('starts the three services on free loopback ports, each answering its own routes', async () => {
    const services = await start();
    const urls = [services.gift.url, services.commerce.url, services.analytics.url];
    expect(new Set(urls).size).toBe(3);
    for (const url of urls) expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await call('GET', `${services.gift.url}/products/p002`)).body.name).toBe(
      'Deluxe Pour-Over Coffee Kit',
    );
    const order = await call(
      'POST',
      `${services.commerce.url}/orders`,
      { product_id: 'p002', quantity: 1, customer_id: 'c' },
      { 'idempotency-key': 'k' },
    );
    expect([order.status, order.body.amount_usd]).toEqual([201, 49.99]);
    expect((await call('POST', `${services.analytics.url}/events`, { name: 'x' })).status).toBe(202);
    // Each service has its own switch.
    services.gift.faults.set({ errorRate: 1 });
    expect(services.commerce.faults.get().errorRate).toBe(0);
    expect((await call('GET', `${services.commerce.url}/orders`)).status).toBe(200);
  });

  it('shares the injected random source and closes all three', async () => {
    const services = await start({ random: () => 0.1 });
    services.analytics.faults.set({ errorRate: 0.2 });
    expect((await call('POST', `${services.analytics.url}/events`, { name: 'x' })).status).toBe(503);
    await services.close();
    await expect(fetch(`${services.gift.url}/products/p001`)).rejects.toThrow(TypeError);
    await expect(fetch(`${services.commerce.url}/orders`)).rejects.toThrow(TypeError);
    await expect(fetch(`${services.analytics.url}/events`)).rejects.toThrow(TypeError);
  });

  it('names the service and port when a port is taken, and leaves nothing running', async () => {
    const first = await start();
    const port = Number(new URL(first.commerce.url).port);
    // A port known to be free, for the gift service that starts before commerce fails.
    const probe = await startGiftService();
    const giftPort = Number(new URL(probe.url).port);
    await probe.close();
    await expect(start({ ports: { gift: giftPort, commerce: port } })).rejects.toThrow(
      `The commerce service cannot listen on 127.0.0.1:${port}: the port is in use.`,
    );
    // The gift service of the failed start was closed: its port can be taken again.
    const again = await startGiftService({ port: giftPort });
    await again.close();
  });

  it('documents the fixed ports main.ts uses', () => {
    expect(DEFAULT_PORTS).toEqual({ gift: 8791, commerce: 8792, analytics: 8793 });
  });
});
