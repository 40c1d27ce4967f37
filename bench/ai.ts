/**
 * `npm run bench -- ai [--duration=S] [--connections=N] [--provider-ms=MS] [--provider-jitter-ms=MS] [--pin]
 * [--only=breakwater,portkey] [--stream[=TOKENS]]`:
 * the AI gateway's cost per request. autocannon at 200 connections (default) sends the same non-streamed chat completion, in the same
 * run and on the same machine, to the cases below. `--stream` asks for a streamed answer instead: the provider
 * sends TOKENS (default 50) SSE frames at once, each proxy passes the stream through, and a request ends with
 * the stream's end (saturated load only: not with `--provider-ms`). Portkey 1.15.2 fails every streamed
 * request here (`TypeError: immutable` from its header rewrite;
 * https://github.com/Portkey-AI/gateway/issues/1389):
 *
 * - **direct**: the simulated OpenAI-compatible provider (examples/llm-sim, answering at once);
 * - **proxy**: the floor, a proxy with no logic (node:http and one undici Pool passing the body through): the
 *   least any Node.js gateway adds on this machine, so what a gateway adds beyond it is its own;
 * - **fastify-proxy**: the same pass-through as a Fastify route (its JSON parser and reply): what the server
 *   Breakwater is built on costs by itself;
 * - **breakwater**: Breakwater's AI gateway (`createAiGateway` on its server) in front of that provider;
 * - **breakwater+limits**: the same with a sliding-window rate rule and a spend rule (memory counters: the
 *   embedded single-process setup), so every request is also counted and reserved and settled;
 * - **portkey**: the Portkey open-source gateway (`@portkey-ai/gateway`) in front of the same provider.
 *
 * Each server runs in its own process (the provider, Breakwater, Portkey), so none shares the load
 * generator's event loop. With an instant provider (`--provider-ms=0`, the default) every case is saturated
 * (autocannon's load): 200 connections always busy, so the latency is 200 ÷ throughput, added latency is a
 * gateway's p50/p99 minus the direct p50/p99, and the figure that matters is throughput. With a provider that
 * takes as long as a model does (`--provider-ms=200`), the load is what 200 concurrent requests really offer
 * (this bench's own paced load, ai-load.ts), and added latency is the gateway's own: per request, the latency
 * minus the provider's own time for it (which the provider reports in its answer) is the request's overhead,
 * and a gateway's added p50/p99 is its overhead p50/p99 minus the direct one. A provider that always takes
 * exactly the same time keeps the 200 clients in lockstep, so requests arrive in bursts of 200 at once;
 * `--provider-jitter-ms=100` spreads each answer over 100 ms more, as real models do. `--pin` (Linux
 * `taskset`) gives the gateway under test CPU 1 and puts the load generator and the provider on CPU 0, so on
 * a small machine the gateway's latency is not the load generator's scheduling. Each of our servers prints,
 * when stopped, its event-loop delay, CPU and longest GC pauses over the measured run (start-up and warm-up
 * left out). Targets (docs/ai-gateway.md#performance): added p50 ≤ 1 ms, p99 ≤ 5 ms at 200 concurrent
 * requests, and more throughput than Portkey.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer as createNetServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startBareProxy, startFastifyProxy } from './ai-floors.js';
import { pacedLoad } from './ai-load.js';
import { lib } from './lib.js';
import { reportServerStats } from './support.js';

const SELF = fileURLToPath(import.meta.url);
const require = createRequire(import.meta.url);

interface AutocannonResult {
  duration: number;
  latency: { p50: number; p99: number };
  statusCodeStats: Record<string, { count: number }>;
  non2xx: number;
  errors: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  method: string;
  headers: Record<string, string>;
  body: string;
}) => Promise<AutocannonResult>;
const autocannon = require('autocannon') as Autocannon;

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** `--stream[=TOKENS]`: the tokens of each streamed answer, or undefined (answers are not streamed). */
const STREAM_TOKENS = process.argv.includes('--stream')
  ? 50
  : arg('stream') === undefined
    ? undefined
    : Number(arg('stream'));

const BODY = JSON.stringify({
  model: 'gift-ranker',
  messages: [{ role: 'user', content: 'Rank these gifts for a tea lover: kettle, kite, yo-yo.' }],
  ...(STREAM_TOKENS === undefined ? { max_tokens: 16 } : { max_tokens: STREAM_TOKENS, stream: true }),
});

