/**
 * Rate rules over real HTTP with a fake clock on the gateway (and on the store): fixed versus sliding at a
 * window boundary, the 429 and its headers, scoping by metadata, and that a refused request never reaches
 * the provider.
 */
import type { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.js';
import type { RateRule } from '../../src/ai/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { ask, startGateway, startSim, tempDb, useCleanups } from './support.js';

const defer = useCleanups();
const MINUTE = 60_000;

function rule(technique: 'fixed' | 'sliding'): RateRule {
  return { name: 'per-model', limit: 10, windowMs: 10 * MINUTE, technique, scope: { by: 'model' } };
}

type Backend = 'memory' | 'sqlite';

async function gatewayWith(technique: 'fixed' | 'sliding', backend: Backend, clock: FakeClock) {
  const sim = await startSim(defer);
  let store;
  if (backend === 'sqlite') {
    store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store!.close());
  }
  const running = await startGateway(defer, { sim }, { clock, rateRules: [rule(technique)], store });
  return { sim, ...running };
}

/** Sends `n` requests one after another; resolves the statuses. */
async function burst(
  client: Awaited<ReturnType<typeof gatewayWith>>['client'],
  n: number,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const status = await client.chat.completions
      .create(ask('sim/sim-1'))
      .then(() => 200)
      .catch((e: unknown) => (e as APIError).status ?? 0);
    statuses.push(status);
  }
  return statuses;
}

describe.each<Backend>(['memory', 'sqlite'])('AI gateway rate rules (%s counters)', (backend) => {
  it('fixed: 10 at minute 9 and 10 at minute 11 all pass (the boundary at minute 10 resets the count)', async () => {
    const clock = new FakeClock(); // 2026-01-01T00:00Z: aligned to 10 minutes
    const { client, sim } = await gatewayWith('fixed', backend, clock);
    clock.tick(9 * MINUTE);
    expect(await burst(client, 10)).toEqual(Array(10).fill(200));
    clock.tick(2 * MINUTE);
    expect(await burst(client, 10)).toEqual(Array(10).fill(200));
    expect(sim.requests).toHaveLength(20);
  });

  it('sliding: the second 10 are refused with 429 rate_limited, Retry-After and x-ratelimit headers', async () => {
    const clock = new FakeClock();
    const { client, sim, logs } = await gatewayWith('sliding', backend, clock);
    clock.tick(9 * MINUTE);
    expect(await burst(client, 10)).toEqual(Array(10).fill(200));
    clock.tick(2 * MINUTE);
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(429);
    expect(error.code).toBe('rate_limited');
    // The 10 of minute 9 leave the trailing window at minute 19: 8 minutes from now.
    expect(error.headers?.get('retry-after')).toBe('480');
    expect(error.headers?.get('x-ratelimit-limit')).toBe('10');
    expect(error.headers?.get('x-ratelimit-remaining')).toBe('0');
    expect(error.headers?.get('x-ratelimit-reset')).toBe('480');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(await burst(client, 9)).toEqual(Array(9).fill(429));
    expect(sim.requests).toHaveLength(10); // refused requests never reached the provider
    expect(logs.at(-1)).toMatchObject({ outcome: 'rate_limited', status: 429, attempts: 0, provider: 'sim' });

    clock.tick(8 * MINUTE);
    expect(await burst(client, 1)).toEqual([200]);
  });
});

describe('AI gateway rate rules: scopes', () => {
  it('metadata key: one counter per value; requests without the key share one', async () => {
    const clock = new FakeClock();
    const sim = await startSim(defer);
    const { client } = await startGateway(
      defer,
      { sim },
      {
        clock,
        rateRules: [
          {
            name: 'per-user',
            limit: 1,
            windowMs: MINUTE,
            technique: 'fixed',
            scope: { by: 'metadata', key: 'user' },
          },
        ],
      },
    );
    const send = (metadata?: string) =>
      client.chat.completions
        .create(
          ask('sim/sim-1'),
          metadata === undefined ? {} : { headers: { 'x-breakwater-metadata': metadata } },
        )
        .then(() => 200)
        .catch((e: unknown) => (e as APIError).status);
    expect(await send('{"user":"alice"}')).toBe(200);
    expect(await send('{"user":"bob"}')).toBe(200);
    expect(await send('{"user":"alice"}')).toBe(429);
    expect(await send()).toBe(200);
    expect(await send('{"team":"x"}')).toBe(429);
  });

  it('metadata value: only requests with that value are counted; the headers show the rule on success', async () => {
    const clock = new FakeClock();
    const sim = await startSim(defer);
    const { client } = await startGateway(
      defer,
      { sim },
      {
        clock,
        rateRules: [
          {
            name: 'free-tier',
            limit: 2,
            windowMs: MINUTE,
            technique: 'sliding',
            scope: { by: 'metadata', key: 'tier', value: 'free' },
          },
        ],
      },
    );
    const free = { headers: { 'x-breakwater-metadata': '{"tier":"free"}' } };
    const first = await client.chat.completions.create(ask('sim/sim-1'), free).withResponse();
    expect(first.response.headers.get('x-ratelimit-limit')).toBe('2');
    expect(first.response.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(first.response.headers.get('x-ratelimit-reset')).toBe('60');
    await client.chat.completions.create(ask('sim/sim-1'), free);
    const third = await client.chat.completions.create(ask('sim/sim-1'), free).catch((e: unknown) => e);
    expect((third as APIError).status).toBe(429);
    const paid = await client.chat.completions
      .create(ask('sim/sim-1'), { headers: { 'x-breakwater-metadata': '{"tier":"paid"}' } })
      .withResponse();
    expect(paid.response.status).toBe(200);
    expect(paid.response.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('provider scope with a value counts only that provider', async () => {
    const clock = new FakeClock();
    const a = await startSim(defer);
    const b = await startSim(defer);
    const { client } = await startGateway(
      defer,
      { a, b },
      {
        clock,
        rateRules: [
          {
            name: 'a-only',
            limit: 1,
            windowMs: MINUTE,
            technique: 'fixed',
            scope: { by: 'provider', value: 'a' },
          },
        ],
      },
    );
    const status = (model: string) =>
      client.chat.completions
        .create(ask(model))
        .then(() => 200)
        .catch((e: unknown) => (e as APIError).status);
    expect(await status('a/m')).toBe(200);
    expect(await status('a/other')).toBe(429);
    expect(await status('b/m')).toBe(200);
    expect(await status('b/m')).toBe(200);
  });
});
