/**
 * JSON nested deeper than `MAX_JSON_DEPTH` (64) is refused with a clear 400 before anything walks it, on every
 * front over real HTTP: the AI gateway (on a bare Fastify app and on `createServer`), any JSON route of
 * `createServer`, the MCP endpoint (bare and on `createServer`) and a webhook source. A stack overflow in a
 * walker (a cost estimate, a serializer) used to answer 503 "limit store unavailable" or 500.
 */
import Fastify from 'fastify';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_JSON_DEPTH } from '../../src/core/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { mcpRoutes, resilientTool } from '../../src/mcp/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { defineWebhookSource, stripeVerifier } from '../../src/webhooks/index.js';
import { createAiGateway } from '../../src/ai/index.js';
import { SIM_KEY, startGateway, startSim, useCleanups } from '../ai/support.js';
import { STRIPE_SECRET, deliverStripe, startIngress } from '../webhooks/support.js';

const defer = useCleanups();

/** JSON text of `levels` arrays, one inside the other (`[[…]]`): built as text, no recursion. */
function nested(levels: number): string {
  return '['.repeat(levels) + ']'.repeat(levels);
}

const TOO_DEEP = `The request body nests too deep: at most ${MAX_JSON_DEPTH} levels of arrays and objects are accepted.`;

/** A chat body whose first message's content nests `levels` deep (the body itself one more, and two). */
function chatBody(levels: number): string {
  return `{"model":"sim/sim-1","max_tokens":4,"messages":[{"role":"user","content":${nested(levels)}}]}`;
}

async function send(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const answer = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await answer.body.text();
  return { status: answer.statusCode, json: JSON.parse(text) as Record<string, unknown> };
}

const PRICES = { 'sim/sim-1': { inputPerMTok: 1, outputPerMTok: 2 } };
const SPEND = [{ name: 'daily', budgetUsd: 5, windowMs: 86_400_000, scope: { by: 'provider' as const } }];

describe('the AI gateway', () => {
  for (const limits of ['a spend rule', 'no limit rule'] as const) {
    it(`messages nested 10,000 deep (${limits}): 400 invalid_payload too_deep, never reaching the provider`, async () => {
      const sim = await startSim(defer);
      const options = limits === 'a spend rule' ? { prices: PRICES, spendRules: SPEND } : {};
      const { url } = await startGateway(defer, { sim }, options);
      const answer = await send(`${url}/v1/chat/completions`, chatBody(10_000));
      expect(answer.status).toBe(400);
      expect(answer.json).toMatchObject({
        code: 'invalid_payload',
        detail: TOO_DEEP,
        error: { code: 'too_deep', type: 'invalid_payload' },
      });
      expect(sim.requests).toHaveLength(0);
    });
  }

  it('a body exactly 64 deep is served; 65 deep is refused', async () => {
    const sim = await startSim(defer);
    const { url } = await startGateway(defer, { sim }, { prices: PRICES, spendRules: SPEND });
    // The body, `messages`, the message object: 3 levels around the content.
    expect((await send(`${url}/v1/chat/completions`, chatBody(MAX_JSON_DEPTH - 3))).status).toBe(200);
    const refused = await send(`${url}/v1/chat/completions`, chatBody(MAX_JSON_DEPTH - 2));
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ detail: TOO_DEEP });
  });

  it('on createServer: refused by the server before the route', async () => {
    const sim = await startSim(defer);
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    const jobs = createJobs({ store });
    const ai = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
      prices: PRICES,
      spendRules: SPEND,
    });
    defer(() => ai.close());
    const app = createServer({ jobs, store, routes: [ai.routes] });
    defer(() => closeGracefully(app, { graceMs: 0 }));
    const answer = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      payload: chatBody(10_000),
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ code: 'invalid_payload', detail: TOO_DEEP });
    expect(sim.requests).toHaveLength(0);
  });
});

