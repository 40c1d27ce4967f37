/**
 * The gateway end to end with the official `openai` client: plain and streamed completions pass through,
 * the cost header is exact, keys stay secret, every `x-breakwater-*` request header is honoured and a bad
 * one is a 400 naming it.
 */
import { APIError, APIUserAbortError } from 'openai';
import { describe, expect, it } from 'vitest';
import { token } from '../../examples/llm-sim/index.js';
import { FakeClock } from '../../src/core/index.js';
import { SIM_KEY, ask, startGateway, startSim, until, useCleanups } from './support.js';

const defer = useCleanups();

function text(count: number): string {
  return Array.from({ length: count }, (_, i) => token(i)).join('');
}

describe('AI gateway: pass-through', () => {
  it('passes a plain completion through with the step, provider, model, attempts and exact cost headers', async () => {
    const sim = await startSim(defer, {
      usage: { promptTokens: 1234, completionTokens: 567 },
      cachedTokens: 200,
    });
    const { client, logs } = await startGateway(
      defer,
      { sim },
      {
        prices: { 'sim/sim-1': { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 } },
      },
    );
    const { data, response } = await client.chat.completions.create(ask('sim/sim-1')).withResponse();
    expect(data.choices[0]!.message.content).toBe(text(567));
    expect(data.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 567 });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-breakwater-step')).toBe('direct');
    expect(response.headers.get('x-breakwater-provider')).toBe('sim');
    expect(response.headers.get('x-breakwater-model')).toBe('sim-1');
    expect(response.headers.get('x-breakwater-attempts')).toBe('1');
    // (1234 − 200) × 2.5 + 200 × 1.25 + 567 × 10 = 8505 USD per million tokens → 0.008505 USD.
    expect(response.headers.get('x-breakwater-cost-usd')).toBe('0.008505');

    // The provider got its own model id, the gateway's key (never the client's).
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]!.model).toBe('sim-1');
    expect(sim.requests[0]!.authorization).toBe(`Bearer ${SIM_KEY}`);

    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      route: null,
      step: 'direct',
      provider: 'sim',
      model: 'sim-1',
      stream: false,
      status: 200,
      outcome: 'ok',
      prompt_tokens: 1234,
      completion_tokens: 567,
      cached_tokens: 200,
      cost_usd: '0.008505',
      attempts: 1,
      failed_steps: [],
    });
    expect(JSON.stringify(logs)).not.toContain(SIM_KEY);
    expect(JSON.stringify(logs)).not.toContain('Suggest a gift');
  });

  it('streams a completion through; the usage chunk it asked the provider for is stripped', async () => {
    const sim = await startSim(defer);
    const { client, logs } = await startGateway(
      defer,
      { sim },
      {
        prices: { 'sim/sim-1': { inputPerMTok: 1, outputPerMTok: 2 } },
      },
    );
    const { data: stream, response } = await client.chat.completions
      .create({ ...ask('sim/sim-1'), stream: true, max_tokens: 12 })
      .withResponse();
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('x-breakwater-step')).toBe('direct');
    expect(response.headers.get('x-breakwater-attempts')).toBe('1');
    expect(response.headers.get('x-breakwater-cost-usd')).toBeNull();
    let content = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.choices.length).toBe(1);
      content += chunk.choices[0]!.delta.content ?? '';
    }
    expect(content).toBe(text(12));
    expect(chunks).toBe(14); // role, 12 tokens, finish
    expect(sim.requests[0]!.includeUsage).toBe(true);
    // The cost still came from the usage chunk: 12 output tokens at 2 USD/MTok + 12 prompt tokens at 1.
    await until(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      stream: true,
      outcome: 'ok',
      prompt_tokens: 12,
      completion_tokens: 12,
      cost_usd: '0.000036',
    });
  });

  it('passes the usage chunk on when the client asked for it', async () => {
    const sim = await startSim(defer, { usage: { promptTokens: 7, completionTokens: 3 } });
    const { client } = await startGateway(defer, { sim });
    const stream = await client.chat.completions.create({
      ...ask('sim/sim-1'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3 });
  });
});

describe('AI gateway: request errors', () => {
  it('answers an unknown provider, a malformed model and an unknown route with problems', async () => {
    const sim = await startSim(defer);
    const { client, url } = await startGateway(defer, { sim });
    const unknown = await client.chat.completions.create(ask('nope/gpt')).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(APIError);
    expect((unknown as APIError).status).toBe(400);
    expect((unknown as APIError).code).toBe('unknown_provider');
    const malformed = await client.chat.completions.create(ask('gpt-4o')).catch((e: unknown) => e);
    expect((malformed as APIError).status).toBe(400);
    expect((malformed as APIError).param).toBe('model');
    const route = await client.chat.completions.create(ask('dynamic/support')).catch((e: unknown) => e);
    expect((route as APIError).status).toBe(404);
    expect((route as APIError).code).toBe('unknown_route');

    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/sim-1', messages: [] }),
    });
    expect(raw.status).toBe(400);
    expect(raw.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(await raw.json()).toMatchObject({ code: 'invalid_payload', field: 'messages', status: 400 });
    expect(sim.requests).toHaveLength(0);
  });

  it('never passes the provider key on: a refused key is a 502 without the provider text', async () => {
    const sim = await startSim(defer);
    const { client } = await startGateway(defer, { sim }, { env: { SIM_KEY: 'sk-wrong-key-987' } });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.message).toContain("refused the gateway's credentials");
    expect(JSON.stringify(error.error)).not.toContain('sk-wrong-key-987');
    expect(sim.requests).toHaveLength(1);
  });

  const bad: [string, string][] = [
    ['x-breakwater-request-timeout', 'abc'],
    ['x-breakwater-request-timeout', '0'],
    ['x-breakwater-request-timeout', '600001'],
    ['x-breakwater-max-attempts', '0'],
    ['x-breakwater-max-attempts', '6'],
    ['x-breakwater-max-attempts', '1.5'],
    ['x-breakwater-retry-delay', '5001'],
    ['x-breakwater-retry-delay', '-1'],
    ['x-breakwater-backoff', 'fibonacci'],
    ['x-breakwater-metadata', 'not json'],
    ['x-breakwater-metadata', '[1]'],
    ['x-breakwater-metadata', '{"user":{"id":1}}'],
  ];
  it.each(bad)(
    'refuses %s: %s with a 400 naming the header, before any provider call',
    async (header, value) => {
      const sim = await startSim(defer);
      const { client } = await startGateway(defer, { sim });
      const error = (await client.chat.completions
        .create(ask('sim/sim-1'), { headers: { [header]: value } })
        .catch((e: unknown) => e)) as APIError;
      expect(error).toBeInstanceOf(APIError);
      expect(error.status).toBe(400);
      expect(error.code).toBe('invalid_header');
      expect(error.param).toBe(header);
      expect(error.message).toContain(header);
      expect(sim.requests).toHaveLength(0);
    },
  );
});

