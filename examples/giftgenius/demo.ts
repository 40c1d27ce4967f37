/**
 * `npm run demo`: GiftGenius plays the documents' scenario in about 15 seconds, narrated in the terminal.
 * It starts the whole story in this process (the three services, a simulated model server, the gateway on
 * SQLite in a temporary folder, all on free ports), then, with a real MCP client:
 *
 * 1. normal calls: gift ideas and a checkout;
 * 2. the gift service hangs: timeouts, the breaker opens, fast honest errors — while checkout keeps working;
 * 3. a deep analysis as a job, with progress and partial results;
 * 4. a webhook storm with duplicates, absorbed: each event handled once;
 * 5. a checkout whose response is lost: `unknown`, reconciled by the ledger, exactly one order.
 *
 * It ends with a summary table and leaves the gateway running for the dashboard and `/metrics` until Ctrl-C
 * (`--exit` stops at once: for scripts and tests).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway } from '../../src/entries/gateway.js';
import { createGiftGeniusApp } from './app.js';
import { startGiftGeniusServices } from './services/index.js';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from './webhooks.js';

type ToolResult = {
  structuredContent?: Record<string, unknown> & { error?: Record<string, unknown> };
  isError?: boolean;
};

const toStdout = (line = ''): void => void process.stdout.write(`${line}\n`);
const bold = (text: string): string => (process.stdout.isTTY ? `\u001b[1m${text}\u001b[22m` : text);
const ms = (since: number): string => `${Math.round(performance.now() - since)} ms`;
const bar = (done: number, total: number, width = 20): string => {
  const filled = Math.round((done / Math.max(total, 1)) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
};
const sleep = (delayMs: number) => new Promise((resolve) => setTimeout(resolve, delayMs));

/** What the demo found, scene by scene (for the summary and for a test). */
export interface DemoScene {
  scene: string;
  result: string;
}

