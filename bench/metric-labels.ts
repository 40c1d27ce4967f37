/**
 * `npm run bench -- metric-labels [--requests=N]`: what client-chosen model names cost a gateway's metrics.
 * N requests (default 20,000) over real HTTP to the AI gateway, each naming a random model (an unpriced model
 * of the configured provider, an unknown provider, an undeployed route, no provider at all, in turn), with the
 * gateway's metrics observing it, for two ways of labelling:
 *
 * - **configured labels**: `metrics.observeAi(gateway)`, labels from configuration (`_unknown` otherwise);
 * - **request labels**: the same, labelled with the request's own strings, as the metrics were labelled
 *   before labels were bounded (a model string, a provider name as the client sent them).
 *
 * The gateway runs in a process of its own (the provider and the load in this one), as `breakwater serve`
 * would. For each case: the series in `/metrics` (samples, histogram buckets included), its size, the time
 * of the last scrape, and the gateway process's JS heap in use and RSS after a full GC, before and after the
 * load. The tests assert the series count (test/adversarial/ai-metric-labels.test.ts); memory is reported
 * here only, since it depends on the machine and the collector.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fastify } from 'fastify';
import { Pool } from 'undici';
import { startSimulatedProvider } from '../examples/llm-sim/index.js';
import { createAiGateway, type AiRequestLog } from '../src/entries/ai.js';
import { createMetrics } from '../src/entries/server.js';
import { intArg } from './support.js';

const SELF = fileURLToPath(import.meta.url);
type Kind = 'configured labels' | 'request labels';

/** The labels a line carried before they were bounded: the request's own strings. */
function requestLabels(line: AiRequestLog) {
  return {
    route: line.route === null ? 'direct' : line.route.replace(/@\d+$/, ''),
    step: line.step ?? 'none',
    provider: line.provider ?? 'none',
    model: line.model ?? 'none',
    outcome: line.outcome,
  };
}

/** The gateway process: `/v1/chat/completions`, `/metrics`, and `/memory` (after a full GC). */
async function serve(kind: Kind, providerUrl: string): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const gateway = createAiGateway({
    providers: { sim: { baseUrl: providerUrl, apiKeyEnv: 'SIM_KEY' } },
    env: { SIM_KEY: 'sk-sim' },
    prices: { 'sim/priced': { inputPerMTok: 1, outputPerMTok: 2 } },
  });
  const metrics = createMetrics();
  metrics.observeAi(
    kind === 'configured labels' ? gateway : { onRequest: gateway.onRequest, metricLabels: requestLabels },
  );
  const app = fastify();
  await gateway.routes(app);
  await metrics.routes(app);
  app.get('/memory', async () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { rss: m.rss / 1048576, heap: m.heapUsed / 1048576 };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  console.log(`listening ${(app.server.address() as { port: number }).port}`);
}

async function run(kind: Kind, requests: number): Promise<string[]> {
  const sim = await startSimulatedProvider({ apiKey: 'sk-sim', recordRequests: false });
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', SELF, `--serve=${kind}`, `--provider=${sim.url}`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const [first] = (await once(lines, 'line')) as [string];
  const port = Number(/^listening (\d+)$/.exec(first)![1]);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 32 });
  const get = async <T>(path: string): Promise<{ body: T; ms: number }> => {
    const started = performance.now();
    const answer = await pool.request({ path, method: 'GET' });
    const body = (path === '/metrics' ? await answer.body.text() : await answer.body.json()) as T;
    return { body, ms: performance.now() - started };
  };
  const send = async (model: string): Promise<void> => {
    const answer = await pool.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    await answer.body.dump();
  };
  const names = [
    (r: string) => `sim/${r}`,
    (r: string) => `${r}/m`,
    (r: string) => `dynamic/${r}`,
    (r: string) => r,
  ];
  const count = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  // Warm up under the same load with the same four names: the JIT, the connection pools and the heap's
  // young generation reach their working size first, so the measure shows what the names add.
  const load = async (count: number, name: (i: number) => string): Promise<void> => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) {
          const i = next++;
          await send(names[i % names.length]!(name(i)));
        }
      }),
    );
  };
  await load(5_000, () => 'warmup');
  const before = { text: (await get<string>('/metrics')).body, ...(await get<Mem>('/memory')).body };
  await load(requests, (i) => `${i}-${Math.random().toString(36).slice(2)}`);
  const scraped = await get<string>('/metrics');
  const after = { text: scraped.body, ...(await get<Mem>('/memory')).body };
  await pool.close();
  child.kill();
  await once(child, 'exit');
  await sim.close();
  return [
    kind,
    `${count(before.text)} → ${count(after.text)}`,
    `${(before.text.length / 1024).toFixed(1)} → ${(after.text.length / 1024).toFixed(1)} KiB`,
    `${scraped.ms.toFixed(0)} ms`,
    `${before.heap.toFixed(1)} → ${after.heap.toFixed(1)} MB`,
    `${before.rss.toFixed(0)} → ${after.rss.toFixed(0)} MB`,
  ];
}

interface Mem {
  rss: number;
  heap: number;
}

export async function main(): Promise<void> {
  const requests = intArg('requests', 20_000);
  const rows = [await run('configured labels', requests), await run('request labels', requests)];
  console.log(`\nmetric labels: ${requests} requests with random model names (gateway process)`);
  console.log(['case', 'series', '/metrics', 'scrape', 'JS heap after GC', 'RSS after GC'].join(' | '));
  for (const row of rows) console.log(row.join(' | '));
}

const serving = process.argv.find((a) => a.startsWith('--serve='));
if (serving !== undefined) {
  const provider = process.argv.find((a) => a.startsWith('--provider='))!.slice('--provider='.length);
  await serve(serving.slice('--serve='.length) as Kind, provider);
}
