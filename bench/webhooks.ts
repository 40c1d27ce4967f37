/**
 * `npm run bench -- webhooks [--duration=S] [--connections=N] [--rounds=R] [--worker]`: autocannon at 64
 * connections (default) against, in the same run and on the same machine, for R rounds (default 3),
 *
 * - **bare**: a Fastify route that parses the JSON body and answers 200 — the ceiling of any HTTP endpoint here;
 * - **webhooks**: `POST /webhooks/payments` on Breakwater's server, the whole pipeline: admission (rate limit
 *   and backlog limit, both set high enough never to refuse), raw body read, Stripe signature verified
 *   (HMAC-SHA256), JSON parsed, event id read, the inbox row and its job inserted in one SQLite transaction
 *   (WAL, `synchronous = FULL`, group commit) and the 200 sent only once that commit is durable.
 *
 * Every request carries a distinct, validly signed event (made in this process just before it is sent), so
 * no request is a duplicate. Each server runs in its own child process (this file again, with `--serve=`), so
 * the load generator does not share its event loop. The worker does not run unless `--worker`: the figure is
 * the acknowledgement rate of the ingress; handlers run later, in the background, as jobs.
 *
 * Reports accepted (2xx) deliveries per second and p50/p99 latency in ms of every run, then the median of the
 * rounds' webhooks ÷ bare throughput ratios and the median webhooks p99. Targets
 * (docs/webhooks.md#benchmark): ratio ≥ 0.5, p99 ≤ 20 ms.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { lib } from './lib.js';
import { median, reportServerStats } from './support.js';

const SECRET = 'whsec_bench_0123456789abcdef';
const SELF = fileURLToPath(import.meta.url);

interface AutocannonResult {
  duration: number;
  latency: { p50: number; p99: number; average: number };
  requests: { average: number; total: number };
  statusCodeStats: Record<string, { count: number }>;
  non2xx: number;
  errors: number;
  timeouts: number;
}
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  requests: {
    method: string;
    path: string;
    setupRequest: (request: AutocannonRequest) => AutocannonRequest;
  }[];
}) => Promise<AutocannonResult>;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** A distinct Stripe-style event per call, signed as Stripe signs. */
function eventMaker(run: string): () => { body: string; signature: string } {
  let n = 0;
  return () => {
    const id = `evt_${run}_${++n}`;
    const t = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      id,
      object: 'event',
      type: 'payment_intent.succeeded',
      created: t,
      data: {
        object: { id: `pi_${n}`, amount: 4250, currency: 'usd', metadata: { order_id: `ord_${n % 500}` } },
      },
    });
    const signature = `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex')}`;
    return { body, signature };
  };
}

// ---- the server side (child process) ----

async function serve(kind: string): Promise<void> {
  const { default: Fastify } = await import('fastify');
  let url: string;
  if (kind === 'bare') {
    const app = Fastify({ logger: false });
    app.post('/webhooks/payments', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  } else {
    const { createJobs, createServer, openSqliteStore } = lib;
    const { createWebhookIngress, defineWebhookSource, onWebhook, stripeVerifier } = lib;
    const store = await openSqliteStore({ path: arg('db')! });
    const jobs = createJobs({ store });
    const payments = defineWebhookSource({
      name: 'payments',
      verifier: stripeVerifier({ secrets: [SECRET] }),
      rateLimit: { limit: 1_000_000, windowMs: 1_000 },
      maxBacklog: 100_000_000,
      orderingKey: (event: { data: { object: { metadata: { order_id: string } } } }) =>
        event.data.object.metadata.order_id,
      concurrency: 8,
    });
    const ingress = createWebhookIngress({
      store,
      jobs,
      sources: [payments],
      handlers: [onWebhook('payments', '*', () => undefined)],
    });
    const app = createServer({ jobs, store, routes: [ingress.routes] });
    await app.listen({ host: '127.0.0.1', port: 0 });
    if (process.argv.includes('--worker')) jobs.start();
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  }
  // Its own figures at the end, and a clean exit on SIGTERM (so `--cpu-prof` can write its profile).
  reportServerStats(kind);
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

// ---- the load side ----

async function startServer(kind: string, extra: string[]): Promise<{ child: ChildProcess; url: string }> {
  // BENCH_PROF_DIR=<dir>: each server writes a CPU profile there (read it with Chrome's DevTools).
  const profile = process.env.BENCH_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', SELF, `--serve=${kind}`, ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve((JSON.parse(line) as { url: string }).url),
    );
    child.once('exit', (code) => reject(new Error(`the ${kind} server exited (${code})`)));
  });
  return { child, url };
}

