import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import {
  embeddingVector,
  parseSettings,
  startSimulatedProvider,
  token,
  type SimulatedProvider,
} from './index.js';

const running: SimulatedProvider[] = [];
afterEach(async () => {
  for (const sim of running.splice(0)) await sim.close();
});

async function start(options: Parameters<typeof startSimulatedProvider>[0] = {}): Promise<SimulatedProvider> {
  const sim = await startSimulatedProvider(options);
  running.push(sim);
  return sim;
}

const client = (sim: SimulatedProvider, apiKey = 'k') =>
  new OpenAI({ baseURL: sim.url, apiKey, maxRetries: 0 });

describe('simulated provider', () => {
  it('answers deterministically, with usage, streamed and not', async () => {
    const sim = await start({ cachedTokens: 4 });
    const plain = await client(sim).chat.completions.create({
      model: 'sim-1',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    expect(plain.choices[0]!.message.content).toBe('A thoughtful gift');
    expect(plain.choices[0]!.finish_reason).toBe('length');
    expect(plain.usage).toEqual({
      prompt_tokens: 8,
      completion_tokens: 3,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 4 },
    });
    const stream = await client(sim).chat.completions.create({
      model: 'sim-1',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toHaveLength(16 + 3); // role, 16 tokens, finish, usage
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      Array.from({ length: 16 }, (_, i) => token(i)).join(''),
    );
    expect(chunks.at(-1)!.usage?.completion_tokens).toBe(16);
    expect(sim.requests.map((r) => [r.stream, r.includeUsage])).toEqual([
      [false, false],
      [true, true],
    ]);
  });

  it('embeds deterministically (float and base64 alike), lists and retrieves its models', async () => {
    const sim = await start({ models: ['sim-1', 'embed-1'] });
    const c = client(sim);
    // The SDK asks for base64 by default and decodes it to the same float32 values.
    const decoded = await c.embeddings.create({ model: 'embed-1', input: ['kites', 'a gift idea'] });
    const floats = await c.embeddings.create({
      model: 'embed-1',
      input: ['kites', 'a gift idea'],
      encoding_format: 'float',
    });
    expect(decoded.data.map((d) => d.embedding)).toEqual(floats.data.map((d) => d.embedding));
    expect(floats.data[1]!.embedding).toEqual(embeddingVector('a gift idea', 8));
    expect(Math.hypot(...floats.data[0]!.embedding)).toBeCloseTo(1, 6);
    expect(floats.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
    const tokens = await c.embeddings.create({ model: 'embed-1', input: [1, 2, 3], dimensions: 4 });
    expect([tokens.data[0]!.embedding.length, tokens.usage.prompt_tokens]).toEqual([4, 3]);
    expect((await c.models.list()).data.map((m) => m.id)).toEqual(['sim-1', 'embed-1']);
    expect(await c.models.retrieve('embed-1')).toEqual({
      id: 'embed-1',
      object: 'model',
      created: 1_767_225_600,
      owned_by: 'llm-sim',
    });
    const missing = (await c.models.retrieve('nope').then(
      () => undefined,
      (e: unknown) => e,
    )) as { status: number; code: string };
    expect([missing.status, missing.code]).toEqual([404, 'model_not_found']);
    expect(sim.requests.map((r) => r.path)).toEqual(['/v1/embeddings', '/v1/embeddings', '/v1/embeddings']);
  });

  it('applies the same faults to embeddings: 503 at the error rate, 429, a body cut halfway', async () => {
    const sim = await start({ errorRate: 1 });
    const embed = () =>
      client(sim)
        .embeddings.create({ model: 'e', input: 'kites' })
        .then(
          () => 200,
          (e: unknown) => (e as { status?: number }).status ?? 'cut',
        );
    expect(await embed()).toBe(503);
    sim.faults.set({ rateLimit429: { retryAfterS: 1 } });
    expect(await embed()).toBe(429);
    sim.faults.set({ cutMidStream: true });
    expect(await embed()).toBe('cut');
    sim.faults.clear();
    expect(await embed()).toBe(200);
  });

  it('checks the key when it has one, and echoes what it got (as real providers do)', async () => {
    const sim = await start({ apiKey: 'right' });
    const error = (await client(sim, 'wrong')
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as { status: number; message: string };
    expect(error.status).toBe(401);
    expect(error.message).toContain('wrong');
  });

  it('answers 429 with Retry-After on every n-th request, and 503 at the error rate', async () => {
    const sim = await start({ rateLimit429: { every: 2, retryAfterS: 7 } });
    const call = () =>
      fetch(`${sim.url}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [] }),
      });
    const first = await call();
    expect([first.status, first.headers.get('retry-after')]).toEqual([429, '7']);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
    sim.faults.set({ errorRate: 1 });
    expect((await call()).status).toBe(503);
  });

  it('reports its own time per answer with reportServiceTime, and keeps no record with recordRequests: false', async () => {
    const sim = await start({ latencyMs: 30, reportServiceTime: true, recordRequests: false });
    const began = performance.now();
    const res = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [], max_tokens: 1 }),
    });
    const elapsed = performance.now() - began;
    const body = (await res.json()) as { x_sim_service_ms: number; choices: unknown[] };
    expect(body.choices).toHaveLength(1);
    // At least the 30 ms wait (a 1 ms allowance for timer rounding), at most what the client saw.
    expect(body.x_sim_service_ms).toBeGreaterThanOrEqual(29);
    expect(body.x_sim_service_ms).toBeLessThanOrEqual(elapsed);
    expect(sim.requests).toEqual([]);
    // Off by default: a plain answer has no such field.
    const plain = await start();
    const answer = (await (
      await fetch(`${plain.url}/chat/completions`, { method: 'POST', body: '{"model":"m","messages":[]}' })
    ).json()) as Record<string, unknown>;
    expect('x_sim_service_ms' in answer).toBe(false);
    expect(plain.requests).toHaveLength(1);
  });

  it('waits latencyMs plus a uniform draw of up to jitterMs per request', async () => {
    const draws: number[] = [];
    const sim = await start({
      latencyMs: 20,
      jitterMs: 200,
      random: () => {
        draws.push(0.9);
        return 0.9;
      },
    });
    const began = performance.now();
    const res = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [] }),
    });
    expect(res.status).toBe(200);
    // 20 + 0.9 × 200 = 200 ms at least (timers never fire early; a 1 ms allowance for their rounding).
    expect(performance.now() - began).toBeGreaterThanOrEqual(199);
    expect(draws).toEqual([0.9]);
    sim.faults.patch({ jitterMs: 0 });
    await fetch(`${sim.url}/chat/completions`, { method: 'POST', body: '{"model":"m","messages":[]}' });
    expect(draws).toEqual([0.9]);
  });

  it('hangs until released, over HTTP too', async () => {
    const sim = await start({ hang: true });
    const pending = fetch(`${sim.url}/chat/completions`, { method: 'POST', body: '{"messages":[]}' });
    while (sim.faults.hanging() === 0) await new Promise((r) => setTimeout(r, 5));
    const released = await fetch(`${sim.url.replace('/v1', '')}/_faults`, {
      method: 'PATCH',
      body: '{"hang":false}',
    });
    expect(((await released.json()) as { behaviour: { hang: boolean } }).behaviour.hang).toBe(false);
    expect((await pending).status).toBe(200);
    const bad = await fetch(`${sim.url.replace('/v1', '')}/_faults`, {
      method: 'PUT',
      body: '{"errorRate":2}',
    });
    expect(bad.status).toBe(400);
  });

  it('validates settings, naming the field', () => {
    expect(() => parseSettings({ nope: 1 })).toThrow('Unknown setting "nope"');
    expect(() => parseSettings({ firstByteMs: -1 })).toThrow(
      'firstByteMs must be a number from 0 to 600000.',
    );
    expect(() => parseSettings({ jitterMs: 600_001 })).toThrow('jitterMs must be a number from 0 to 600000.');
    expect(() => parseSettings({ rateLimit429: { every: 1.5, retryAfterS: 1 } })).toThrow('integer');
    expect(parseSettings({ rateLimit429: { retryAfterS: 2 } }).rateLimit429).toEqual({
      every: 1,
      retryAfterS: 2,
    });
  });
});
