/**
 * API keys on the AI gateway, end to end (docs/security.md#api-keys): the real gateway (`startGateway`,
 * SQLite, a small app whose `ai` part points at the simulated model server), keys made in its store before it
 * starts, and the official `openai` client with one key each. A key's own rate rules, budget and allowed
 * models bind that key and no other; metadata comes from the key, and a client header may add to it only for
 * a key marked as a trusted backend.
 */
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { startSimulatedProvider } from '../../examples/llm-sim/index.js';
import { readSpendState, spendWindowStart, type RateRule } from '../../src/ai/index.js';
import { defineApp } from '../../src/gateway/app.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { FakeClock } from '../../src/core/index.js';
import { createApiKeys } from '../../src/http/keys/index.js';
import { openStore } from '../../src/store/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';

const defer = useCleanups();
const MINUTE = 60_000;
const DAY = 86_400_000;
const SIM_KEY = 'sk-sim-secret-0123456789';

/** The gateway's own rule: three requests a minute per `user` in the request's metadata. */
const PER_USER: RateRule = {
  name: 'per-user',
  limit: 3,
  windowMs: MINUTE,
  technique: 'fixed',
  scope: { by: 'metadata', key: 'user' },
};

interface Setup {
  gw: Gateway;
  clock: FakeClock;
  /** The official client with key `a`, `b` or `backend`. */
  client(name: 'a' | 'b' | 'backend'): OpenAI;
  /** The id of key `a` (its principal is `key:<id>`). */
  aId: string;
  /** Requests the model server received. */
  served(): number;
}

/**
 * Key `a`: user `a`, only `sim/sim-1`, two requests a minute, 0.0003 USD a day. Key `b`: user `b`, no limits
 * of its own. Key `backend`: team `shop`, a trusted backend. The same gateway-wide `PER_USER` rule for all.
 */
async function setup(): Promise<Setup> {
  const sim = await startSimulatedProvider({ apiKey: SIM_KEY });
  defer(() => sim.close());
  // Today's midnight (UTC): fixed windows start on it, so every Retry-After below is exact.
  const clock = new FakeClock(Math.floor(Date.now() / DAY) * DAY);
  const store = await openStore({ url: `sqlite:${tempDb(defer, 'breakwater-keys-ai')}`, clock });
  defer(() => store.close());
  const keys = createApiKeys({ store, clock });
  const a = await keys.create({
    name: 'a',
    scopes: ['ai'],
    metadata: { user: 'a' },
    ai: {
      allowedModels: ['sim/sim-1'],
      rateRules: [{ limit: 2, windowMs: MINUTE }],
      budgets: [{ limitUsd: 0.0003, windowMs: DAY }],
    },
  });
  const b = await keys.create({ name: 'b', scopes: ['ai'], metadata: { user: 'b' } });
  const backend = await keys.create({
    name: 'backend',
    scopes: ['ai'],
    metadata: { team: 'shop' },
    trustedBackend: true,
  });
  const app = defineApp({
    setup: () => ({
      name: 'keys-ai',
      version: '1.0.0',
      ai: {
        providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
        env: { SIM_KEY },
        // Output at 2 USD per million tokens, input free: 50 output tokens cost 100 micro-USD, estimated and real.
        prices: {
          'sim/sim-1': { inputPerMTok: 0, outputPerMTok: 2 },
          'sim/sim-2': { inputPerMTok: 0, outputPerMTok: 2 },
        },
        rateRules: [PER_USER],
      },
    }),
  });
  const gw = await startGateway({
    app,
    store,
    port: 0,
    worker: false,
    clock,
    env: {},
    log: () => undefined,
  });
  defer(() => gw.close());
  const secrets = { a: a.key, b: b.key, backend: backend.key };
  return {
    gw,
    clock,
    aId: a.record.id,
    client: (name) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: secrets[name], maxRetries: 0 }),
    served: () => sim.requests.length,
  };
}

/** 50 output tokens of `model`, with `headers` if given. */
function ask(client: OpenAI, model = 'sim/sim-1', headers?: Record<string, string>): Promise<unknown> {
  return client.chat.completions.create(
    { model, messages: [{ role: 'user', content: 'Suggest a gift.' }], max_tokens: 50 },
    headers === undefined ? undefined : { headers },
  );
}

/** 200, or `<status> <error code>` for a refusal. */
function outcome(request: Promise<unknown>): Promise<number | string> {
  return request.then(
    () => 200,
    (error: unknown) => `${(error as APIError).status} ${String((error as APIError).code)}`,
  );
}

/** The refusal of `request` (fails the test when it is served). */
async function refusal(request: Promise<unknown>): Promise<APIError> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