// ---- the server side (this file again, with --serve=) ----

async function serve(kind: string): Promise<void> {
  let url: string;
  if (kind === 'provider') {
    const { startSimulatedProvider } = await import('../examples/llm-sim/index.js');
    // A provider that answers in `--provider-ms` (default 0: at once, the gateway's CPU is all that is measured).
    const sim = await startSimulatedProvider({
      port: 0,
      firstByteMs: Number(arg('provider-ms') ?? 0),
      jitterMs: Number(arg('provider-jitter-ms') ?? 0),
      tokensPerSecond: 0,
      // Its time per request goes into each answer (the paced load subtracts it); no request is kept.
      reportServiceTime: true,
      recordRequests: false,
    });
    url = sim.url;
  } else if (kind === 'proxy') {
    url = await startBareProxy(arg('provider')!, STREAM_TOKENS !== undefined);
  } else if (kind === 'fastify-proxy') {
    url = await startFastifyProxy(arg('provider')!, STREAM_TOKENS !== undefined);
  } else {
    const { createAiGateway, createServer, createJobs, openSqliteStore } = lib;
    const store = await openSqliteStore({ path: ':memory:' });
    const limits = kind === 'breakwater+limits';
    const ai = createAiGateway({
      providers: { sim: { baseUrl: arg('provider')! } },
      prices: { 'sim/gift-ranker': { inputPerMTok: 2.5, outputPerMTok: 10 } },
      ...(limits
        ? {
            rateRules: [
              {
                name: 'per-user',
                // Counted on every request, never refusing one (10,000 per 100 ms): at ~9k requests/s a burst
                // could pass 10,000 in a sliding second, and a 429 would read as a failed request.
                limit: 10_000,
                windowMs: 100,
                technique: 'sliding' as const,
                scope: { by: 'metadata' as const, key: 'user' },
              },
            ],
            spendRules: [
              {
                name: 'daily',
                budgetUsd: 1_000_000,
                windowMs: 86_400_000,
                scope: { by: 'provider' as const },
              },
            ],
          }
        : {}),
    });
    const app = createServer({ jobs: createJobs({ store }), store, routes: [ai.routes] });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1`;
  }
  reportServerStats(kind);
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

// ---- the load side ----

/** `--pin`: the CPU each kind of process runs on (Linux `taskset`), else undefined (the OS decides). */
const PIN = process.argv.includes('--pin') ? { load: 0, gateway: 1 } : undefined;

async function start(
  args: string[],
  ready: (line: string) => string | undefined,
  cpu?: number,
): Promise<{ child: ChildProcess; url: string }> {
  const child =
    cpu === undefined
      ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
      : spawn('taskset', ['-c', String(cpu), process.execPath, ...args], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const found = ready(line);
      if (found !== undefined) resolve(found);
      else if (process.env.BENCH_SERVER_FLAGS) process.stderr.write(`${line}\n`); // e.g. --trace-gc's lines
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code})`)));
  });
  return { child, url };
}

function startOwn(kind: string, extra: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const cpu = PIN === undefined ? undefined : kind === 'provider' ? PIN.load : PIN.gateway;
  // BENCH_PROF_DIR=<dir>: each of our servers writes a CPU profile there (read it with Chrome's DevTools).
  // BENCH_SERVER_FLAGS="--max-semi-space-size=64 …": Node flags for Breakwater's servers.
  const profile = process.env.BENCH_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`]
    : [];
  const flags = (process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
  return start(
    [...profile, ...flags, '--import', 'tsx', SELF, `--serve=${kind}`, ...extra],
    (line) => {
      try {
        return (JSON.parse(line) as { url: string }).url;
      } catch {
        return undefined;
      }
    },
    cpu,
  );
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startPortkey(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const script = require.resolve('@portkey-ai/gateway/build/start-server.js');
  return start(
    [script, `--port=${port}`, '--headless'],
    (line) =>
      // eslint-disable-next-line no-control-regex
      line.replace(/\u001b\[[0-9;]*m/g, '').includes('Ready for connections')
        ? `http://127.0.0.1:${port}/v1`
        : undefined,
    PIN?.gateway,
  );
}

