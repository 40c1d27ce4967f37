/**
 * Spend rules under concurrency: 200 requests at once against a USD budget that fits 20. The atomic
 * reservation admits at most 20, refuses the rest with 429 `spend_limited`, and the recorded spend never
 * passes the budget (SQLite, and PostgreSQL when BREAKWATER_TEST_DATABASE_URL is set).
 */
import type { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { readSpendState, spendWindowStart, type SpendRule } from '../../src/ai/index.js';
import { FakeClock } from '../../src/core/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import { TEST_DATABASE_URL, describePostgres, testSchemas } from '../support/postgres.js';
import { ask, startGateway, startSim, tempDb, until, useCleanups } from './support.js';

const defer = useCleanups();
const DAY = 86_400_000;
const RULE: SpendRule = { name: 'daily', budgetUsd: 0.002, windowMs: DAY, scope: { by: 'provider' } };
// 50 output tokens at 2 USD per million = 100 micro-USD a request, estimated and real alike: 20 fit in 0.002.
const PRICES = { 'sim/sim-1': { inputPerMTok: 0, outputPerMTok: 2 } };

async function burst(store: Store, clock: FakeClock) {
  const sim = await startSim(defer, { latencyMs: 20 });
  const { client } = await startGateway(defer, { sim }, { clock, store, prices: PRICES, spendRules: [RULE] });
  const results = await Promise.all(
    Array.from({ length: 200 }, () =>
      client.chat.completions
        .create(ask('sim/sim-1', { max_tokens: 50 }))
        .withResponse()
        .then(({ response }) => ({
          status: 200,
          code: '',
          cost: response.headers.get('x-breakwater-cost-usd'),
        }))
        .catch((e: unknown) => ({
          status: (e as APIError).status ?? 0,
          code: String((e as APIError).code),
          cost: null,
        })),
    ),
  );
  const key = `ai:spend:daily:v:sim:${spendWindowStart(clock.now(), DAY)}`;
  return { results, sim, state: readSpendState(await store.counters.get(key)) };
}

function check({ results, sim, state }: Awaited<ReturnType<typeof burst>>): void {
  const served = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  expect(served.length).toBeLessThanOrEqual(20);
  // Estimate and real cost are equal here, so every reservation settles to exactly its size: 20 are served.
  expect(served).toHaveLength(20);
  expect(refused.every((r) => r.status === 429 && r.code === 'spend_limited')).toBe(true);
  expect(served.every((r) => r.cost === '0.0001')).toBe(true);
  expect(sim.requests).toHaveLength(20); // a refused request costs nothing: it never reached the provider
  expect(state).toEqual({ spentMicroUsd: 2000, reservedMicroUsd: 0 });
}

describe('AI gateway spend rules (SQLite)', () => {
  it('200 concurrent requests against a budget for 20: 20 served, 180 spend_limited, spend = budget', async () => {
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store.close());
    check(await burst(store, clock));
  });

  it('when real costs are below the estimates: at least 20 served, spend settled to the real costs, within budget', async () => {
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store.close());
    // 30 real output tokens of the 50 reserved: 60 micro-USD settled for each 100 reserved.
    const sim = await startSim(defer, { latencyMs: 20, usage: { promptTokens: 5, completionTokens: 30 } });
    const { client } = await startGateway(
      defer,
      { sim },
      { clock, store, prices: PRICES, spendRules: [RULE] },
    );
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        client.chat.completions
          .create(ask('sim/sim-1', { max_tokens: 50 }))
          .then(() => 200)
          .catch((e: unknown) => (e as APIError).status),
      ),
    );
    const served = results.filter((s) => s === 200).length;
    expect(served).toBeGreaterThanOrEqual(20);
    expect(served * 60).toBeLessThanOrEqual(2000);
    const key = `ai:spend:daily:v:sim:${spendWindowStart(clock.now(), DAY)}`;
    expect(readSpendState(await store.counters.get(key))).toEqual({
      spentMicroUsd: served * 60,
      reservedMicroUsd: 0,
    });
    expect(results.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
  });

  it('refuses with Retry-After to the end of the window, and without a retry hint when one request is over the budget', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 18)); // 6 hours before the window ends
    const sim = await startSim(defer);
    const { client } = await startGateway(
      defer,
      { sim },
      {
        clock,
        prices: PRICES,
        spendRules: [{ ...RULE, budgetUsd: 0.0001 }],
      },
    );
    await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 }));
    const error = (await client.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 50 }))
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(429);
    expect(error.code).toBe('spend_limited');
    expect(error.headers?.get('retry-after')).toBe(String(6 * 3600));
    expect(error.headers?.get('x-should-retry')).toBe('false');
    const huge = (await client.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 100 }))
      .catch((e: unknown) => e)) as APIError;
    expect(huge.status).toBe(429);
    expect(huge.headers?.get('retry-after')).toBeNull();
    // Two answers of 50 tokens each can cost as much as one of 100: over the budget too, not a wait.
    const twice = (await client.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 50, n: 2 }))
      .catch((e: unknown) => e)) as APIError;
    expect(twice.status).toBe(429);
    expect(twice.headers?.get('retry-after')).toBeNull();
    expect(sim.requests).toHaveLength(1);
  });

  it('needs max_tokens or a ceiling, and a price, when a spend rule applies', async () => {
    const sim = await startSim(defer, { usage: { promptTokens: 10, completionTokens: 10 } });
    const { client } = await startGateway(defer, { sim }, { prices: PRICES, spendRules: [RULE] });
    const noMax = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(noMax.status).toBe(400);
    expect(noMax.code).toBe('max_tokens_required');
    const unpriced = (await client.chat.completions
      .create(ask('sim/other', { max_tokens: 5 }))
      .catch((e: unknown) => e)) as APIError;
    expect(unpriced.status).toBe(400);
    expect(unpriced.code).toBe('model_not_priced');

    const withCeiling = await startGateway(
      defer,
      { sim },
      {
        prices: PRICES,
        spendRules: [RULE],
        maxRequestCostUsd: 0.001,
      },
    );
    const ok = await withCeiling.client.chat.completions.create(ask('sim/sim-1')).withResponse();
    expect(ok.response.headers.get('x-breakwater-cost-usd')).toBe('0.00002');
    expect(sim.requests).toHaveLength(1);
  });

  it('a streamed answer settles from its usage chunk; a stream cut off settles what it carried', async () => {
    const clock = new FakeClock();
    const sim = await startSim(defer, { usage: { promptTokens: 3, completionTokens: 10 } });
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store.close());
    const { client, logs } = await startGateway(
      defer,
      { sim },
      { clock, store, prices: PRICES, spendRules: [RULE] },
    );
    const key = `ai:spend:daily:v:sim:${spendWindowStart(clock.now(), DAY)}`;
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1', { max_tokens: 50 }),
      stream: true,
    });
    for await (const _ of stream) void _;
    expect(readSpendState(await store.counters.get(key))).toEqual({ spentMicroUsd: 20, reservedMicroUsd: 0 });

    sim.faults.patch({ cutMidStream: true });
    const cut = await client.chat.completions.create({
      ...ask('sim/sim-1', { max_tokens: 50 }),
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _ of cut) void _;
      })(),
    ).rejects.toThrow(/broke off/);
    await until(() => logs.length === 2);
    expect(logs[1]).toMatchObject({ outcome: 'stream_error', cost_usd: null });
    // Cut after 5 of its 10 words ("A thoughtful gift says you": 26 bytes, 7 tokens at 4 bytes a token, 2
    // micro-USD each; the prompt is free here), not its whole reservation of 100.
    expect(readSpendState(await store.counters.get(key))).toEqual({
      spentMicroUsd: 20 + 14,
      reservedMicroUsd: 0,
    });
  });
});

describePostgres('AI gateway spend rules')('AI gateway spend rules (PostgreSQL)', () => {
  const schemas = testSchemas('bw_ai_spend');
  it('200 concurrent requests against a budget for 20: 20 served, 180 spend_limited, spend = budget', async () => {
    const clock = new FakeClock();
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: await schemas.create(), clock });
    defer(() => store.close());
    check(await burst(store, clock));
  }, 30_000);
});
