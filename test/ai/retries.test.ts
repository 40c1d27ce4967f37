/**
 * Retries and failures around the first byte: a provider 429 is retried after its `Retry-After` (fake clock
 * on the gateway), 5xx and connection failures are retried, a hang is cut by the first-byte timeout, a
 * stream cut off after it began ends with an SSE error event and no `[DONE]`, a client that leaves stops the
 * provider's work, and a spent budget diverts to a cheaper step.
 */
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { runFallbackChain, type AiFlow } from '../../src/ai/index.js';
import { FakeClock } from '../../src/core/index.js';
import { ask, startGateway, startSim, until, useCleanups } from './support.js';

const defer = useCleanups();

describe('AI gateway: retries', () => {
  it('retries a provider 429 after its Retry-After, not before', async () => {
    const clock = new FakeClock();
    const sim = await startSim(defer, { rateLimit429: { every: 2, retryAfterS: 1 } });
    const { client } = await startGateway(defer, { sim }, { clock, random: () => 0 });
    const call = client.chat.completions
      .create(ask('sim/sim-1'), { headers: { 'x-breakwater-retry-delay': '100' } })
      .withResponse();
    await until(() => sim.requests.length === 1);
    await clock.tickAsync(999); // the backoff alone (50 ms) is long over; the provider asked for 1 s
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(sim.requests).toHaveLength(1);
    await clock.tickAsync(1);
    const { response } = await call;
    expect(response.status).toBe(200);
    expect(response.headers.get('x-breakwater-attempts')).toBe('2');
    expect(sim.requests).toHaveLength(2);
  });

  it('gives up at once when Retry-After is longer than the most it may wait, passing the hint on', async () => {
    const sim = await startSim(defer, { rateLimit429: { every: 1, retryAfterS: 30 } });
    const { client } = await startGateway(defer, { sim });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(503);
    expect(error.code).toBe('upstream_unavailable');
    expect(error.headers?.get('retry-after')).toBe('30');
    expect(error.headers?.get('x-breakwater-attempts')).toBe('1');
    expect((error.error as { provider_status?: number }).provider_status).toBeUndefined();
    expect(sim.requests).toHaveLength(1);
  });

  it('retries a 5xx', async () => {
    const draws = [0.1, 0.9];
    const sim = await startSim(defer, { errorRate: 0.5, random: () => draws.shift() ?? 0.9 });
    const { client } = await startGateway(defer, { sim }, { defaults: { retryDelayMs: 0 } });
    const { response } = await client.chat.completions.create(ask('sim/sim-1')).withResponse();
    expect(response.headers.get('x-breakwater-attempts')).toBe('2');
    expect(sim.requests).toHaveLength(2);
  });

  it('retries connection failures, then answers 503', async () => {
    const sim = await startSim(defer);
    const port = sim.port;
    await sim.close();
    const { client } = await startGateway(
      defer,
      {},
      {
        providers: { gone: { baseUrl: `http://127.0.0.1:${port}/v1` } },
        defaults: { retryDelayMs: 0, maxAttempts: 3 },
      },
    );
    const error = (await client.chat.completions.create(ask('gone/m')).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(503);
    expect(error.code).toBe('ECONNREFUSED');
    expect(error.headers?.get('x-breakwater-attempts')).toBe('3');
  });

  // Found by a fresh user: a provider failing every call took 3 gateway attempts × 3 tries of the SDK's
  // default retries = 9 provider calls for one create(). The layer that retried says so.
  it('a failure after the gateway retried tells the client not to retry on top; one without retries does not', async () => {
    const sim = await startSim(defer, { errorRate: 1 });
    const { url } = await startGateway(defer, { sim }, { defaults: { retryDelayMs: 0, maxAttempts: 3 } });
    const sdk = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'client-key', maxRetries: 2 }); // the SDK's default
    const error = (await sdk.chat.completions.create(ask('sim/sim-1')).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(503);
    expect(error.headers?.get('x-breakwater-attempts')).toBe('3');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(sim.requests).toHaveLength(3);

    // One attempt only (the client's choice): the gateway did not retry, so the client may.
    const once = (await new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: 'client-key',
      maxRetries: 1,
    }).chat.completions
      .create(ask('sim/sim-1'), { headers: { 'x-breakwater-max-attempts': '1' } })
      .catch((e: unknown) => e)) as APIError;
    expect(once.status).toBe(503);
    expect(once.headers?.get('x-should-retry')).toBeNull();
    expect(sim.requests).toHaveLength(5); // 3, then 1 and the SDK's retry
  });

  it('cuts a hanging provider at the first-byte timeout and retries it', async () => {
    const sim = await startSim(defer, { hang: true });
    const { client } = await startGateway(defer, { sim });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'), {
        headers: {
          'x-breakwater-request-timeout': '100',
          'x-breakwater-max-attempts': '2',
          'x-breakwater-retry-delay': '0',
        },
      })
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(504);
    expect(error.code).toBe('first_byte_timeout');
    expect(sim.requests).toHaveLength(2);
    await until(() => sim.faults.hanging() === 0); // both abandoned calls were closed, not left hanging
  });
});

