import { describe, expect, it } from 'vitest';
import { describeRedis, unreachableRedis, useRedis } from '../../../test/support/redis.js';
import { BreakwaterError } from '../../core/index.js';
import { RedisSpendStore } from './redis-spend-store.js';
import { spendStoreContract } from './spend-store-contract.js';

const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

describeRedis('spend store tests')('RedisSpendStore', () => {
  const h = useRedis('spend');
  spendStoreContract('redis', {
    open: () => new RedisSpendStore({ redis: h.client(), keyPrefix: h.prefix }),
  });

  it('keeps a window as a hash that expires at the window end on the caller clock', async () => {
    const redis = h.client();
    const spend = new RedisSpendStore({ redis, keyPrefix: h.prefix });
    await spend.reserve('w', 100, 1_000, T0 + HOUR_MS, T0 + HOUR_MS - 30_000);
    expect(await redis.hgetall(`${h.prefix}w`)).toEqual({ s: '0', r: '100' });
    const ttl = await redis.pttl(`${h.prefix}w`);
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
    await spend.settle('w', 100, 64, T0 + HOUR_MS, T0 + HOUR_MS - 20_000);
    expect(await redis.hgetall(`${h.prefix}w`)).toEqual({ s: '64', r: '0' });
    expect(await redis.pttl(`${h.prefix}w`)).toBeLessThanOrEqual(20_000);
  });

  it('two instances (two clients) share one budget: 100 concurrent reservations on each, 20 granted', async () => {
    const a = new RedisSpendStore({ redis: h.client(), keyPrefix: h.prefix });
    const b = new RedisSpendStore({ redis: h.client(), keyPrefix: h.prefix });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).reserve('w', 100, 2_000, T0 + HOUR_MS, T0)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(20);
  });
});

describe('RedisSpendStore when Redis is unreachable', () => {
  it('fails closed: reserve refuses with spend_limited and a retry hint; settle rejects', async () => {
    const redis = await unreachableRedis();
    try {
      const errors: string[] = [];
      const spend = new RedisSpendStore({ redis, onError: (_, key) => errors.push(key) });
      const error = await spend.reserve('w', 100, 1_000, T0 + HOUR_MS, T0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BreakwaterError);
      expect(error).toMatchObject({
        code: 'spend_limited',
        status: 429,
        kind: 'transient',
        retryAfterMs: 1_000,
        details: { reason: 'store_unavailable' },
      });
      await expect(spend.settle('w', 100, 40, T0 + HOUR_MS, T0)).rejects.toThrow();
      expect(errors).toEqual(['w', 'w']);
    } finally {
      redis.disconnect();
    }
  });

  it('rejects bad options naming them', () => {
    expect(() => new RedisSpendStore({} as never)).toThrow('redis must be an ioredis client');
    const redis = { evalsha: () => 0, eval: () => 0, del: () => 0 } as never;
    expect(() => new RedisSpendStore({ redis, timeoutMs: -1 })).toThrow(/timeoutMs/);
  });
});
