/**
 * The gateway's endpoints beside chat completions, end to end with the official `openai` client in front of
 * the simulated provider: `GET /v1/models` (what a caller may use, a key's allowlist included), `POST
 * /v1/embeddings` under the same limits, settlement and fallbacks as chat, and a problem for a path or a
 * method the gateway does not serve, or a model that cannot serve the endpoint asked.
 */
import { NotFoundError, type APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { embeddingVector } from '../../examples/llm-sim/index.js';
import { readSpendState, spendWindowStart, type SpendRule } from '../../src/ai/index.js';
import { FakeClock } from '../../src/core/index.js';
import { deploy, routeGateway, sqliteStore, step } from './routes-support.js';
import { ask, clientFor, keyPrincipal, startSim, useCleanups } from './support.js';

const defer = useCleanups();
const DAY = 86_400_000;

/** An embeddings model, a chat model with its own entry, and two priced chat models. */
const MODELS = {
  'sim/embed-1': { endpoints: ['embeddings' as const], created: 1_700_000_000, ownedBy: 'sim-labs' },
  'sim/sim-1': { endpoints: ['chat' as const] },
  'backup/embed-1': { endpoints: ['embeddings' as const] },
};
/** Embeddings are priced per input token: 20 USD per million is 20 micro-USD a token. */
const PRICES = {
  'sim/embed-1': { inputPerMTok: 20, outputPerMTok: 0 },
  'backup/embed-1': { inputPerMTok: 30, outputPerMTok: 0 },
  'sim/sim-2': { inputPerMTok: 1, outputPerMTok: 2 },
};
const EMBED_ROUTE = {
  type: 'fallback',
  chain: [
    step('primary', { model: 'embed-1', maxAttempts: 1 }),
    step('backup', { provider: 'backup', model: 'embed-1' }),
  ],
};

async function setup(options: { spendRules?: SpendRule[]; rateLimit?: number } = {}) {
  const sim = await startSim(defer);
  const backup = await startSim(defer);
  const clock = new FakeClock();
  const store = await sqliteStore(defer, clock);
  await deploy(store, 'embed', EMBED_ROUTE);
  await deploy(store, 'gifts', step('sim-1'));
  const running = await routeGateway(defer, { sim, backup }, store, {
    resolver: { clock },
    gateway: {
      clock,
      store,
      models: MODELS,
      prices: PRICES,
      spendRules: options.spendRules,
      rateRules:
        options.rateLimit === undefined
          ? undefined
          : [
              {
                name: 'few',
                limit: options.rateLimit,
                windowMs: DAY,
                technique: 'fixed',
                scope: { by: 'provider' },
              },
            ],
    },
    principals: {
      narrow: keyPrincipal('narrow', {
        ai: {
          allowedModels: ['dynamic/embed', 'sim/embed-1', 'nowhere/x', 'dynamic/missing', 'sim/embed-1'],
        },
      }),
      wide: keyPrincipal('wide'),
    },
  });
  return { sim, backup, store, clock, ...running };
}

const failure = (p: Promise<unknown>): Promise<APIError> =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e as APIError,
  );

describe('GET /v1/models', () => {
  it('lists every configured model and deployed route in OpenAI’s shape; a key with an allowlist sees only its own', async () => {
    const { url } = await setup();
    const everything = await clientFor(url, 'wide').models.list();
    expect(everything.data).toEqual([
      { id: 'sim/embed-1', object: 'model', created: 1_700_000_000, owned_by: 'sim-labs' },
      { id: 'sim/sim-1', object: 'model', created: 0, owned_by: 'sim' },
      { id: 'backup/embed-1', object: 'model', created: 0, owned_by: 'backup' },
      { id: 'sim/sim-2', object: 'model', created: 0, owned_by: 'sim' },
      { id: 'dynamic/embed', object: 'model', created: 0, owned_by: 'breakwater' },
      { id: 'dynamic/gifts', object: 'model', created: 0, owned_by: 'breakwater' },
    ]);
    const narrow = await clientFor(url, 'narrow').models.list();
    expect(narrow.data.map((m) => m.id)).toEqual(['dynamic/embed', 'sim/embed-1']);
  });

  it('retrieves one model (its slash sent escaped); unknown or not allowed is the SDK’s NotFoundError, model_not_found', async () => {
    const { url, sim } = await setup();
    const wide = clientFor(url, 'wide');
    expect(await wide.models.retrieve('sim/embed-1')).toEqual({
      id: 'sim/embed-1',
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'sim-labs',
    });
    expect((await wide.models.retrieve('dynamic/gifts')).owned_by).toBe('breakwater');
    const unknown = await failure(wide.models.retrieve('sim/nope'));
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect([unknown.status, unknown.code, unknown.param]).toEqual([404, 'model_not_found', 'model']);
    expect(unknown.message).toBe('404 The model "sim/nope" does not exist or you do not have access to it.');
    // Allowed to the wide key, not to the narrow one: the same 404 as a model that does not exist.
    const hidden = await failure(clientFor(url, 'narrow').models.retrieve('sim/sim-1'));
    expect(hidden).toBeInstanceOf(NotFoundError);
    expect(hidden.code).toBe('model_not_found');
    expect(sim.requests).toHaveLength(0);
  });
});

