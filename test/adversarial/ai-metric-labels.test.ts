/**
 * Metric labels of the AI gateway come from its configuration (client-chosen strings never become metric
 * labels: docs/architecture.md#identity-and-ownership). Over real HTTP, 20,000 requests naming random models
 * (an unknown provider, an unpriced model of a configured provider, an undeployed route, no provider at all)
 * add no series to `/metrics` once the first `_unknown` ones exist: the exposition's series count is asserted
 * exactly.
 */
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { executeStep, type AiFlow } from '../../src/ai/index.js';
import { createMetrics } from '../../src/server/metrics/index.js';
import { parseExposition, series } from '../../src/server/metrics/test-support.js';
import { startGateway, startSim, useCleanups } from '../ai/support.js';
import { seeded } from '../support/random.js';

/** `dynamic/gifts`: one step on the configured provider. */
const GIFTS: AiFlow = {
  name: 'gifts',
  version: 3,
  run: (request, ctx) => executeStep({ name: 'main', provider: 'sim', model: 'sim-1' }, request, ctx),
};

/** Samples in an exposition (every series, histogram buckets included). */
function seriesCount(text: string): number {
  let n = 0;
  for (const family of parseExposition(text).values()) n += family.samples.length;
  return n;
}

describe('AI gateway metric labels', () => {
  const defer = useCleanups();

  it('20,000 requests with random model names add no series after the first _unknown ones', async () => {
    const sim = await startSim(defer, { recordRequests: false });
    const gw = await startGateway(
      defer,
      { sim },
      {
        prices: { 'sim/priced': { inputPerMTok: 1, outputPerMTok: 2 } },
        routes: (name) => (name === 'gifts' ? GIFTS : undefined),
      },
    );
    const metrics = createMetrics();
    metrics.observeAi(gw.gateway);
    const pool = new Pool(gw.url, { connections: 32 });
    defer(() => pool.close());
    const statuses = new Map<number, number>();
    const send = async (model: string): Promise<void> => {
      const answer = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
      });
      await answer.body.dump();
      statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
    };
    const random = seeded(28);
    const name = (): string => Math.floor(random() * 2 ** 48).toString(36);
    /** The four ways a client names what is not configured. */
    const invented = [
      () => `sim/${name()}`, // a configured provider, a model nobody priced: answered 200 by the provider
      () => `${name()}/m`, // no such provider: 400 unknown_provider
      () => `dynamic/${name()}`, // no such route: 404 unknown_route
      () => name(), // no provider at all: 400 invalid_body
    ];

    // One of each: the configured names, and the first `_unknown` series of each kind.
    for (const model of ['sim/priced', 'dynamic/gifts', ...invented.map((make) => make())]) await send(model);
    const first = await metrics.scrape();
    const requests = parseExposition(first);
    expect(series(requests, 'breakwater_ai_requests_total')).toEqual({
      'model="priced",outcome="ok",provider="sim",route="direct",step="direct"': 1,
      'model="sim-1",outcome="ok",provider="sim",route="gifts",step="main"': 1,
      'model="_unknown",outcome="ok",provider="sim",route="direct",step="direct"': 1,
      'model="_unknown",outcome="unknown_provider",provider="_unknown",route="direct",step="direct"': 1,
      'model="none",outcome="unknown_route",provider="none",route="_unknown",step="none"': 1,
      'model="none",outcome="invalid_body",provider="none",route="direct",step="none"': 1,
    });

    const total = 20_000;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < total) {
        const i = next++;
        await send(invented[i % invented.length]!());
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));

    const last = await metrics.scrape();
    expect(seriesCount(last)).toBe(seriesCount(first));
    // Only counter values changed (more digits), never a label set.
    expect(Buffer.byteLength(last) - Buffer.byteLength(first)).toBeLessThan(10 * 1024);
    expect(series(parseExposition(last), 'breakwater_ai_requests_total')).toEqual({
      'model="priced",outcome="ok",provider="sim",route="direct",step="direct"': 1,
      'model="sim-1",outcome="ok",provider="sim",route="gifts",step="main"': 1,
      'model="_unknown",outcome="ok",provider="sim",route="direct",step="direct"': 1 + total / 4,
      'model="_unknown",outcome="unknown_provider",provider="_unknown",route="direct",step="direct"':
        1 + total / 4,
      'model="none",outcome="unknown_route",provider="none",route="_unknown",step="none"': 1 + total / 4,
      'model="none",outcome="invalid_body",provider="none",route="direct",step="none"': 1 + total / 4,
    });
    expect(Object.fromEntries(statuses)).toEqual({
      200: 3 + total / 4,
      400: 2 + total / 2,
      404: 1 + total / 4,
    });
  }, 120_000);
});
