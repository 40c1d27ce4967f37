/**
 * GiftGenius with shared breakers (docs/deploy.md#sharing-breaker-state): two real gateways (`startGateway`)
 * on one SQLite file, both with `sharedBreakers` (what `serve --shared-breakers` sets), in front of one
 * failing gift service. The gift breaker one gateway opens reaches the other through the store within its
 * refresh (1 s), which then answers `circuit_open` without a request to the service.
 */
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/index.js';
import { connect, startBackends, startGiftGenius, tempDb, until, useCleanups } from './support.js';

const defer = useCleanups();

/** The gift upstream's breaker state in `gateway`. */
function giftBreaker(gateway: Gateway): string | undefined {
  return gateway.parts.upstreams?.find((u) => u.name === 'gift')?.breaker?.state().state;
}

describe('GiftGenius gateways sharing their breakers through the store', () => {
  it('the gift breaker opened by one gateway makes the other fail fast, sending nothing', async () => {
    const backends = await startBackends(defer);
    const dbPath = tempDb(defer);
    const options = { dbPath, gateway: { sharedBreakers: true } };
    const first = await startGiftGenius(defer, backends, options);
    const second = await startGiftGenius(defer, backends, options);
    backends.services.gift.faults.set({ errorRate: 1 }); // every gift request: 503

    const one = await connect(defer, first.mcpUrl);
    const request = { interests: ['coffee'], budget_usd: 40 };
    // Two attempts per call (one retry): the fifth failure opens the gift breaker (5 failures / 30 s).
    for (let i = 0; i < 3; i++) expect((await one.call('suggest_gifts', request)).isError).toBe(true);
    expect(giftBreaker(first)).toBe('open');
    expect(backends.giftProxy.requests()).toBe(5);

    await until(() => giftBreaker(second) === 'open', 'the second gateway to take the open breaker');
    const two = await connect(defer, second.mcpUrl);
    const answer = await two.call('suggest_gifts', request);
    expect(answer.structuredContent.error).toMatchObject({
      code: 'gift_service_unavailable',
      category: 'circuit_open',
    });
    expect(backends.giftProxy.requests()).toBe(5);
    // Commerce and analytics were not touched: their breakers stay closed in both.
    for (const gateway of [first, second]) {
      expect(
        gateway.parts.upstreams?.filter((u) => u.name !== 'gift').map((u) => u.breaker?.state().state),
      ).toEqual(['closed', 'closed']);
    }
  }, 30_000);
});