describe('POST /v1/embeddings', () => {
  it('answers with the provider’s vectors and usage, and settles spend to the exact cost', async () => {
    const rule: SpendRule = { name: 'daily', budgetUsd: 1, windowMs: DAY, scope: { by: 'provider' } };
    const { url, sim, store, clock, logs } = await setup({ spendRules: [rule] });
    const client = clientFor(url, 'wide');
    // The SDK asks for base64 and decodes it; 'a gift idea' is 11 bytes: 3 tokens in the simulator.
    const { data, response } = await client.embeddings
      .create({ model: 'sim/embed-1', input: ['a gift idea', 'kites'] })
      .withResponse();
    expect(data.data.map((d) => d.embedding)).toEqual([
      embeddingVector('a gift idea', 8),
      embeddingVector('kites', 8),
    ]);
    expect(data.data[0]!.embedding).toHaveLength(8);
    expect(data.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
    // 5 tokens at 20 USD per million: 0.0001 USD.
    expect(response.headers.get('x-breakwater-cost-usd')).toBe('0.0001');
    expect(response.headers.get('x-breakwater-step')).toBe('direct');
    const floats = await client.embeddings.create({
      model: 'sim/embed-1',
      input: 'kites',
      dimensions: 3,
      encoding_format: 'float',
    });
    expect(floats.data[0]!.embedding).toEqual(embeddingVector('kites', 3));
    expect(floats.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
    const key = `ai:spend:daily:v:sim:${spendWindowStart(clock.now(), DAY)}`;
    // 100 + 40 micro-USD, nothing left reserved.
    expect(readSpendState(await store.counters.get(key))).toEqual({
      spentMicroUsd: 140,
      reservedMicroUsd: 0,
    });
    expect(logs[0]).toMatchObject({
      endpoint: 'embeddings',
      step: 'direct',
      model: 'embed-1',
      stream: false,
      status: 200,
      outcome: 'ok',
      prompt_tokens: 5,
      completion_tokens: 0,
      cost_usd: '0.0001',
    });
    expect(sim.requests.map((r) => [r.path, r.model])).toEqual([
      ['/v1/embeddings', 'embed-1'],
      ['/v1/embeddings', 'embed-1'],
    ]);
  });

  it('a rate rule refuses before the provider is called', async () => {
    const { url, sim } = await setup({ rateLimit: 2 });
    const client = clientFor(url, 'wide');
    await client.embeddings.create({ model: 'sim/embed-1', input: 'one' });
    await client.embeddings.create({ model: 'sim/embed-1', input: 'two' });
    const refused = await failure(client.embeddings.create({ model: 'sim/embed-1', input: 'three' }));
    expect([refused.status, refused.code]).toEqual([429, 'rate_limited']);
    expect(refused.headers?.get('retry-after')).not.toBeNull();
    expect(sim.requests).toHaveLength(2);
  });

  it('a fault on the primary falls back through the route, the serving step in x-breakwater-step', async () => {
    const { url, sim, backup } = await setup();
    sim.faults.patch({ errorRate: 1 });
    const { data, response } = await clientFor(url, 'narrow')
      .embeddings.create({ model: 'dynamic/embed', input: 'kites', encoding_format: 'float' })
      .withResponse();
    expect(data.data[0]!.embedding).toEqual(embeddingVector('kites', 8));
    expect(response.headers.get('x-breakwater-step')).toBe('backup');
    expect(response.headers.get('x-breakwater-route')).toBe('embed@1');
    expect(response.headers.get('x-breakwater-attempts')).toBe('2');
    // 2 tokens at 30 USD per million.
    expect(response.headers.get('x-breakwater-cost-usd')).toBe('0.00006');
    expect([sim.requests.length, backup.requests.length]).toEqual([1, 1]);
  });

  it('a model that cannot serve the endpoint is 400 model_not_supported_for_endpoint, before anything is counted', async () => {
    const { url, sim } = await setup({ rateLimit: 1 });
    const client = clientFor(url, 'wide');
    const chatModel = await failure(client.embeddings.create({ model: 'sim/sim-1', input: 'kites' }));
    expect([chatModel.status, chatModel.code, chatModel.param]).toEqual([
      400,
      'model_not_supported_for_endpoint',
      'model',
    ]);
    expect(chatModel.message).toBe('400 The model "sim/sim-1" does not serve POST /v1/embeddings.');
    // Undeclared models serve chat only.
    const undeclared = await failure(client.embeddings.create({ model: 'sim/other', input: 'kites' }));
    expect(undeclared.code).toBe('model_not_supported_for_endpoint');
    const embedModel = await failure(client.chat.completions.create(ask('sim/embed-1')));
    expect([embedModel.status, embedModel.code]).toEqual([400, 'model_not_supported_for_endpoint']);
    expect(embedModel.message).toBe('400 The model "sim/embed-1" does not serve POST /v1/chat/completions.');
    expect(sim.requests).toHaveLength(0);
    // Nothing was counted: the one request the rate rule allows still goes through.
    await client.embeddings.create({ model: 'sim/embed-1', input: 'kites' });
    expect(sim.requests).toHaveLength(1);
  });

  it('refuses a body without input (400 invalid_body, param input)', async () => {
    const { url, sim } = await setup();
    const bad = await failure(clientFor(url, 'wide').embeddings.create({ model: 'sim/embed-1', input: [] }));
    expect([bad.status, bad.code, bad.param]).toEqual([400, 'invalid_body', 'input']);
    expect(sim.requests).toHaveLength(0);
  });
});

describe('paths the gateway does not serve', () => {
  it('an unknown endpoint is 404 unknown_endpoint naming the method and path and the endpoints served', async () => {
    const { url } = await setup();
    const res = await fetch(`${url}/v1/foo?x=1`, {
      method: 'POST',
      headers: { authorization: 'Bearer wide', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    const served = [
      'POST /v1/chat/completions',
      'POST /v1/embeddings',
      'GET /v1/models',
      'GET /v1/models/{model}',
    ];
    const detail = `There is no endpoint POST /v1/foo. This gateway serves ${served.join(', ')}.`;
    expect(await res.json()).toEqual({
      type: 'urn:breakwater:error:not_found',
      title: 'Not found',
      status: 404,
      detail,
      code: 'not_found',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
      instance: '/v1/foo',
      reason: 'unknown_endpoint',
      method: 'POST',
      path: '/v1/foo',
      endpoints: served,
      error: { message: detail, type: 'not_found', code: 'unknown_endpoint', param: null },
    });
    const sdk = await failure(clientFor(url, 'wide').post('/responses', { body: { model: 'sim/sim-1' } }));
    expect([sdk.status, sdk.code]).toEqual([404, 'unknown_endpoint']);
  });

  it('a served path with another method is 405 with Allow', async () => {
    const { url } = await setup();
    const get = await fetch(`${url}/v1/chat/completions`, { headers: { authorization: 'Bearer wide' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const body = (await get.json()) as { error: unknown };
    expect(body.error).toEqual({
      message: 'GET is not served at /v1/chat/completions; use POST.',
      type: 'not_found',
      code: 'method_not_allowed',
      param: null,
    });
    const post = await fetch(`${url}/v1/models`, {
      method: 'POST',
      headers: { authorization: 'Bearer wide' },
    });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    const head = await fetch(`${url}/v1/models`, {
      method: 'HEAD',
      headers: { authorization: 'Bearer wide' },
    });
    expect(head.status).toBe(200);
  });
});
