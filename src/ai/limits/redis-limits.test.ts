import { describe, expect, it } from 'vitest';
import {
  TEST_REDIS_URL,
  closedPort,
  describeRedis,
  unreachableRedis,
  useRedis,
} from '../../../test/support/redis.js';
import { FakeClock, type BreakwaterError } from '../../core/index.js';
import { createAiGateway, type AiGatewayOptions } from '../index.js';
import { PriceTable } from '../pricing.js';
import { AiLimits, type RateRule, type SpendRule } from './limits.js';
import { MemoryCounterStore } from './memory-counters.js';
import { createRedisLimits, type RedisLimits } from './redis-limits.js';
import { expectOptionsError } from '../../../test/support/options.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const PROVIDERS: AiGatewayOptions['providers'] = { p: { baseUrl: 'http://127.0.0.1:1/v1' } };
const PRICES = { 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } };
// 100 output tokens at 1 USD/MTok: an estimate of 100 micro-USD.
const ESTIMATE = { maxOutputTokens: 100, promptBytes: 10, messageCount: 1 };
const TARGET = { provider: 'p', model: 'm', metadata: { user: 'u1' } };
const RATE: RateRule = {
  name: 'r',
  limit: 30,
  windowMs: MINUTE_MS,
  technique: 'sliding',
  scope: { by: 'provider' },
};
// 0.002 USD = 2 000 micro-USD: room for exactly 20 estimates of 100.
const SPEND: SpendRule = { name: 's', budgetUsd: 0.002, windowMs: HOUR_MS, scope: { by: 'provider' } };

function aiLimits(redis: RedisLimits, clock: FakeClock, rules: { rate?: RateRule[]; spend?: SpendRule[] }) {
  return new AiLimits({
    rateRules: rules.rate ?? [],
    spendRules: rules.spend ?? [],
    rateStore: redis.rateLimitStore,
    spendStore: redis.spendStore,
    counters: new MemoryCounterStore(clock),
    prices: new PriceTable(PRICES),
    ceilingMicroUsd: undefined,
    clock,
  });
}

async function outcome(p: Promise<unknown>): Promise<'granted' | string> {
  try {
    await p;
    return 'granted';
  } catch (error) {
    return (error as BreakwaterError).code;
  }
}

describeRedis('limits tests')('createRedisLimits and the AI gateway on Redis', () => {
  const h = useRedis('ai');

  it('a rate rule of 30 per minute shared by 3 instances: 30 of 90 concurrent requests pass, not 90', async () => {
    const clock = new FakeClock();
    const instances = [0, 1, 2].map(() => createRedisLimits({ url: TEST_REDIS_URL, keyPrefix: h.prefix }));
    try {
      expect(await Promise.all(instances.map((r) => r.ready()))).toEqual([true, true, true]);
      const limits = instances.map((r) => aiLimits(r, clock, { rate: [RATE] }));
      const results = await Promise.all(
        Array.from({ length: 90 }, (_, i) => outcome(limits[i % 3]!.acquire(TARGET, ESTIMATE))),
      );
      expect(results.filter((r) => r === 'granted')).toHaveLength(30);
      expect(results.filter((r) => r === 'rate_limited')).toHaveLength(60);
    } finally {
      await Promise.all(instances.map((r) => r.close()));
    }
    expect(instances.map((r) => r.redis.status)).toEqual(['end', 'end', 'end']);
  });

  it('spend through createAiGateway({ spendStore }): 200 concurrent requests, 20 granted, settled to the real cost', async () => {
    const clock = new FakeClock();
    const redis = createRedisLimits({ redis: h.client(), keyPrefix: h.prefix });
    const gateway = createAiGateway({
      providers: PROVIDERS,
      prices: PRICES,
      spendRules: [SPEND],
      rateLimitStore: redis.rateLimitStore,
      spendStore: redis.spendStore,
      clock,
    });
    try {
      const attempts = await Promise.allSettled(
        Array.from({ length: 200 }, () => gateway.context.limits.acquire(TARGET, ESTIMATE)),
      );
      const grants = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
      expect(grants).toHaveLength(20);
      expect(
        attempts.filter(
          (a) => a.status === 'rejected' && (a.reason as BreakwaterError).code === 'spend_limited',
        ),
      ).toHaveLength(180);
      const key = `${h.prefix}ai:spend:s:v:p:${clock.now()}`;
      expect(await redis.redis.hgetall(key)).toEqual({ s: '0', r: '2000' });
      await Promise.all(grants.map((g) => g.settle(37)));
      expect(await redis.redis.hgetall(key)).toEqual({ s: '740', r: '0' });
    } finally {
      await gateway.close();
      await redis.close(); // the client is the caller's: left open
      expect(redis.redis.status).toBe('ready');
    }
  });
});

