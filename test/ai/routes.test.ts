/**
 * Route flows end to end: each node type over real HTTP with the official `openai` client, routes stored
 * and deployed in a SQLite store and resolved by the store-backed resolver. Metadata travels in the
 * `x-breakwater-metadata` header; the step that served is read from `x-breakwater-step`.
 */
import { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { hashUnit, type RouteNode } from '../../src/ai/routes/index.js';
import { FakeClock } from '../../src/core/index.js';
import { deploy, routeGateway, seeded, sqliteStore, step, withMetadata } from './routes-support.js';
import { ask, startSim, useCleanups } from './support.js';

const defer = useCleanups();

type Client = Awaited<ReturnType<typeof routeGateway>>['client'];

/** Sends one request to `dynamic/<route>`; resolves the headers that matter, or the error. */
async function send(
  client: Client,
  route: string,
  metadata?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ step: string | null; route: string | null; attempts: string | null; cost: string | null }> {
  const { response } = await client.chat.completions
    .create(ask(`dynamic/${route}`, extra), metadata === undefined ? {} : withMetadata(metadata))
    .withResponse();
  return {
    step: response.headers.get('x-breakwater-step'),
    route: response.headers.get('x-breakwater-route'),
    attempts: response.headers.get('x-breakwater-attempts'),
    cost: response.headers.get('x-breakwater-cost-usd'),
  };
}

async function failure(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

/** Runs `count` tasks, `concurrency` at a time. */
async function pooled<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

describe('route flows', () => {
  it('a model step serves with its own name, model and the route label <name>@<version>', async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'gift-ideas', step('main', { model: 'sim-large', maxAttempts: 1 }));
    const { client, logs } = await routeGateway(defer, { sim }, store);
    const { data, response } = await client.chat.completions.create(ask('dynamic/gift-ideas')).withResponse();
    expect(data.choices[0]!.message.content).toBeTruthy();
    expect(response.headers.get('x-breakwater-route')).toBe('gift-ideas@1');
    expect(response.headers.get('x-breakwater-step')).toBe('main');
    expect(response.headers.get('x-breakwater-model')).toBe('sim-large');
    expect(sim.requests[0]!.model).toBe('sim-large');
    expect(logs[0]).toMatchObject({ route: 'gift-ideas@1', step: 'main', model: 'sim-large', status: 200 });

    const missing = await failure(client.chat.completions.create(ask('dynamic/nope')));
    expect(missing.status).toBe(404);
  });

  it('conditional: the first branch whose condition holds for the metadata, else the default', async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    const route: RouteNode = {
      type: 'conditional',
      branches: [
        { when: { tier: 'pro' }, then: step('pro') },
        { when: { country: { $in: ['FR', 'BE'] }, age: { $gte: 18 } }, then: step('eu-adult') },
        {
          when: { $or: [{ beta: true }, { cohort: { $exists: true, $ne: 'control' } }] },
          then: step('beta'),
        },
        { when: { tier: { $nin: ['free', 'trial'] }, score: { $lt: 0.5 } }, then: step('low-score') },
        {
          when: { $and: [{ since: { $gt: '2025-12-31' } }, { since: { $lte: '2026-06-30' } }] },
          then: step('h1'),
        },
      ],
      default: step('standard'),
    };
    await deploy(store, 'triage', route);
    const { client } = await routeGateway(defer, { sim }, store);
    const cases: [Record<string, unknown> | undefined, string][] = [
      [{ tier: 'pro', country: 'FR', age: 40 }, 'pro'], // the first that holds wins
      [{ country: 'FR', age: 30 }, 'eu-adult'],
      [{ country: 'FR', age: 17 }, 'standard'],
      [{ country: 'DE', age: 30 }, 'standard'],
      [{ age: '30', country: 'BE' }, 'standard'], // "30" is a string: $gte 18 compares numbers only
      [{ beta: true }, 'beta'],
      [{ beta: 'true' }, 'standard'], // $eq is strict
      [{ cohort: 'b' }, 'beta'],
      [{ cohort: 'control' }, 'standard'],
      [{ cohort: null }, 'beta'], // present (null), and not "control"
      [{ tier: 'gold', score: 0.2 }, 'low-score'],
      [{ score: 0.2 }, 'low-score'], // $nin holds when the key is absent
      [{ tier: 'free', score: 0.2 }, 'standard'],
      [{ since: '2026-03-01' }, 'h1'],
      [{ since: '2026-07-01' }, 'standard'],
      [{}, 'standard'],
      [undefined, 'standard'], // no header at all
    ];
    for (const [metadata, expected] of cases) {
      const { step: served } = await send(client, 'triage', metadata);
      expect({ metadata, served }).toEqual({ metadata, served: expected });
    }
  });

  it('conditional without a default: no matching branch is a 400 naming the reason', async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'vip-only', {
      type: 'conditional',
      branches: [{ when: { vip: true }, then: step('vip') }],
    });
    const { client } = await routeGateway(defer, { sim }, store);
    expect((await send(client, 'vip-only', { vip: true })).step).toBe('vip');
    const error = await failure(send(client, 'vip-only', { vip: false }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('no_matching_branch');
    expect(error.headers?.get('content-type')).toContain('application/problem+json');
    expect(sim.requests).toHaveLength(1);
  });

  it('split: 90/10 at random over many requests, within tolerance', async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'ab', {
      type: 'split',
      splits: [
        { weight: 90, then: step('a') },
        { weight: 10, then: step('b') },
      ],
    });
    const { client } = await routeGateway(defer, { sim }, store, { gateway: { random: seeded(7) } });
    const served = await pooled(500, 20, async () => (await send(client, 'ab')).step);
    const a = served.filter((s) => s === 'a').length;
    expect(a + served.filter((s) => s === 'b').length).toBe(500);
    // Expected 450; a binomial standard deviation is 6.7, so ±25 is beyond 3.7 of them.
    expect(a).toBeGreaterThanOrEqual(425);
    expect(a).toBeLessThanOrEqual(475);
  });

  it('split on a metadata key: 90/10 over many users, and each user always on the same side', async () => {
    const sim = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'ab', {
      type: 'split',
      key: 'user',
      splits: [
        { weight: 90, then: step('a') },
        { weight: 10, then: step('b') },
      ],
    });
    // Math.random for the unkeyed case: a keyed request must not depend on it.
    const { client } = await routeGateway(defer, { sim }, store);
    const users = Array.from({ length: 500 }, (_, i) => `user-${i}`);
    const first = await pooled(
      users.length,
      20,
      async (i) => (await send(client, 'ab', { user: users[i] })).step,
    );
    const a = first.filter((s) => s === 'a').length;
    expect(a).toBeGreaterThanOrEqual(425);
    expect(a).toBeLessThanOrEqual(475);
    // The same users again, twice, in another order: every one lands where it landed the first time.
    for (let round = 0; round < 2; round++) {
      const order = users.map((_, i) => (i * 37 + round * 11) % users.length);
      const again = await pooled(order.length, 20, async (k) => {
        const i = order[k]!;
        return { i, served: (await send(client, 'ab', { user: users[i] })).step };
      });
      for (const { i, served } of again) expect(served).toBe(first[i]);
    }
    // The side is the SHA-256 of the seed (default `<route>:<node path>`) and the value's JSON, so a number
    // and its string are different values of the key.
    for (const user of [0, '0', 10, '10']) {
      const side = hashUnit('ab:$', JSON.stringify(user)) * 100 < 90 ? 'a' : 'b';
      expect((await send(client, 'ab', { user })).step).toBe(side);
    }
    expect((await send(client, 'ab', { user: 0 })).step).not.toBe(
      (await send(client, 'ab', { user: '0' })).step,
    );
  });

  it('limit (spend): when the budget is spent the route diverts to the cheaper model instead of refusing', async () => {
    const sim = await startSim(defer, { usage: { promptTokens: 10, completionTokens: 10 } });
    const clock = new FakeClock();
    const store = await sqliteStore(defer, clock);
    await deploy(store, 'budgeted', {
      type: 'limit',
      rule: {
        kind: 'spend',
        name: 'daily',
        budgetUsd: 0.0015,
        windowMs: 86_400_000,
        scope: { by: 'provider' },
      },
      then: step('big', { model: 'sim-big' }),
      else: step('small', { model: 'sim-small' }),
    });
    const { client, logs } = await routeGateway(defer, { sim }, store, {
      resolver: { clock },
      gateway: {
        clock,
        prices: {
          'sim/sim-big': { inputPerMTok: 10, outputPerMTok: 30 },
          'sim/sim-small': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
        },
      },
    });
    // Reservation of a big request: (45 bytes + 4 + 3) × 10 + 10 max_tokens × 30 = 820 µUSD; its real cost
    // 10 × 10 + 10 × 30 = 400 µUSD. Budget 1500: 0 + 820 fits, 400 + 820 fits, 800 + 820 does not.
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await send(client, 'budgeted', undefined, { max_tokens: 10 }));
    expect(results.map((r) => r.step)).toEqual(['big', 'big', 'small', 'small']);
    expect(results.map((r) => r.cost)).toEqual(['0.0004', '0.0004', '0.000005', '0.000005']);
    expect(results[2]!.attempts).toBe('1');
    expect(logs[2]).toMatchObject({ step: 'small', model: 'sim-small', failed_steps: ['big:spend_limited'] });
    expect(sim.requests.map((r) => r.model)).toEqual(['sim-big', 'sim-big', 'sim-small', 'sim-small']);

    // The next day the budget is back.
    clock.tick(86_400_000);
    expect((await send(client, 'budgeted', undefined, { max_tokens: 10 })).step).toBe('big');
  });

  it('limit (rate, per user) without else: over the limit is the 429, and never reaches the provider', async () => {
    const sim = await startSim(defer);
    const clock = new FakeClock();
    const store = await sqliteStore(defer, clock);
    await deploy(store, 'metered', {
      type: 'fallback',
      chain: [
        {
          type: 'limit',
          rule: {
            kind: 'rate',
            name: 'per-user',
            limit: 2,
            windowMs: 60_000,
            technique: 'fixed',
            scope: { by: 'metadata', key: 'user' },
          },
          then: step('premium'),
          else: step('basic'),
        },
      ],
    });
    await deploy(store, 'strict', {
      type: 'limit',
      rule: {
        kind: 'rate',
        name: 'per-user',
        limit: 1,
        windowMs: 60_000,
        technique: 'fixed',
        scope: { by: 'metadata', key: 'user' },
      },
      then: step('premium'),
    });
    const { client } = await routeGateway(defer, { sim }, store, { resolver: { clock }, gateway: { clock } });
    const alice = [];
    for (let i = 0; i < 3; i++) alice.push((await send(client, 'metered', { user: 'alice' })).step);
    expect(alice).toEqual(['premium', 'premium', 'basic']);
    expect((await send(client, 'metered', { user: 'bob' })).step).toBe('premium');

    expect((await send(client, 'strict', { user: 'carol' })).step).toBe('premium');
    const before = sim.requests.length;
    const refused = await failure(send(client, 'strict', { user: 'carol' }));
    expect(refused.status).toBe(429);
    expect(refused.headers?.get('retry-after')).toBe('60');
    expect(refused.headers?.get('x-ratelimit-limit')).toBe('1');
    expect((refused.error as { type?: string }).type).toBe('rate_limited');
    expect(sim.requests).toHaveLength(before);
  });

  it('fallback: a failing step, then a conditional with no match, hand over to the next node', async () => {
    const down = await startSim(defer, { errorRate: 1 });
    const up = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'resilient', {
      type: 'fallback',
      chain: [
        step('primary', { provider: 'down', maxAttempts: 2, retryDelayMs: 0 }),
        { type: 'conditional', branches: [{ when: { vip: true }, then: step('vip', { provider: 'up' }) }] },
        step('backup', { provider: 'up' }),
      ],
    });
    await deploy(store, 'doomed', {
      type: 'fallback',
      chain: [
        step('one', { provider: 'down', maxAttempts: 1 }),
        step('two', { provider: 'down', maxAttempts: 1 }),
      ],
    });
    const { client, logs } = await routeGateway(defer, { down, up }, store);

    const plain = await send(client, 'resilient');
    expect(plain).toMatchObject({ step: 'backup', attempts: '3', route: 'resilient@1' });
    expect(logs.at(-1)).toMatchObject({
      step: 'backup',
      attempts: 3,
      failed_steps: ['primary:upstream_unavailable'],
    });
    expect((await send(client, 'resilient', { vip: true })).step).toBe('vip');
    expect(down.requests).toHaveLength(4);

    const error = await failure(send(client, 'doomed'));
    expect(error.status).toBe(503);
    expect(error.headers?.get('x-breakwater-attempts')).toBe('2');
    expect(error.headers?.get('x-breakwater-step')).toBe('two');
    expect(logs.at(-1)).toMatchObject({
      route: 'doomed@1',
      status: 503,
      failed_steps: ['one:upstream_unavailable', 'two:upstream_unavailable'],
    });
  });

  it('streams through a route: the step is chosen before the first byte', async () => {
    const down = await startSim(defer, { errorRate: 1 });
    const up = await startSim(defer);
    const store = await sqliteStore(defer);
    await deploy(store, 'streamed', {
      type: 'fallback',
      chain: [step('primary', { provider: 'down', maxAttempts: 1 }), step('backup', { provider: 'up' })],
    });
    const { client } = await routeGateway(defer, { down, up }, store);
    const { data: stream, response } = await client.chat.completions
      .create({ ...ask('dynamic/streamed'), stream: true })
      .withResponse();
    expect(response.headers.get('x-breakwater-step')).toBe('backup');
    expect(response.headers.get('x-breakwater-route')).toBe('streamed@1');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });
});