interface Measured {
  name: string;
  perSec: number;
  p50: number;
  p99: number;
  /** Paced load only: latency minus the provider's own time per request (see ai-load.ts). */
  overheadP50?: number | undefined;
  overheadP99?: number | undefined;
  failed: number;
}

interface Case {
  name: string;
  /** Starts the server (if any) and resolves its `/v1` base URL. */
  url: () => Promise<string>;
  headers: Record<string, string>;
  /** Breakwater routes by `<provider>/<model>`; the others take the bare model name. */
  model: string;
}

/** Seconds of load before each measured run (connections opened, code warm). */
const WARM_UP_S = 2;

/** Warms `c` up, calls `measuring` (our servers start counting), then measures it for `duration` seconds. */
async function load(
  c: Case,
  url: string,
  connections: number,
  duration: number,
  paced: boolean,
  measuring: () => void,
): Promise<Measured> {
  const body = BODY.replace('"gift-ranker"', JSON.stringify(c.model));
  const headers = { 'content-type': 'application/json', ...c.headers };
  const target = `${url}/chat/completions`;
  if (paced) {
    return {
      name: c.name,
      ...(await pacedLoad(target, body, headers, connections, WARM_UP_S, duration, measuring)),
    };
  }
  const options = { url: target, connections, method: 'POST', headers, body };
  await autocannon({ ...options, duration: WARM_UP_S });
  measuring();
  const result = await autocannon({ ...options, duration });
  const ok = Object.entries(result.statusCodeStats)
    .filter(([status]) => status.startsWith('2'))
    .reduce((sum, [, s]) => sum + Number(s.count), 0);
  return {
    name: c.name,
    perSec: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors,
  };
}