export async function runDemo(
  options: { exit?: boolean; out?: (line?: string) => void } = {},
): Promise<DemoScene[]> {
  const out = options.out ?? toStdout;
  const summary: DemoScene[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'breakwater-demo-'));
  const services = await startGiftGeniusServices({ ports: {} });
  const gateway = await startGateway({
    app: createGiftGeniusApp({
      giftUrl: services.gift.url,
      commerceUrl: services.commerce.url,
      analyticsUrl: services.analytics.url,
      // Short enough for a one-minute story; the defaults (4 s, 30 s) are production's.
      giftTimeoutMs: 800,
      giftOpenMs: 4_000,
      stepMs: 600,
      llmPort: 0,
    }),
    store: join(dir, 'breakwater.db'),
    port: 0,
    graceMs: 1_000,
    log: () => undefined,
  });
  const client = new Client({ name: 'giftgenius-demo', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl)));
  const call = async (name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as ToolResult;
  const faults = (url: string, settings: Record<string, unknown>) =>
    fetch(`${url}/_faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(settings),
    });
  const orders = async (): Promise<Array<{ order_id: string; idempotency_key: string }>> =>
    ((await (await fetch(`${services.commerce.url}/orders`)).json()) as { orders: [] }).orders;

  out(bold(`GiftGenius on Breakwater — gateway ${gateway.url}`));

  // 1. Normal calls.
  out(`\n${bold('1. Normal calls')}`);
  let t = performance.now();
  const ideas = await call('suggest_gifts', { interests: ['tea', 'travel'], budget_usd: 40, limit: 3 });
  const gifts = (ideas.structuredContent?.gifts ?? []) as Array<{
    id: string;
    name: string;
    price_usd: number;
  }>;
  out(`   suggest_gifts → ${gifts.map((g) => `${g.name} ($${g.price_usd})`).join(', ')} (${ms(t)})`);
  t = performance.now();
  const first = await call('checkout', { product_id: gifts[0]!.id, customer_id: 'cus_demo' });
  const orderId = first.structuredContent?.order_id as string;
  out(
    `   checkout → order ${orderId}, operation ${String(first.structuredContent?.operation_id)} (${ms(t)})`,
  );
  summary.push({ scene: 'normal calls', result: `3 gifts, order ${orderId}` });

  // 2. The gift service hangs.
  out(`\n${bold('2. The gift service hangs')}`);
  await faults(services.gift.url, { hang: true });
  const checkoutMeanwhile = (async () => {
    const started = performance.now();
    const result = await call('checkout', { product_id: gifts[1]!.id, customer_id: 'cus_demo' });
    return { result, took: ms(started) };
  })();
  let fastest = Infinity;
  for (let i = 1; i <= 5; i++) {
    t = performance.now();
    const answer = await call('suggest_gifts', { interests: ['coffee'], budget_usd: 30 });
    const took = performance.now() - t;
    const error = answer.structuredContent?.error ?? {};
    out(`   call ${i}: ${String(error.category)} after ${Math.round(took)} ms — "${String(error.message)}"`);
    if (error.category === 'circuit_open') fastest = Math.min(fastest, took);
  }
  const meanwhile = await checkoutMeanwhile;
  out(
    `   meanwhile checkout → ${meanwhile.result.isError === true ? 'failed' : `order ${String(meanwhile.result.structuredContent?.order_id)}`} (${meanwhile.took}): commerce has its own bulkhead and breaker`,
  );
  await faults(services.gift.url, {});
  summary.push({
    scene: 'gift service hangs',
    result: `breaker open, circuit_open answered in ${Math.round(fastest)} ms; checkout unaffected`,
  });

  // 3. A deep analysis as a job (after the breaker lets a trial call through again).
  out(`\n${bold('3. A deep analysis as a job')}`);
  await sleep(4_200);
  const started = await call('start_deep_analysis', { interests: ['music', 'cooking'], budget_usd: 80 });
  const jobId = started.structuredContent?.job_id as string;
  out(`   start_deep_analysis → job ${jobId} (answered at once)`);
  let status: Record<string, unknown> = {};
  for (;;) {
    status = (await call('get_job_status', { job_id: jobId })).structuredContent ?? {};
    const progress = status.progress as { step: number; total: number; message?: string } | undefined;
    const partial = (status.partial_results as unknown[] | undefined)?.length ?? 0;
    out(
      `   ${bar(progress?.step ?? 0, progress?.total ?? 4)} ${String(status.status)}${progress?.message ? ` — ${progress.message}` : ''}${partial > 0 ? ` (${partial} partial result${partial > 1 ? 's' : ''})` : ''}`,
    );
    if (!['pending', 'in_progress'].includes(String(status.status))) break;
    await sleep(500);
  }
  summary.push({
    scene: 'deep analysis (job)',
    result: `${String(status.status)}, progress and partial results`,
  });

  // 4. A webhook storm with duplicates.
  out(`\n${bold('4. A webhook storm')}`);
  const deliveries = Array.from({ length: 200 }, (_, i) =>
    paymentDelivery(DEMO_WEBHOOK_SECRET, {
      id: `evt_demo_${i % 140}`, // 60 of the 200 are redeliveries
      type: 'payment_intent.succeeded',
      orderId,
      customerId: 'cus_demo',
      amountCents: 1_999,
    }),
  );
  t = performance.now();
  const answers: Array<{ duplicate?: boolean }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < deliveries.length) {
        const delivery = deliveries[next++]!;
        const response = await fetch(`${gateway.url}/webhooks/payments`, {
          method: 'POST',
          headers: delivery.headers,
          body: delivery.body,
        });
        answers.push((await response.json()) as { duplicate?: boolean });
      }
    }),
  );
  const duplicates = answers.filter((a) => a.duplicate === true).length;
  out(`   200 deliveries in ${ms(t)}: ${200 - duplicates} accepted, ${duplicates} duplicates absorbed`);
  for (;;) {
    const stats = await gateway.store.stats();
    if ((stats.counts.pending ?? 0) + (stats.counts.in_progress ?? 0) === 0) break;
    await sleep(200);
  }
  const handled = await gateway.store.list({ type: 'webhook.payments', status: 'completed', limit: 1_000 });
  out(`   ${handled.length} handler runs, one per accepted event, each as a job`);
  summary.push({
    scene: 'webhook storm',
    result: `${200 - duplicates} events, ${handled.length} handled, ${duplicates} duplicates absorbed`,
  });

  // 5. A checkout whose response is lost.
  out(`\n${bold('5. A checkout whose response is lost')}`);
  await faults(services.commerce.url, { commitThenDrop: true });
  t = performance.now();
  const lost = await call('checkout', { product_id: gifts[2]?.id ?? gifts[0]!.id, customer_id: 'cus_lost' });
  await faults(services.commerce.url, {});
  const key = String(lost.structuredContent?.operation_id);
  const placed = (await orders()).filter((o) => o.idempotency_key === key).length;
  out(
    `   commerce committed the order and dropped the answer; the ledger looked it up by its operation id: ` +
      `${lost.structuredContent?.reconciled === true ? 'found' : 'not found'} (${ms(t)})`,
  );
  out(`   orders under ${key}: ${placed}`);
  summary.push({ scene: 'lost checkout response', result: `unknown → reconciled, ${placed} order` });

  out(`\n${bold('Summary')}`);
  const width = Math.max(...summary.map((s) => s.scene.length));
  for (const { scene, result } of summary) out(`   ${scene.padEnd(width)}  ${result}`);
  out(`\n   dashboard ${gateway.url}/   metrics ${gateway.url}/metrics   MCP ${gateway.mcpUrl}`);

  await client.close();
  const stop = async () => {
    await gateway.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  };
  if (options.exit === true) {
    await stop();
    return summary;
  }
  out('   (the gateway keeps running: Ctrl-C to stop)');
  process.once('SIGINT', () => void stop().then(() => process.exit(0)));
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) await runDemo({ exit: process.argv.includes('--exit') });
