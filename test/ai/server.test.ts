/**
 * The gateway mounted on Breakwater's own server (`createServer({ routes: [gateway.routes] })`) over a SQLite
 * store whose counters hold the limits: answers keep their problem+json shape, and a stream outlives the
 * server's handler timeout (a streamed reply is hijacked once its first byte is there).
 */
import type { APIError } from 'openai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createAiGateway } from '../../src/ai/index.js';
import { createJobs } from '../../src/jobs/index.js';
import { closeGracefully, createServer } from '../../src/server/index.js';
import { openSqliteStore } from '../../src/store/index.js';
import { SIM_KEY, ask, startSim, tempDb, useCleanups } from './support.js';

const defer = useCleanups();

describe('AI gateway on createServer', () => {
  it('serves plain and streamed completions, refuses over a rate rule, and streams past the handler timeout', async () => {
    const sim = await startSim(defer, { tokensPerSecond: 20 });
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai') });
    defer(() => store.close());
    const jobs = createJobs({ store });
    const gateway = createAiGateway({
      providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
      env: { SIM_KEY },
      store,
      rateRules: [
        { name: 'three', limit: 3, windowMs: 60_000, technique: 'sliding', scope: { by: 'provider' } },
      ],
    });
    const http = createServer({ jobs, store, routes: [gateway.routes], requestTimeoutMs: 1_000 });
    defer(async () => {
      await closeGracefully(http, { graceMs: 500 });
      await gateway.close();
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const address = http.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });

    const plain = await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 2 }));
    expect(plain.choices[0]!.message.content).toBe('A thoughtful');

    // 30 tokens at 20 a second: 1.5 s of streaming, past the server's 1 s handler timeout.
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      max_tokens: 30,
    });
    let tokens = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) tokens++;
    expect(tokens).toBe(30);

    await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 1 }));
    const refused = (await client.chat.completions
      .create(ask('sim/sim-1', { max_tokens: 1 }))
      .catch((e: unknown) => e)) as APIError;
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('rate_limited');
    expect(refused.headers?.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(sim.requests).toHaveLength(3);
  }, 15_000);
});