export async function main(): Promise<void> {
  const duration = Number(arg('duration') ?? 10);
  const connections = Number(arg('connections') ?? 200);
  const providerMs = Number(arg('provider-ms') ?? 0);
  // With --pin the load generator (this process) and the provider share CPU 0, the gateway under test has
  // CPU 1 to itself, as a gateway in production has its own cores: its latency is then its own, not the
  // load generator's scheduling.
  if (PIN !== undefined) spawnSync('taskset', ['-p', '-c', String(PIN.load), String(process.pid)]);
  const jitterMs = Number(arg('provider-jitter-ms') ?? 0);
  // At a model's pace the load is this bench's own (ai-load.ts), which also measures each request's overhead;
  // saturated (an instant provider) it is autocannon's, whose client costs least.
  const paced = providerMs > 0;
  if (paced && STREAM_TOKENS !== undefined)
    throw new Error('--stream measures saturated load: leave out --provider-ms.');
  const streamArg = STREAM_TOKENS === undefined ? [] : [`--stream=${STREAM_TOKENS}`];
  const provider = await startOwn('provider', [
    `--provider-ms=${providerMs}`,
    `--provider-jitter-ms=${jitterMs}`,
  ]);
  const children: ChildProcess[] = [provider.child];
  /** Our own servers (they count their stats from a SIGUSR2; Portkey would die of one). */
  const ours = new Set<ChildProcess>([provider.child]);
  const results: Measured[] = [];
  try {
    const own = (kind: string) => async () => {
      const server = await startOwn(kind, [`--provider=${provider.url}`, ...streamArg]);
      children.push(server.child);
      ours.add(server.child);
      return server.url;
    };
    const cases: Case[] = [
      { name: 'direct', url: async () => provider.url, headers: {}, model: 'gift-ranker' },
      { name: 'proxy', url: own('proxy'), headers: {}, model: 'gift-ranker' },
      { name: 'fastify-proxy', url: own('fastify-proxy'), headers: {}, model: 'gift-ranker' },
      { name: 'breakwater', url: own('breakwater'), headers: {}, model: 'sim/gift-ranker' },
      {
        name: 'breakwater+limits',
        url: own('breakwater+limits'),
        headers: { 'x-breakwater-metadata': '{"user":"bench"}' },
        model: 'sim/gift-ranker',
      },
      {
        name: 'portkey',
        url: async () => {
          const server = await startPortkey();
          children.push(server.child);
          return server.url;
        },
        headers: {
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': provider.url,
          authorization: 'Bearer sk-bench',
        },
        model: 'gift-ranker',
      },
    ];
    // `--only=breakwater,portkey`: just those cases (direct, the baseline, always runs).
    const only = arg('only')?.split(',');
    for (const c of cases) {
      if (only !== undefined && c.name !== 'direct' && !only.includes(c.name)) continue;
      const url = await c.url();
      const measuring = (): void => {
        for (const child of children) if (ours.has(child) && child.exitCode === null) child.kill('SIGUSR2');
      };
      results.push(await load(c, url, connections, duration, paced, measuring));
      // One gateway at a time on the machine: stop this one before the next starts.
      const last = children.at(-1);
      if (last !== undefined && last !== provider.child) last.kill('SIGTERM');
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
  }

  console.log(
    `\nai: ${connections} connections, ${duration} s each, one ` +
      (STREAM_TOKENS === undefined ? 'non-streamed chat completion' : `${STREAM_TOKENS}-token stream`) +
      ' per request, ' +
      `provider answering in ${providerMs}${jitterMs > 0 ? ` + 0..${jitterMs}` : ''} ms`,
  );
  report(results, paced);
}

const ms = (n: number | undefined, width: number): string =>
  (n === undefined ? '—' : n.toFixed(2)).padStart(width);

/**
 * Prints each case and the verdict on the targets. Paced, a case's added latency is its overhead per
 * request (latency minus the provider's own time) minus the direct overhead, percentile by percentile; the
 * end-to-end difference (a case's p99 minus the direct p99) is printed too, though on a small machine it
 * swings by tens of ms between two runs of the same thing: it carries the provider's jitter and pauses.
 */
function report(results: Measured[], paced: boolean): void {
  const direct = results[0]!;
  const added = (r: Measured): { p50: number; p99: number } =>
    paced && r.overheadP50 !== undefined && direct.overheadP50 !== undefined
      ? { p50: r.overheadP50 - direct.overheadP50, p99: r.overheadP99! - direct.overheadP99! }
      : { p50: r.p50 - direct.p50, p99: r.p99 - direct.p99 };
  console.log(
    '  case                  req/s   p50 ms   p99 ms   added p50   added p99   failed' +
      (paced ? '   overhead p50   overhead p99   end-to-end diff p50 / p99' : ''),
  );
  for (const r of results) {
    const a = added(r);
    console.log(
      `  ${r.name.padEnd(18)} ${Math.round(r.perSec).toLocaleString('en-US').padStart(8)}` +
        `  ${ms(r.p50, 7)}  ${ms(r.p99, 7)}  ${ms(a.p50, 10)}  ${ms(a.p99, 10)}  ${String(r.failed).padStart(7)}` +
        (paced
          ? `  ${ms(r.overheadP50, 13)}  ${ms(r.overheadP99, 13)}  ${ms(r.p50 - direct.p50, 12)} / ${ms(r.p99 - direct.p99, 0)}`
          : ''),
    );
  }
  if (paced) {
    console.log(
      "  added = overhead − direct overhead (overhead: latency minus the provider's own time, per request)",
    );
  }
  const bw = results.find((r) => r.name === 'breakwater');
  const pk = results.find((r) => r.name === 'portkey');
  if (bw === undefined) return;
  const { p50: addedP50, p99: addedP99 } = added(bw);
  const floor = results.find((r) => r.name === 'proxy');
  if (floor !== undefined) {
    const f = added(floor);
    console.log(
      `  the floor (proxy, no logic) adds p50 ${f.p50.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms` +
        ` here; breakwater beyond it: p50 ${(addedP50 - f.p50).toFixed(2)} ms, p99 ${(addedP99 - f.p99).toFixed(2)} ms`,
    );
  }
  console.log(
    `  added p50 ${addedP50.toFixed(2)} ms (target ≤ 1: ${addedP50 <= 1 ? 'met' : 'missed'}); ` +
      `added p99 ${addedP99.toFixed(2)} ms (target ≤ 5: ${addedP99 <= 5 ? 'met' : 'missed'})` +
      (pk === undefined
        ? ''
        : pk.perSec === 0
          ? `; portkey served no request (${pk.failed} failed)`
          : `; breakwater ÷ portkey throughput ${(bw.perSec / pk.perSec).toFixed(2)}x (target > 1: ${bw.perSec > pk.perSec ? 'met' : 'missed'})`),
  );
}

const serving = arg('serve');
if (serving !== undefined) await serve(serving);
