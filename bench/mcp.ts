/**
 * `npm run bench -- mcp [--duration=S] [--connections=N] [--rounds=R] [--calls=C]`: one MCP `tools/call` of a
 * small tool at the 2026-07-28 wire (stateless: each POST carries its version and capabilities in `_meta`, so
 * a load generator can send the same request again and again), against, in the same run, for R rounds
 * (default 3):
 *
 * - **sdk**: the official SDK's v2 line on its own (`McpServer` with the tool registered, `createMcpHandler`,
 *   `toNodeHandler` on `node:http`): the floor any server built on the SDK pays;
 * - **breakwater**: a gateway (`startGateway`, embedded SQLite) serving an app with the same tool as a
 *   `resilientTool` (deadline, bulkhead, circuit breaker, metrics, the HTTP edge's Host/Origin check): the
 *   whole path a model's call takes.
 *
 * Two measures per round and case, each server in its own child process: the latency of C (default 2,000)
 * sequential calls on one keep-alive connection (p50 and p99, µs: the time one call adds), and the throughput
 * of N (default 100) concurrent connections for S (default 5) seconds with autocannon. Prints every run, then
 * the medians over rounds of the added p50 (breakwater − sdk, µs) and of the throughput ratio.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type * as RootZod from '../node_modules/zod/index.js';
import { lib } from './lib.js';
import { median } from './support.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT_ZOD = new URL('../node_modules/zod/index.js', import.meta.url).href;
const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: 'echo',
    arguments: { text: 'a scarf for mum' },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
});
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo',
};
/** What both servers must answer (checked on the first call of every run). */
const ANSWER = 'a scarf for mum';

// ---- the server side (child process) ----

async function serve(kind: string): Promise<void> {
  // The package's zod (4), not the older copy a peer brought into bench/node_modules.
  const { z } = (await import(ROOT_ZOD)) as typeof RootZod;
  let url: string;
  if (kind === 'sdk') {
    const { McpServer, createMcpHandler } = await import('@modelcontextprotocol/server');
    const { toNodeHandler } = await import('@modelcontextprotocol/node');
    const { createServer } = await import('node:http');
    const handler = createMcpHandler(() => {
      const server = new McpServer({ name: 'bench-sdk', version: '1.0.0' });
      server.registerTool(
        'echo',
        { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) },
        ({ text }) => ({ content: [{ type: 'text', text }] }),
      );
      return server;
    });
    const node = toNodeHandler(handler);
    const http = createServer((req, res) => void node(req, res));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
  } else {
    const { defineApp, resilientTool, startGateway } = lib;
    const app = defineApp({
      setup: () => ({
        name: 'bench-breakwater',
        version: '1.0.0',
        tools: [
          resilientTool({
            name: 'echo',
            description: 'Echoes its text.',
            inputSchema: { text: z.string() },
            annotations: { readOnlyHint: true },
            handler: ({ text }: { text: string }) => ({ text }),
            toText: (result: { text: string }) => result.text,
          }),
        ],
      }),
    });
    const gateway = await startGateway({ app, store: arg('db')!, port: 0, log: () => undefined });
    url = gateway.mcpUrl;
  }
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

// ---- the load side ----

async function startServer(kind: string, extra: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, `--serve=${kind}`, ...extra], {
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

/** One call on `agent`; resolves with the answer's body. */
function call(url: URL, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: HEADERS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`)),
      );
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

/** `calls` sequential calls on one keep-alive connection: p50 and p99 in µs. */
async function latency(url: string, calls: number): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  const first = await call(target, agent);
  if (!first.includes(ANSWER)) throw new Error(`unexpected answer: ${first}`);
  for (let i = 0; i < 200; i++) await call(target, agent); // warm-up
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = process.hrtime.bigint();
    await call(target, agent);
    times.push(Number(process.hrtime.bigint() - start) / 1_000);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(calls * 0.5)]!, p99: times[Math.floor(calls * 0.99)]! };
}

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

async function throughput(url: string, connections: number, duration: number) {
  const autocannon = createRequire(join(import.meta.dirname, 'package.json'))('autocannon') as Autocannon;
  const result = await autocannon({
    url,
    connections,
    duration,
    method: 'POST',
    headers: HEADERS,
    body: BODY,
  });
  const ok = result.statusCodeStats['200']?.count ?? 0;
  return {
    perSec: ok / result.duration,
    p50: result.latency.p50,
    non200: result.non2xx,
    errors: result.errors,
  };
}

interface Run {
  kind: 'sdk' | 'breakwater';
  p50us: number;
  p99us: number;
  perSec: number;
  loadP50ms: number;
  failures: number;
}

export async function main(): Promise<void> {
  const duration = Number(arg('duration') ?? 5);
  const connections = Number(arg('connections') ?? 100);
  const rounds = Number(arg('rounds') ?? 3);
  const calls = Number(arg('calls') ?? 2_000);
  const dir = mkdtempSync(join(tmpdir(), 'breakwater-bench-mcp-'));
  const runs: Run[][] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const pair: Run[] = [];
      for (const kind of ['sdk', 'breakwater'] as const) {
        const extra = kind === 'breakwater' ? [`--db=${join(dir, `${round}.db`)}`] : [];
        const server = await startServer(kind, extra);
        try {
          const seq = await latency(server.url, calls);
          const load = await throughput(server.url, connections, duration);
          pair.push({
            kind,
            p50us: seq.p50,
            p99us: seq.p99,
            perSec: load.perSec,
            loadP50ms: load.p50,
            failures: load.non200 + load.errors,
          });
        } finally {
          server.child.kill('SIGTERM');
        }
      }
      runs.push(pair);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `\nmcp: tools/call at the 2026-07-28 wire; ${calls} sequential calls, then ${connections} connections for ` +
      `${duration} s; ${rounds} round${rounds === 1 ? '' : 's'} (each runs sdk, then breakwater)`,
  );
  console.log('  round  case         seq p50 µs  seq p99 µs     calls/s  load p50 ms  failures');
  runs.forEach((pair, i) => {
    for (const r of pair) {
      console.log(
        `  ${String(i + 1).padStart(5)}  ${r.kind.padEnd(11)}  ${r.p50us.toFixed(0).padStart(10)}  ${r.p99us.toFixed(0).padStart(10)}` +
          `  ${Math.round(r.perSec).toLocaleString('en-US').padStart(10)}  ${r.loadP50ms.toFixed(1).padStart(11)}  ${String(r.failures).padStart(8)}`,
      );
    }
  });
  const added = median(runs.map(([sdk, bw]) => bw!.p50us - sdk!.p50us));
  const ratio = median(runs.map(([sdk, bw]) => bw!.perSec / sdk!.perSec));
  console.log(
    `  added p50 per call (breakwater − sdk): ${added.toFixed(0)} µs, median; throughput breakwater ÷ sdk: ` +
      `${ratio.toFixed(2)}x, median`,
  );
}

const serving = arg('serve');
if (serving !== undefined) await serve(serving);
