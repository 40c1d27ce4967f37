/**
 * The AI gateway as the GiftGenius app serves it through `startGateway` (what `npm start` runs): the official
 * `openai` client at `<gateway>/v1`, the simulated model server behind it, the app's prices and rules, and
 * the spend kept in the gateway's own SQLite store.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { spendWindowStart } from '../../src/ai/index.js';
import { TEST_REDIS_URL, describeRedis } from '../support/redis.js';
import { startBackends, startGiftGenius, tempDb, until, useCleanups } from './support.js';

const defer = useCleanups();

describe('GiftGenius AI gateway', () => {
  it('answers chat completions with cost and step headers, streams, and keeps the spend in its store', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer) });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });

    const { data, response } = await client.chat.completions
      .create({
        model: 'sim/gift-ranker',
        messages: [{ role: 'user', content: 'Rank: kite, tea set, yo-yo' }],
        max_tokens: 32,
      })
      .withResponse();
    expect(data.choices[0]!.message.content).toEqual(expect.any(String));
    expect([
      response.headers.get('x-breakwater-step'),
      response.headers.get('x-breakwater-provider'),
      response.headers.get('x-breakwater-model'),
      response.headers.get('x-breakwater-attempts'),
    ]).toEqual(['direct', 'sim', 'gift-ranker', '1']);
    // Exact cost: the usage the simulated model reports, at the app's prices (2.5 / 10 USD per M tokens).
    const { prompt_tokens: input, completion_tokens: output } = data.usage!;
    const expected = (input * 2.5 + output * 10) / 1_000_000;
    expect(Number(response.headers.get('x-breakwater-cost-usd'))).toBeCloseTo(expected, 12);

    const stream = await client.chat.completions.create({
      model: 'sim/gift-ranker-mini',
      messages: [{ role: 'user', content: 'One word for a gift' }],
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let streamed: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) streamed = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);

    // The daily budget lives in the gateway's store (counters), settled to what was really spent: each
    // request's cost in micro-USD rounded up, nothing left reserved.
    const mini = (streamed!.prompt_tokens * 0.25 + streamed!.completion_tokens * 1) / 1_000_000;
    const key = `ai:spend:daily:v:sim:${spendWindowStart(Date.now(), 86_400_000)}`;
    await until(async () => {
      const state = (await gw.store.counters.get(key)) as { reservedMicroUsd: number } | undefined;
      return state?.reservedMicroUsd === 0;
    }, 'the streamed request to settle its reservation');
    expect(await gw.store.counters.get(key)).toEqual({
      spentMicroUsd: Math.ceil(expected * 1e6) + Math.ceil(mini * 1e6),
      reservedMicroUsd: 0,
    });
  });

  it('refuses a user over the per-user rate rule with 429 and the x-ratelimit headers', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer) });
    const call = () =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-breakwater-metadata': JSON.stringify({ user: 'u1' }),
        },
        body: JSON.stringify({
          model: 'sim/gift-ranker-mini',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 4,
        }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await call()).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    const refused = await call();
    expect(refused.status).toBe(429);
    expect([refused.headers.get('x-ratelimit-limit'), refused.headers.get('x-ratelimit-remaining')]).toEqual([
      '30',
      '0',
    ]);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
  });
  it('a route deployed over the admin API serves dynamic/<name> at once, and the deploy is audited', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer) });
    const admin = (path: string, body: unknown) =>
      fetch(`${gw.url}/admin/ai/routes/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const definition = {
      type: 'fallback',
      chain: [
        { type: 'model', name: 'ranker', provider: 'sim', model: 'gift-ranker', timeoutMs: 2_000 },
        { type: 'model', name: 'mini', provider: 'sim', model: 'gift-ranker-mini' },
      ],
    };
    expect((await admin('gifts/versions', { definition, note: 'ranker, mini as fallback' })).status).toBe(
      201,
    );
    expect((await admin('gifts/deploy', { version: 1 })).status).toBe(200);

    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const { response } = await client.chat.completions
      .create({ model: 'dynamic/gifts', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 })
      .withResponse();
    expect([response.headers.get('x-breakwater-route'), response.headers.get('x-breakwater-step')]).toEqual([
      'gifts@1',
      'ranker',
    ]);
    await gw.audit.flush();
    const actions = (await gw.store.audit.read()).map(
      (r) => (JSON.parse(r.body) as { action: string }).action,
    );
    expect(actions).toEqual(expect.arrayContaining(['admin.route_create', 'admin.route_deploy']));
  });
});

describeRedis('the AI gateway on Redis')('GiftGenius AI gateway with REDIS_URL', () => {
  it('two gateways with their own databases share one per-user rate limit through Redis', async () => {
    const backends = await startBackends(defer);
    // A fresh Redis database index keeps these counters apart from other tests' keys.
    const url = `${TEST_REDIS_URL.replace(/\/\d*$/, '')}/9`;
    const { Redis } = await import('ioredis');
    const admin = new Redis(url);
    await admin.flushdb();
    defer(() => admin.quit());
    const gateways = await Promise.all(
      [0, 1].map(() =>
        startGiftGenius(defer, backends, {
          dbPath: tempDb(defer),
          gateway: { env: { ...process.env, REDIS_URL: url } },
        }),
      ),
    );
    const call = (gateway: (typeof gateways)[number]) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-breakwater-metadata': '{"user":"shared"}' },
        body: JSON.stringify({
          model: 'sim/gift-ranker-mini',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 4,
        }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await call(gateways[i % 2]!)).status);
    // 30 per minute per user, across both instances (not 30 each).
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });
});
