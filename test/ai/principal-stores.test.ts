/**
 * A key's own limits and its share of a shared budget live in the gateway's counter store, so they hold
 * across every gateway that shares it: two gateways on one SQLite file, on one PostgreSQL schema (when
 * BREAKWATER_TEST_DATABASE_URL is set), on one Redis (BREAKWATER_TEST_REDIS_URL). The check is the one
 * every step runs (`acquireLimits`: the key's own rules, then the gateway's).
 */
import { describe, expect, it } from 'vitest';
import {
  createAiGateway,
  createRedisLimits,
  type AiGateway,
  type AiGatewayOptions,
  type AiRequest,
} from '../../src/ai/index.js';
import { acquireLimits } from '../../src/ai/step/acquire.js';
import { FakeClock, type BreakwaterError } from '../../src/core/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { TEST_REDIS_URL, describeRedis, useRedis } from '../support/redis.js';
import { keyPrincipal, tempDb, useCleanups } from './support.js';

const defer = useCleanups();
const MINUTE = 60_000;
const DAY = 86_400_000;
const STEP = { name: 'direct', provider: 'p', model: 'm' };
// 100 output tokens at 1 USD per million: every request reserves 100 micro-USD.
const BASE: AiGatewayOptions = {
  providers: { p: { baseUrl: 'http://127.0.0.1:1/v1' } },
  prices: { 'p/m': { inputPerMTok: 0, outputPerMTok: 1 } },
  // 1000 micro-USD shared: a quarter of it, 250, per key in flight (two requests).
  spendRules: [{ name: 'shared', budgetUsd: 0.001, windowMs: DAY, scope: { by: 'provider' } }],
};
const A = keyPrincipal('a', {
  ai: { rateRules: [{ limit: 4, windowMs: MINUTE }], budgets: [{ limitUsd: 0.0005, windowMs: DAY }] },
});
const B = keyPrincipal('b');

function request(principal: typeof A): AiRequest {
  return {
    id: 'r',
    body: { model: 'p/m', messages: [], max_tokens: 100 },
    stream: false,
    includeUsage: false,
    metadata: principal.metadata,
    principal,
    overrides: {},
    signal: new AbortController().signal,
    receivedAt: 0,
    route: null,
  };
}

async function outcome(gateway: AiGateway, principal: typeof A) {
  try {
    return await acquireLimits(STEP, request(principal), gateway.context);
  } catch (error) {
    const e = error as BreakwaterError;
    return `${e.code} ${String(e.details?.refusal ?? e.details?.rule)}`;
  }
}

/** Two gateways over one store: a key's rules and share hold across both. */
async function check(gateways: [AiGateway, AiGateway], clock: FakeClock): Promise<void> {
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => outcome(gateways[i % 2]!, A)));
  const granted = results.filter((r) => typeof r !== 'string');
  const refusals = results.filter((r) => typeof r === 'string').sort();
  // Its own rate rule lets 4 of 10 through; its share of the shared budget holds 2 of them in flight.
  expect(refusals).toEqual([
    ...Array(6).fill(`rate_limited key-rate-fixed-${MINUTE}`),
    ...Array(2).fill('spend_limited share_in_flight'),
  ]);
  expect(granted).toHaveLength(2);
  // Another key: its own share, untouched by A's.
  const b = await Promise.all([outcome(gateways[0], B), outcome(gateways[1], B)]);
  expect(b.every((r) => typeof r !== 'string')).toBe(true);

  // A's own budget (500) counts in the store: 2 settled at 100, then 3 more one at a time, then refused.
  for (const g of granted) if (typeof g !== 'string') await g.settle(100);
  clock.tick(MINUTE); // its rate window is over
  for (let i = 0; i < 3; i++) {
    const g = await outcome(gateways[i % 2]!, A);
    expect(typeof g).not.toBe('string');
    if (typeof g !== 'string') await g.settle(100);
  }
  expect(await outcome(gateways[1], A)).toBe('spend_limited budget_spent');
}

function gateway(options: Partial<AiGatewayOptions>, clock: FakeClock): AiGateway {
  const g = createAiGateway({ ...BASE, ...options, clock });
  defer(() => g.close());
  return g;
}

describe("a key's limits across gateways sharing a store", () => {
  it('SQLite: two gateways on one file', async () => {
    const clock = new FakeClock();
    const path = tempDb(defer, 'breakwater-ai');
    const stores = [await openSqliteStore({ path, clock }), await openSqliteStore({ path, clock })];
    defer(() => Promise.all(stores.map((s) => s.close())));
    await check([gateway({ store: stores[0] }, clock), gateway({ store: stores[1] }, clock)], clock);
  });
});

describePostgres("a key's limits on PostgreSQL")("a key's limits across gateways sharing PostgreSQL", () => {
  const schemas = testSchemas('bw_ai_keys');
  it('two gateways on one schema', async () => {
    const clock = new FakeClock();
    const schema = await schemas.create();
    const stores = [
      await openPostgresStore({ url: TEST_DATABASE_URL, schema, clock }),
      await openPostgresStore({ url: TEST_DATABASE_URL, schema, clock }),
    ];
    defer(() => Promise.all(stores.map((s) => s.close())));
    await check([gateway({ store: stores[0] }, clock), gateway({ store: stores[1] }, clock)], clock);
  }, 30_000);
});

describeRedis("a key's limits on Redis")("a key's limits across gateways sharing Redis", () => {
  const h = useRedis('ai_keys');
  it('two gateways on one Redis (createRedisLimits)', async () => {
    const clock = new FakeClock();
    const instances = [0, 1].map(() => createRedisLimits({ url: TEST_REDIS_URL, keyPrefix: h.prefix }));
    defer(() => Promise.all(instances.map((r) => r.close())));
    expect(await Promise.all(instances.map((r) => r.ready()))).toEqual([true, true]);
    const on = (r: (typeof instances)[number]) =>
      gateway({ rateLimitStore: r.rateLimitStore, spendStore: r.spendStore }, clock);
    await check([on(instances[0]!), on(instances[1]!)], clock);
  });
});