describe('AI gateway: a provider with maxConnections', () => {
  it('keeps at most that many calls on it; the others wait in order, and one whose client left is never sent', async () => {
    const sim = await startSim(defer, { hang: true });
    const { client, logs } = await startGateway(
      defer,
      { sim },
      {
        providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY', maxConnections: 2 } },
      },
    );
    const leaving = new AbortController();
    const calls = [0, 1, 2, 3, 4].map((i) =>
      client.chat.completions
        .create(ask('sim/sim-1', { user: `u${i}` }), i === 3 ? { signal: leaving.signal } : {})
        .then(
          () => 'ok',
          (e: unknown) => (e instanceof APIUserAbortError ? 'aborted' : 'error'),
        ),
    );
    await until(() => sim.requests.length === 2);
    // Sockets need real time: nothing more reaches the provider while both calls hang.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sim.requests.map((r) => r.body.user)).toEqual(['u0', 'u1']);
    leaving.abort();
    await until(() => logs.length === 1);
    expect(logs[0]!.outcome).toBe('canceled');
    sim.faults.patch({ hang: false });
    expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok', 'aborted', 'ok']);
    expect(sim.requests.map((r) => r.body.user)).toEqual(['u0', 'u1', 'u2', 'u4']);
  });
});

describe('AI gateway: request headers', () => {
  it('x-breakwater-request-timeout bounds the wait for the first byte', async () => {
    const sim = await startSim(defer, { firstByteMs: 200 });
    const { client } = await startGateway(defer, { sim });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'), {
        headers: { 'x-breakwater-request-timeout': '50', 'x-breakwater-max-attempts': '1' },
      })
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(504);
    expect(error.code).toBe('first_byte_timeout');
    expect(error.headers?.get('x-breakwater-attempts')).toBe('1');
    const ok = await client.chat.completions.create(ask('sim/sim-1'), {
      headers: { 'x-breakwater-request-timeout': '5000' },
    });
    expect(ok.choices).toHaveLength(1);
  });

  it('x-breakwater-max-attempts caps the calls; the answer says how many were made', async () => {
    const sim = await startSim(defer, { errorRate: 1 });
    const { client } = await startGateway(defer, { sim });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'), {
        headers: { 'x-breakwater-max-attempts': '4', 'x-breakwater-retry-delay': '0' },
      })
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(503);
    expect(error.code).toBe('upstream_unavailable');
    expect(error.headers?.get('x-breakwater-attempts')).toBe('4');
    expect(sim.requests).toHaveLength(4);
  });

  const schedules: [string, number[]][] = [
    ['constant', [100, 100, 100]],
    ['linear', [100, 200, 300]],
    ['exponential', [100, 200, 400]],
  ];
  it.each(schedules)(
    'x-breakwater-retry-delay and x-breakwater-backoff %s set the waits (equal jitter at its low end)',
    async (backoff, waits) => {
      const clock = new FakeClock();
      const sim = await startSim(defer, { errorRate: 1 });
      const { client } = await startGateway(defer, { sim }, { clock, random: () => 0 });
      const call = client.chat.completions
        .create(ask('sim/sim-1'), {
          headers: {
            'x-breakwater-max-attempts': '4',
            'x-breakwater-retry-delay': '200',
            'x-breakwater-backoff': backoff,
          },
        })
        .catch((e: unknown) => e);
      for (const [i, wait] of waits.entries()) {
        await until(() => sim.requests.length === i + 1);
        await clock.tickAsync(wait - 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(sim.requests).toHaveLength(i + 1);
        await clock.tickAsync(1);
      }
      await until(() => sim.requests.length === 4);
      expect(((await call) as APIError).status).toBe(503);
    },
  );

  it('gateway defaults apply when no header says otherwise', async () => {
    const sim = await startSim(defer, { errorRate: 1 });
    const { client } = await startGateway(defer, { sim }, { defaults: { maxAttempts: 2, retryDelayMs: 0 } });
    const error = (await client.chat.completions
      .create(ask('sim/sim-1'))
      .catch((e: unknown) => e)) as APIError;
    expect(error.headers?.get('x-breakwater-attempts')).toBe('2');
    expect(sim.requests).toHaveLength(2);
  });
});
