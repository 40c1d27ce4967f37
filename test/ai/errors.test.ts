/**
 * The gateway's errors as the edge's one error handler answers them with the gateway's renderer: the
 * OpenAI-shaped `error` member on every failure of the route, those it raises itself and those raised
 * before it runs (a body Fastify cannot read, the edge's refusals), on a bare Fastify app (library use)
 * and on Breakwater's own server.
 */
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { createAiGateway } from '../../src/ai/index.js';
import { createAuthenticator } from '../../src/http/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SIM_KEY, ask, startGateway, startSim, useCleanups } from './support.js';

const defer = useCleanups();

const PROBLEM = 'application/problem+json; charset=utf-8';

describe('AI gateway errors', () => {
  it('on a bare Fastify app: a body it cannot read is invalid_body; a refusal of its own carries x-request-id', async () => {
    const sim = await startSim(defer);
    const { url, logs } = await startGateway(defer, { sim });
    const post = (body: string, type = 'application/json') =>
      fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': type }, body });

    const malformed = await post('{"model":');
    expect([malformed.status, malformed.headers.get('content-type')]).toEqual([400, PROBLEM]);
    expect(await malformed.json()).toMatchObject({
      code: 'invalid_payload',
      reason: 'invalid_body',
      instance: '/v1/chat/completions',
      error: { type: 'invalid_payload', code: 'invalid_body', param: null },
    });

    const xml = await post('<hello/>', 'application/xml');
    expect(xml.status).toBe(415);
    expect(((await xml.json()) as { error: unknown }).error).toEqual({
      message: 'The request body has a Content-Type this endpoint does not accept.',
      type: 'invalid_payload',
      code: 'invalid_body',
      param: null,
    });
    // Neither reached the route: no request line.
    expect(logs).toEqual([]);

    const unknown = await post(JSON.stringify(ask('nope/gpt')));
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: unknown }).error).toMatchObject({
      type: 'invalid_payload',
      code: 'unknown_provider',
    });
    expect(logs).toHaveLength(1);
    // The route's id of the request, in its answer and in its line.
    expect(unknown.headers.get('x-request-id')).toBe(logs[0]!.request_id);
    expect(sim.requests).toHaveLength(0);
  });

  it('on createServer: the edge’s refusal reaches the official client in the OpenAI shape, with its challenge', async () => {
    const sim = await startSim(defer);
    const store = await openSqliteStore({ path: ':memory:' });
    defer(() => store.close());
    const gateway = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
    });
    const http = createServer({
      jobs: createJobs({ store }),
      store,
      routes: [gateway.routes],
      authenticator: createAuthenticator({ mode: 'credentials', adminToken: 'ai-errors-admin-token-0123' }),
    });
    defer(async () => {
      await closeGracefully(http, { graceMs: 200 });
      await gateway.close();
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const { port } = http.server.address() as { port: number };
    const client = (apiKey: string) =>
      new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0 });

    const refused = (await client('not-a-credential')
      .chat.completions.create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(refused).toBeInstanceOf(APIError);
    expect({
      status: refused.status,
      code: refused.code,
      type: refused.type,
      message: refused.message,
      challenge: refused.headers?.get('www-authenticate'),
      contentType: refused.headers?.get('content-type'),
    }).toEqual({
      status: 401,
      code: 'invalid_token',
      type: 'unauthorized',
      message: '401 The credential is not valid.',
      challenge: 'Bearer realm="breakwater", error="invalid_token"',
      contentType: PROBLEM,
    });

    const served = await client('ai-errors-admin-token-0123').chat.completions.create(
      ask('sim/sim-1', { max_tokens: 1 }),
    );
    expect(served.choices).toHaveLength(1);
    expect(sim.requests).toHaveLength(1);
  });
});