interface Measured {
  name: string;
  acceptedPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, url: string, connections: number, duration: number): Promise<Measured> {
  const next = eventMaker(`${name}_${Date.now()}`);
  const result = await autocannon({
    url,
    connections,
    duration,
    requests: [
      {
        method: 'POST',
        path: '/webhooks/payments',
        setupRequest: (request) => {
          const { body, signature } = next();
          return {
            ...request,
            body,
            headers: { 'content-type': 'application/json', 'stripe-signature': signature },
          };
        },
      },
    ],
  });
  const accepted = Object.entries(result.statusCodeStats)
    .filter(([status]) => status.startsWith('2'))
    .reduce((sum, [, s]) => sum + Number(s.count), 0);
  return {
    name,
    acceptedPerSec: accepted / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

export async function main(): Promise<void> {
  const duration = Number(arg('duration') ?? 10);
  const connections = Number(arg('connections') ?? 64);
  const rounds = Number(arg('rounds') ?? 3);
  const worker = process.argv.includes('--worker');
  const dir = mkdtempSync(join(tmpdir(), 'breakwater-bench-webhooks-'));
  const runs: { bare: Measured; webhooks: Measured }[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const pair: Partial<Record<'bare' | 'webhooks', Measured>> = {};
      for (const kind of ['bare', 'webhooks'] as const) {
        const extra =
          kind === 'webhooks'
            ? [`--db=${join(dir, `${Date.now()}.db`)}`, ...(worker ? ['--worker'] : [])]
            : [];
        const server = await startServer(kind, extra);
        try {
          await load(`${kind} (warm-up)`, server.url, connections, 2);
          server.child.kill('SIGUSR2'); // the measured run begins (reportServerStats)
          pair[kind] = await load(kind, server.url, connections, duration);
        } finally {
          server.child.kill('SIGTERM');
        }
      }
      runs.push(pair as { bare: Measured; webhooks: Measured });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    `\nwebhooks: ${connections} connections, ${duration} s each, every request a new signed event` +
      `${worker ? ', worker running' : ', no worker (acknowledgement only)'}, ${rounds} round${rounds === 1 ? '' : 's'}` +
      ' (each runs bare, then webhooks)',
  );
  console.log('  round  case        accepted/s   p50 ms   p99 ms   non-2xx   errors');
  runs.forEach((pair, i) => {
    for (const r of [pair.bare, pair.webhooks]) {
      console.log(
        `  ${String(i + 1).padStart(5)}  ${r.name.padEnd(10)}  ${Math.round(r.acceptedPerSec).toLocaleString('en-US').padStart(10)}` +
          `  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ${String(r.non2xx).padStart(8)}` +
          `  ${String(r.errors).padStart(7)}`,
      );
    }
  });
  // Medians over rounds: a small machine's speed drifts by tens of percent within a minute, and a round's
  // ratio pairs two runs made seconds apart.
  const ratios = runs.map((pair) => pair.webhooks.acceptedPerSec / pair.bare.acceptedPerSec);
  const ratio = median(ratios);
  const p99 = median(runs.map((pair) => pair.webhooks.p99));
  console.log(
    `  webhooks ÷ bare: ${ratio.toFixed(2)}x, median of ${ratios.map((r) => r.toFixed(2)).join(', ')} ` +
      `(target ≥ 0.50: ${ratio >= 0.5 ? 'met' : 'missed'}); webhooks p99 ${p99.toFixed(1)} ms, median ` +
      `(target ≤ 20: ${p99 <= 20 ? 'met' : 'missed'})`,
  );
}

const serving = arg('serve');
if (serving !== undefined) await serve(serving);