describe('createRedisLimits when Redis is unreachable', () => {
  it("rate 'deny' refuses with rate_limited and a 1 s retry hint", async () => {
    const client = await unreachableRedis();
    try {
      const limits = aiLimits(createRedisLimits({ redis: client }), new FakeClock(), { rate: [RATE] });
      const error = (await limits.acquire(TARGET, ESTIMATE).catch((e: unknown) => e)) as BreakwaterError;
      expect(error).toMatchObject({ code: 'rate_limited', retryAfterMs: 1_000 });
    } finally {
      client.disconnect();
    }
  });

  it("rate 'allow' lets the request through; spend still fails closed", async () => {
    const client = await unreachableRedis();
    try {
      const redis = createRedisLimits({ redis: client, onUnavailable: 'allow' });
      const clock = new FakeClock();
      const rateOnly = aiLimits(redis, clock, { rate: [RATE] });
      expect((await rateOnly.acquire(TARGET, ESTIMATE)).rateHeaders).toEqual({
        'x-ratelimit-limit': '30',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': '0',
      });
      const both = aiLimits(redis, clock, { rate: [RATE], spend: [SPEND] });
      const error = (await both.acquire(TARGET, ESTIMATE).catch((e: unknown) => e)) as BreakwaterError;
      expect(error).toMatchObject({
        code: 'spend_limited',
        retryAfterMs: 1_000,
        details: { reason: 'store_unavailable' },
      });
    } finally {
      client.disconnect();
    }
  });

  it('a client made from a url of a closed port: decisions fail in the configured direction; close() ends it', async () => {
    const errors: unknown[] = [];
    const redis = createRedisLimits({
      url: `redis://127.0.0.1:${await closedPort()}`,
      timeoutMs: 200,
      onError: (e) => errors.push(e),
    });
    const limits = aiLimits(redis, new FakeClock(), { rate: [RATE] });
    expect(await redis.ready()).toBe(false);
    expect(await outcome(limits.acquire(TARGET, ESTIMATE))).toBe('rate_limited');
    await redis.close();
    expect(errors.length).toBeGreaterThan(0);
    // Closed: later decisions still answer, in the configured direction.
    expect(await outcome(limits.acquire(TARGET, ESTIMATE))).toBe('rate_limited');
  });

  it('rejects bad options naming them', async () => {
    expect(() => createRedisLimits({} as never)).toThrow(
      new RangeError('createRedisLimits: url and redis must be exactly one given, got []'),
    );
    expect(() => createRedisLimits({ url: 'http://x' })).toThrow(
      new RangeError("createRedisLimits: url must be a redis:// or rediss:// URL, got 'http://x'"),
    );
    expectOptionsError(
      () =>
        createRedisLimits({
          url: 'redis://127.0.0.1:1',
          redis: {} as never,
          keyPrefix: 1 as never,
          timeoutMs: 0,
          onError: 'log' as never,
        }),
      {
        owner: 'createRedisLimits',
        options: ['redis', 'keyPrefix', 'timeoutMs', 'onError', 'url and redis'],
        message:
          'createRedisLimits: redis must be an ioredis client, got an object; keyPrefix must be a string, got 1; ' +
          "timeoutMs must be an integer >= 1, got 0; onError must be a function, got 'log'; url and redis must " +
          "be exactly one given, got ['url', 'redis']",
      },
    );
    const client = await unreachableRedis();
    try {
      expect(() => createRedisLimits({ redis: client, onUnavailable: 'open' as never })).toThrow(
        /onUnavailable/,
      );
      expect(() => createRedisLimits({ redis: client, timeoutMs: 0 })).toThrow(/timeoutMs/);
    } finally {
      client.disconnect();
    }
    expect(() => createAiGateway({ providers: PROVIDERS, spendStore: { reserve: 1 } as never })).toThrow(
      'createAiGateway: spendStore must be a SpendStore',
    );
  });
});