describe('AI gateway: streams that fail after they began', () => {
  it('a mid-stream cut ends the client stream with an error event and no [DONE]', async () => {
    const sim = await startSim(defer, { cutMidStream: true, tokensPerSecond: 200 });
    const { client, url, logs } = await startGateway(defer, { sim });
    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('sim/sim-1'), stream: true, max_tokens: 10 }),
    });
    expect(raw.status).toBe(200);
    const body = await raw.text();
    expect(body).toContain('"content":"A"');
    expect(body).not.toContain('[DONE]');
    expect(
      body.endsWith(
        'event: error\ndata: {"error":{"message":"The provider sim broke off the stream before it was complete.","type":"stream_error","code":"stream_interrupted"}}\n\n',
      ),
    ).toBe(true);

    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      max_tokens: 10,
    });
    let content = '';
    const read = (async () => {
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    })();
    await expect(read).rejects.toBeInstanceOf(APIError);
    expect(content).toBe('A thoughtful gift says you');
    await until(() => logs.length === 2);
    expect(logs.map((l) => l.outcome)).toEqual(['stream_error', 'stream_error']);
    expect(sim.requests).toHaveLength(2); // never retried once a byte had gone to the client
  });

  it('a client that leaves mid-stream stops the provider request', async () => {
    const sim = await startSim(defer, { tokensPerSecond: 20 });
    const { client, logs } = await startGateway(defer, { sim });
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      max_tokens: 200,
    });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break; // leaves after the first token (break aborts the request)
    }
    await until(() => logs.length === 1);
    expect(logs[0]!.outcome).toBe('canceled');
  });
});

describe('AI gateway: our own limits in a chain', () => {
  it('a spent budget on the primary diverts to a cheaper step instead of refusing', async () => {
    const sim = await startSim(defer);
    const flow: AiFlow = {
      name: 'budgeted',
      run: (request, ctx) =>
        runFallbackChain(
          [
            { name: 'premium', provider: 'sim', model: 'big' },
            { name: 'cheap', provider: 'sim', model: 'small' },
          ],
          request,
          ctx,
        ),
    };
    const { client } = await startGateway(
      defer,
      { sim },
      {
        prices: {
          'sim/big': { inputPerMTok: 0, outputPerMTok: 100 },
          'sim/small': { inputPerMTok: 0, outputPerMTok: 1 },
        },
        spendRules: [
          {
            name: 'premium-budget',
            budgetUsd: 0.001,
            windowMs: 3_600_000,
            scope: { by: 'model', value: 'sim/big' },
          },
        ],
        routes: () => flow,
      },
    );
    const first = await client.chat.completions
      .create(ask('dynamic/budgeted', { max_tokens: 10 }))
      .withResponse();
    expect(first.response.headers.get('x-breakwater-step')).toBe('premium');
    expect(first.response.headers.get('x-breakwater-cost-usd')).toBe('0.001');
    const second = await client.chat.completions
      .create(ask('dynamic/budgeted', { max_tokens: 10 }))
      .withResponse();
    expect(second.response.headers.get('x-breakwater-step')).toBe('cheap');
    expect(second.response.headers.get('x-breakwater-attempts')).toBe('1');
    expect(second.response.headers.get('x-breakwater-cost-usd')).toBe('0.00001');
    expect(sim.requests.map((r) => r.model)).toEqual(['big', 'small']);
  });
});