describe('the limit check failing', () => {
  async function gatewayWhoseStoreThrows(error: Error) {
    const sim = await startSim(defer);
    let log = '';
    const app = Fastify({
      logger: { level: 'info', stream: { write: (line: string) => void (log += line) } },
    });
    const ai = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
      prices: PRICES,
      spendRules: SPEND,
      spendStore: {
        reserve: () => Promise.reject(error),
        settle: () => Promise.resolve(undefined),
      },
    });
    defer(() => ai.close());
    await ai.routes(app);
    defer(() => app.close());
    const answer = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      payload: chatBody(1),
    });
    return { answer, log: () => log, sim };
  }

  it('a fault of the gateway itself (a stack overflow) is a 500 logged as an error, not "store unavailable"', async () => {
    const { answer, log, sim } = await gatewayWhoseStoreThrows(
      new RangeError('Maximum call stack size exceeded'),
    );
    expect(answer.statusCode).toBe(500);
    expect(answer.json()).toMatchObject({
      code: 'internal_error',
      detail: expect.not.stringMatching(/store/),
    });
    const lines = log()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message?: string } });
    // One line, by the edge's error handler (the route throws to it), with the original error.
    expect(lines.filter((l) => l.level >= 50)).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'request failed',
        err: expect.objectContaining({
          message: expect.stringContaining('Maximum call stack size exceeded'),
        }),
      }),
    ]);
    expect(sim.requests).toHaveLength(0);
  });

  it('the store failing is still a 503 "limit store unavailable"', async () => {
    const { answer } = await gatewayWhoseStoreThrows(new Error('connection refused'));
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({
      code: 'upstream_unavailable',
      detail: "The gateway's limit store is unavailable; try again shortly.",
    });
  });
});

describe('createServer', () => {
  it('any JSON route: 400 problem before the handler runs (it used to answer 500 from the serializer)', async () => {
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    let handled = 0;
    const app = createServer({
      jobs: createJobs({ store }),
      store,
      routes: [
        (child) => {
          child.post('/echo', async (req) => {
            handled++;
            return { echo: req.body };
          });
        },
      ],
    });
    defer(() => closeGracefully(app, { graceMs: 0 }));
    const deep = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: `{"a":${nested(10_000)}}`,
    });
    expect(deep.statusCode).toBe(400);
    expect(deep.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(deep.json()).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      detail: TOO_DEEP,
      max_depth: MAX_JSON_DEPTH,
    });
    const fine = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: `{"a":${nested(MAX_JSON_DEPTH - 1)}}`,
    });
    expect(fine.statusCode).toBe(200);
    expect(handled).toBe(1);
  });
});

describe('the MCP endpoint', () => {
  const ACCEPT = 'application/json, text/event-stream';
  const INITIALIZE = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  let calls = 0;
  const keep = resilientTool({
    name: 'keep',
    description: 'Keeps a note.',
    inputSchema: z.object({ note: z.unknown() }),
    handler: () => {
      calls++;
      return { kept: true };
    },
  });

  for (const host of ['a bare Fastify app', 'createServer'] as const) {
    it(`tools/call with arguments nested 10,000 deep (${host}): 400 JSON-RPC error naming the limit`, async () => {
      calls = 0;
      const store = await openSqliteStore({ path: ':memory:' });
      defer(() => store.close());
      const jobs = createJobs({ store });
      const routes = mcpRoutes({ name: 'deep', version: '1.0.0', tools: [keep], jobs, store });
      const app = host === 'createServer' ? createServer({ jobs, store, routes: [routes] }) : Fastify();
      if (host !== 'createServer') routes(app);
      defer(() => app.close());
      await app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`;
      const init = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: ACCEPT },
        body: INITIALIZE,
      });
      await init.body.text();
      const session = init.headers['mcp-session-id'] as string;
      const headers = { accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      const call = (note: string) =>
        send(
          url,
          `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"keep","arguments":{"note":${note}}}}`,
          headers,
        );
      const deep = await call(nested(10_000));
      expect(deep.status).toBe(400);
      expect(deep.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: TOO_DEEP }, id: null });
      expect(calls).toBe(0);
    });
  }
});

describe('a webhook source', () => {
  it('a signed delivery nested 10,000 deep: 400 invalid_payload, nothing stored', async () => {
    const { url, store } = await startIngress(defer, {
      sources: [
        defineWebhookSource({ name: 'shop', verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }) }),
      ],
    });
    const body = `{"id":"evt_deep","object":"event","type":"order.paid","created":${Math.floor(Date.now() / 1000)},"data":${nested(10_000)}}`;
    const answer = await deliverStripe(url, 'shop', body);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      code: 'invalid_payload',
      detail: `The shop webhook body nests too deep: at most ${MAX_JSON_DEPTH} levels of arrays and objects are accepted.`,
    });
    expect(await store.listWebhooks({ limit: 10 })).toEqual([]);
  });
});
