import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeRedis, unreachableRedis, useRedis } from '../../../test/support/redis.js';
import { FixedWindow, SlidingWindow, TokenBucket } from './algorithms.js';
import type { RedisScriptClient } from './redis-script.js';
import { RedisRateLimitStore } from './redis-store.js';
import { rateLimitStoreContract } from './store-contract.js';

const T0 = Date.UTC(2026, 0, 1);

describeRedis('rate-limit store tests')('RedisRateLimitStore', () => {
  const h = useRedis('rl');
  // Each store ("instance") gets its own client: `another` is a second process on the same Redis.
  rateLimitStoreContract('redis', {
    open: () => new RedisRateLimitStore({ redis: h.client(), keyPrefix: h.prefix }),
    another: async () => new RedisRateLimitStore({ redis: h.client(), keyPrefix: h.prefix }),
  });

  it('keeps state under the prefix, expiring at resetMs; a denial writes nothing', async () => {
    const redis = h.client();
    const store = new RedisRateLimitStore({ redis, keyPrefix: h.prefix });
    const fixed = new FixedWindow({ limit: 2, windowMs: 60_000 });
    await store.consume('f', fixed, 2, T0 + 15_000);
    expect(await redis.hgetall(`${h.prefix}f`)).toEqual({ w: String(T0), c: '2' });
    const ttl = await redis.pttl(`${h.prefix}f`);
    expect(ttl).toBeGreaterThan(40_000);
    expect(ttl).toBeLessThanOrEqual(45_000);
    expect((await store.consume('f', fixed, 1, T0 + 16_000)).allowed).toBe(false);
    expect(await redis.hgetall(`${h.prefix}f`)).toEqual({ w: String(T0), c: '2' });
    expect(await redis.pttl(`${h.prefix}f`)).toBeLessThanOrEqual(ttl);

    const sliding = new SlidingWindow({ limit: 3, windowMs: 10_000 });
    await store.consume('s', sliding, 2, T0 + 1);
    await store.consume('s', sliding, 1, T0 + 2);
    const log = await redis.zrange(`${h.prefix}s`, 0, '-1', 'WITHSCORES');
    expect(log.filter((_, i) => i % 2 === 1)).toEqual([String(T0 + 1), String(T0 + 1), String(T0 + 2)]);
    expect(await redis.pttl(`${h.prefix}s`)).toBeLessThanOrEqual(10_000);

    const bucket = new TokenBucket({ capacity: 5, refillTokens: 1.5, refillIntervalMs: 700 });
    await store.consume('b', bucket, 0.7, T0);
    await store.consume('b', bucket, 0.1, T0 + 3);
    // Fractional tokens survive the round trip exactly: what the algorithm computes, digit for digit.
    const tokens = Math.min(5, 5 - 0.7 + (3 * 1.5) / 700) - 0.1;
    expect(Number((await redis.hget(`${h.prefix}b`, 't'))!)).toBe(tokens);
  });

  it('falls back to EVAL when the server answers NOSCRIPT', async () => {
    const redis = h.client();
    const evalsha = vi.fn(() => Promise.reject(new Error('NOSCRIPT No matching script. Please use EVAL.')));
    const client = {
      evalsha,
      eval: (...args: Parameters<typeof redis.eval>) => redis.eval(...args),
      del: (...keys: string[]) => redis.del(...keys),
    } as unknown as RedisScriptClient;
    const store = new RedisRateLimitStore({ redis: client, keyPrefix: h.prefix });
    const fixed = new FixedWindow({ limit: 1, windowMs: 1000 });
    expect(await store.consume('k', fixed, 1, T0)).toEqual({
      allowed: true,
      limit: 1,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: 0,
    });
    expect((await store.consume('k', fixed, 1, T0)).allowed).toBe(false);
    expect(evalsha).toHaveBeenCalledTimes(2);
  });
});

describe('RedisRateLimitStore when Redis is unreachable or slow', () => {
  const clients: { disconnect(): void }[] = [];
  afterEach(() => {
    vi.useRealTimers();
    for (const c of clients.splice(0)) c.disconnect();
  });
  const fixed = new FixedWindow({ limit: 5, windowMs: 60_000 });

  it("'deny' (the default) answers a denied decision with a retry hint, and reports the error", async () => {
    const redis = await unreachableRedis();
    clients.push(redis);
    const errors: string[] = [];
    const store = new RedisRateLimitStore({ redis, onError: (_, key) => errors.push(key) });
    expect(await store.consume('k', fixed, 1, T0)).toEqual({
      allowed: false,
      limit: 5,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: 1000,
    });
    expect(errors).toEqual(['k']);
  });

  it("'allow' lets the request through", async () => {
    const redis = await unreachableRedis();
    clients.push(redis);
    const store = new RedisRateLimitStore({ redis, onUnavailable: 'allow' });
    expect(await store.consume('k', fixed, 1, T0)).toEqual({
      allowed: true,
      limit: 5,
      remaining: 0,
      resetMs: 0,
      retryAfterMs: 0,
    });
  });

  it('a client that buffers commands while it reconnects is still bounded by timeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const redis = await unreachableRedis({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    clients.push(redis);
    const store = new RedisRateLimitStore({ redis, timeoutMs: 250, unavailableRetryAfterMs: 2000 });
    const decision = store.consume('k', fixed, 1, T0);
    await vi.advanceTimersByTimeAsync(250);
    expect(await decision).toEqual({
      allowed: false,
      limit: 5,
      remaining: 0,
      resetMs: 2000,
      retryAfterMs: 2000,
    });
  });

  it('a Redis that never answers: the decision comes at timeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const never = { evalsha: () => new Promise(() => {}), eval: () => new Promise(() => {}), del: () => 0 };
    const store = new RedisRateLimitStore({
      redis: never as unknown as RedisScriptClient,
      timeoutMs: 50,
      onUnavailable: 'allow',
    });
    let settled = false;
    const decision = Promise.resolve(store.consume('k', fixed, 1, T0)).finally(() => (settled = true));
    await vi.advanceTimersByTimeAsync(49);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await decision).allowed).toBe(true);
  });

  it('rejects bad options and bad calls with errors naming them', async () => {
    const redis = { evalsha: () => 0, eval: () => 0, del: () => 0 } as unknown as RedisScriptClient;
    expect(() => new RedisRateLimitStore({} as never)).toThrow('redis must be an ioredis client');
    expect(() => new RedisRateLimitStore({ redis, onUnavailable: 'open' as never })).toThrow(/onUnavailable/);
    expect(() => new RedisRateLimitStore({ redis, timeoutMs: 0 })).toThrow(/timeoutMs/);
    const store = new RedisRateLimitStore({ redis });
    await expect(store.consume('', fixed, 1, T0)).rejects.toThrow(RangeError);
    await expect(store.consume('k', fixed, 6, T0)).rejects.toThrow(RangeError);
    const custom = Object.assign(Object.create(FixedWindow.prototype) as FixedWindow, fixed, {
      config: { type: 'leaky' },
    });
    await expect(store.consume('k', custom, 1, T0)).rejects.toThrow('unsupported algorithm type "leaky"');
  });
});