describe("an API key's own AI limits, through the real gateway and the official openai client", () => {
  it("a's rate rule refuses a's third request in a minute with 429; b is served meanwhile", async () => {
    const { gw, client, served } = await setup();
    expect(gw.authMode).toBe('credentials');
    const a = client('a');
    const b = client('b');
    expect([await outcome(ask(a)), await outcome(ask(a))]).toEqual([200, 200]);
    const refused = await refusal(ask(a));
    expect([refused.status, refused.code]).toEqual([429, 'rate_limited']);
    // a's own rule (2 a minute), not the gateway's per-user rule (3 a minute).
    expect(refused.headers?.get('x-ratelimit-limit')).toBe('2');
    expect(refused.headers?.get('retry-after')).toBe('60');
    expect([await outcome(ask(b)), await outcome(ask(b)), await outcome(ask(b))]).toEqual([200, 200, 200]);
    // b's fourth meets the gateway's rule for user b, which a's requests never counted toward.
    const bRefused = await refusal(ask(b));
    expect([bRefused.status, bRefused.code, bRefused.headers?.get('x-ratelimit-limit')]).toEqual([
      429,
      'rate_limited',
      '3',
    ]);
    expect(served()).toBe(5);
  });

  it("a's budget refuses a with 429 spend_limited; b spends on; a's spend is a's alone", async () => {
    const { gw, clock, client, aId, served } = await setup();
    const a = client('a');
    const b = client('b');
    expect([await outcome(ask(a)), await outcome(ask(a))]).toEqual([200, 200]);
    clock.tick(MINUTE); // a fresh minute for the rate rules; the day's budget goes on
    expect(await outcome(ask(a))).toBe(200);
    const refused = await refusal(ask(a));
    expect([refused.status, refused.code]).toEqual([429, 'spend_limited']);
    expect(refused.headers?.get('retry-after')).toBe(String((DAY - MINUTE) / 1000));
    for (let i = 0; i < 3; i++) expect(await outcome(ask(b))).toBe(200);
    expect(served()).toBe(6);

    const start = spendWindowStart(clock.now(), DAY);
    const key = `ai:spend:key-spend-fixed-${DAY}:v:${encodeURIComponent(`key:${aId}`)}:${start}`;
    expect(readSpendState(await gw.store.counters.get(key))).toEqual({
      spentMicroUsd: 300,
      reservedMicroUsd: 0,
    });
  });

  it("a model outside a's allowedModels is 403 model_not_allowed and reaches no model; b may call it", async () => {
    const { client, served } = await setup();
    const refused = await refusal(ask(client('a'), 'sim/sim-2'));
    expect([refused.status, refused.code]).toEqual([403, 'model_not_allowed']);
    expect(refused.message).toMatch(/sim\/sim-2/);
    expect(served()).toBe(0);
    expect(await outcome(ask(client('b'), 'sim/sim-2'))).toBe(200);
    expect(served()).toBe(1);
  });

  it('no key is 401 credentials_missing; a key that is not one is 401 invalid_key', async () => {
    const { gw, served } = await setup();
    const bare = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/sim-1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer realm="breakwater"');
    expect(await bare.json()).toMatchObject({
      status: 401,
      code: 'unauthorized',
      reason: 'credentials_missing',
    });

    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'bw_nope_nope', maxRetries: 0 });
    const refused = await refusal(ask(stranger));
    expect([refused.status, refused.code]).toEqual([401, 'invalid_key']);
    expect(served()).toBe(0);
  });

  it('a trusted backend names the user with x-breakwater-metadata; an untrusted key is refused 403 metadata_not_allowed', async () => {
    const { client, served } = await setup();
    const backend = client('backend');
    const asUser = (user: string) => ({ 'x-breakwater-metadata': JSON.stringify({ user }) });
    // The gateway's per-user rule counts the user the backend names: u1 three times, then refused; u2 apart.
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await outcome(ask(backend, 'sim/sim-1', asUser('u1'))));
    expect(results).toEqual([200, 200, 200, '429 rate_limited']);
    expect(await outcome(ask(backend, 'sim/sim-1', asUser('u2')))).toBe(200);

    const refused = await refusal(ask(client('b'), 'sim/sim-1', asUser('u2')));
    expect([refused.status, refused.code]).toEqual([403, 'metadata_not_allowed']);
    expect(served()).toBe(4);
  });

  it('models, embeddings and unknown paths admit whom chat admits: a stranger gets the same 401; a key lists only its models', async () => {
    const { gw, client, served } = await setup();
    expect((await client('a').models.list()).data.map((m) => m.id)).toEqual(['sim/sim-1']);
    expect((await client('b').models.list()).data.map((m) => m.id)).toEqual(['sim/sim-1', 'sim/sim-2']);
    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'bw_nope_nope', maxRetries: 0 });
    const chat = await refusal(ask(stranger));
    for (const request of [
      stranger.models.list(),
      stranger.models.retrieve('sim/sim-1'),
      stranger.embeddings.create({ model: 'sim/sim-1', input: 'kites' }),
      stranger.post('/foo', { body: {} }),
    ]) {
      const refused = await refusal(request);
      expect([refused.status, refused.code, refused.message]).toEqual([chat.status, chat.code, chat.message]);
    }
    expect(served()).toBe(0);
  });
});
