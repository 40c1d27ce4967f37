/**
 * `npm run bench -- soak [--backend=sqlite|postgres] [--seconds=N] [--webhooks=N] [--jobs=N]`: does the store
 * stay flat under steady load once retention runs?
 *
 * Runs a real gateway in a child process (`breakwater serve --app bench/soak-app.ts`) with every retention
 * at 5 s and a prune every 5 s, so retention runs a dozen times in a minute. For `--seconds` (default 60;
 * at least 30) this process sends it `--webhooks` signed Stripe-style deliveries per second (default 50;
 * each a distinct event, so each is an inbox row and a job) and enqueues `--jobs` jobs per second (default
 * 50; 10 % fail twice and end in the dead letter) through its own connection to the same store, which the
 * gateway's worker runs. Every second it reads the store from outside (SQLite: the file and its WAL, and
 * rows per table through a read-only connection; PostgreSQL: `pg_total_relation_size` and rows per table)
 * and the gateway's resident memory.
 *
 * Verdict: after a warm-up (15 s, or a third of the run when shorter: time for the first rows to age out
 * and be pruned), the run is cut in a middle and an end half. Rows between two prunes rise and fall (a
 * saw-tooth), so each half is represented by its peak. FLAT when, for the store's bytes without the audit
 * log and SQLite's WAL, the rows of the prunable tables and the RSS alike, end peak ≤ middle peak × 1.1. The
 * audit log is never pruned (only verified), so it is left out of the verdict and reported as its growth:
 * records/s and MB/s. SQLite's WAL is shown but not judged: it keeps its largest size, which a second writer
 * (this process) lets grow to the checkpointer's bound. The gateway runs with `--trace-gc`: its heap after
 * each full collection is printed, since RSS climbs between two of them. PostgreSQL needs `BREAKWATER_TEST_DATABASE_URL` (or `DATABASE_URL`); the bench uses a schema of
 * its own and drops it afterwards.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { lib } from './lib.js';
import { defineSoakJobs, SOAK_JOBS, SOAK_SECRET } from './soak-app.js';
import { postgresProbe, rssOf, sqliteProbe, type StoreProbe, type StoreReading } from './soak-measure.js';
import { intArg, withPg } from './support.js';

const RETAIN = '5s';
const PRUNE_EVERY = '5s';
const TICK_MS = 100;
const MAX_IN_FLIGHT = 128;
/** The growth the verdict tolerates between the middle and the end of the run. */
const FLAT_FACTOR = 1.1;
const SOURCE = process.env.BENCH_SOURCE === '1';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, SOURCE ? 'src/cli/main.ts' : 'dist/cli/main.js');
const APP = join(ROOT, 'bench/soak-app.ts');

/** A `--trace-gc` line of a full collection: the heap in MB after it is the number after `->`. */
const FULL_GC = /Mark-Compact[^>]*-> ([\d.]+) \(/;
/** The gateway's full collections: when (this process's `performance.now()`) and the heap left after. */
const fullGcs: { at: number; heapMb: number }[] = [];

interface Sample extends StoreReading {
  /** Seconds since the load started. */
  t: number;
  rss: number;
}

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** A distinct Stripe-style event per call, signed as Stripe signs. */
function signedEvent(n: number): { body: string; signature: string } {
  const t = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    id: `evt_soak_${process.pid}_${n}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    created: t,
    data: { object: { id: `pi_${n}`, amount: 4250, currency: 'usd' } },
  });
  const signature = `t=${t},v1=${createHmac('sha256', SOAK_SECRET).update(`${t}.${body}`).digest('hex')}`;
  return { body, signature };
}

export async function main(): Promise<void> {
  const backend = arg('backend') ?? 'sqlite';
  if (backend !== 'sqlite' && backend !== 'postgres') {
    throw new RangeError(`--backend must be sqlite or postgres, got '${backend}'`);
  }
  const seconds = intArg('seconds', 60, 30);
  const webhookRate = intArg('webhooks', 50);
  const jobRate = intArg('jobs', 50);

  let db: string;
  let schema: string | undefined;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bw-soak-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    db = join(dir, 'soak.db');
  } else {
    const url = process.env.BREAKWATER_TEST_DATABASE_URL ?? process.env.DATABASE_URL;
    if (url === undefined || url === '') {
      console.log('\nsoak (postgres): skipped, set BREAKWATER_TEST_DATABASE_URL=postgres://…');
      return;
    }
    db = url;
    schema = `bench_soak_${process.pid}`;
    const dropped = schema;
    cleanups.push(() => withPg(url, (c) => c.query(`DROP SCHEMA IF EXISTS ${dropped} CASCADE`)));
  }
  try {
    await soak({ backend, db, schema, seconds, webhookRate, jobRate });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

interface SoakOptions {
  backend: 'sqlite' | 'postgres';
  db: string;
  schema: string | undefined;
  seconds: number;
  webhookRate: number;
  jobRate: number;
}

async function soak(o: SoakOptions): Promise<void> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BREAKWATER_RETAIN_JOBS: RETAIN,
    BREAKWATER_RETAIN_DEAD_LETTERS: RETAIN,
    BREAKWATER_RETAIN_WEBHOOKS: RETAIN,
    BREAKWATER_RETAIN_STREAM_EVENTS: RETAIN,
    BREAKWATER_RETAIN_OPERATIONS: RETAIN,
    BREAKWATER_PRUNE_EVERY: PRUNE_EVERY,
    ...(o.schema === undefined ? {} : { BREAKWATER_DB_SCHEMA: o.schema }),
  };
  // Loopback mode: /metrics is read without a credential.
  delete env.BREAKWATER_ADMIN_TOKEN;
  const args = ['--import', 'tsx', MAIN, 'serve', '--app', APP, '--db', o.db, '--port', String(port)];
  // --trace-gc: the heap left after each full collection tells a leak (it climbs) from a heap V8 lets grow
  // before collecting (RSS climbs, the heap after each collection does not).
  const child = spawn(process.execPath, ['--trace-gc', ...args, '--grace-ms', '2000'], {
    env,
    stdio: 'pipe',
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      const gc = FULL_GC.exec(line);
      if (gc !== null) fullGcs.push({ at: performance.now(), heapMb: Number(gc[1]) });
      else if (line.trim() !== '' && !line.includes('Scavenge') && output.length < 2000) output.push(line);
    }
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await untilHealthy(url, exited, output);
    await run(o, url, child.pid!, output);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

async function untilHealthy(url: string, exited: Promise<unknown>, output: string[]): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !gone) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the gateway did not start:\n${output.join('\n')}`);
}

async function run(o: SoakOptions, url: string, pid: number, output: string[]): Promise<void> {
  const store = await lib.openStore({ url: o.db, schema: o.schema });
  const jobs = lib.createJobs({ store });
  defineSoakJobs(jobs);
  const probe: StoreProbe =
    o.backend === 'sqlite' ? sqliteProbe(o.db) : await postgresProbe(o.db, o.schema ?? 'breakwater');
  const sent = { webhooks: 0, accepted: 0, statuses: new Map<string, number>(), skipped: 0, jobs: 0 };
  let inFlight = 0;
  let webhookCredit = 0;
  let jobCredit = 0;
  const samples: Sample[] = [];
  const started = performance.now();
  const elapsedS = () => (performance.now() - started) / 1000;
  const sample = async () => samples.push({ t: elapsedS(), rss: rssOf(pid), ...(await probe.read()) });

  try {
    await sample();
    let nextSampleAt = 1;
    const warm = warmUpS(o.seconds);
    let atWarm: Record<string, number> | undefined;
    while (elapsedS() < o.seconds) {
      const tickStarted = performance.now();
      webhookCredit += (o.webhookRate * TICK_MS) / 1000;
      for (; webhookCredit >= 1; webhookCredit--) {
        if (inFlight >= MAX_IN_FLIGHT) {
          sent.skipped++;
          continue;
        }
        const { body, signature } = signedEvent(++sent.webhooks);
        inFlight++;
        void fetch(`${url}/webhooks/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'stripe-signature': signature },
          body,
        })
          .then(
            async (response) => {
              await response.arrayBuffer();
              return String(response.status);
            },
            (error: Error) => error.message,
          )
          .then((status) => {
            inFlight--;
            if (status === '200') sent.accepted++;
            else sent.statuses.set(status, (sent.statuses.get(status) ?? 0) + 1);
          });
      }
      jobCredit += (o.jobRate * TICK_MS) / 1000;
      for (; jobCredit >= 1; jobCredit--) {
        const n = ++sent.jobs;
        const type = n % Math.round(1 / SOAK_JOBS.failShare) === 0 ? SOAK_JOBS.fail : SOAK_JOBS.work;
        await jobs.enqueue(type, { n });
      }
      if (elapsedS() >= nextSampleAt) {
        await sample();
        if (atWarm === undefined && elapsedS() >= warm) atWarm = await probe.relations();
        nextSampleAt = Math.floor(elapsedS()) + 1;
      }
      const wait = TICK_MS - (performance.now() - tickStarted);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await sample();
    const growth = relationGrowth(atWarm ?? {}, await probe.relations());
    while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    const pruned = await prunedTotals(url);
    report(o, samples, sent, pruned, output, started);
    console.log(`  grew most from the end of the warm-up to the end (KB): ${growth}`);
  } finally {
    await probe.close();
    await jobs.stop({ graceMs: 0 });
    await store.close();
  }
}

/** `breakwater_store_pruned_rows_total` per kind, from the gateway's /metrics. */
async function prunedTotals(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const totals: Record<string, number> = {};
  for (const match of text.matchAll(/^breakwater_store_pruned_rows_total\{kind="(\w+)"\} (\S+)$/gm)) {
    totals[match[1]!] = Number(match[2]);
  }
  return totals;
}

/** The warm-up: time for the first rows to age out and be pruned (15 s), or a third of a shorter run. */
function warmUpS(seconds: number): number {
  return Math.min(15, seconds / 3);
}

/** The five tables or indexes that grew most between two `relations()` readings, as `name +KB`. */
function relationGrowth(from: Record<string, number>, to: Record<string, number>): string {
  return Object.entries(to)
    .map(([name, bytes]) => [name, bytes - (from[name] ?? 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([name, bytes]) => `${name} ${bytes >= 0 ? '+' : ''}${(bytes / 1024).toFixed(0)}`)
    .join(', ');
}

const MB = 1024 * 1024;
const mb = (bytes: number) => (bytes / MB).toFixed(2);
const rowsOf = (s: Sample) => Object.values(s.rows).reduce((sum, n) => sum + n, 0);
const withoutAudit = (s: Sample) => s.bytes - s.auditBytes;

function report(
  o: SoakOptions,
  samples: Sample[],
  sent: { webhooks: number; accepted: number; statuses: Map<string, number>; skipped: number; jobs: number },
  pruned: Record<string, number>,
  output: string[],
  started: number,
): void {
  const end = samples.at(-1)!.t;
  const warm = warmUpS(o.seconds);
  const half = warm + (end - warm) / 2;
  const middle = samples.filter((s) => s.t >= warm && s.t < half);
  const last = samples.filter((s) => s.t >= half);
  const peak = (of: Sample[], f: (s: Sample) => number) => Math.max(...of.map(f));

  console.log(
    `\nsoak (${o.backend}): ${Math.round(end)} s; ${o.webhookRate} webhooks/s and ${o.jobRate} jobs/s ` +
      `(${SOAK_JOBS.failShare * 100} % dead-lettered); every retention ${RETAIN}, a prune every ${PRUNE_EVERY}`,
  );
  console.log(
    '    t s   store MB  (WAL MB)  w/o audit, WAL  prunable MB  prunable rows  backlog  audit rows   RSS MB',
  );
  for (const s of samples.filter(
    (s, i) => i === 0 || i === samples.length - 1 || Math.round(s.t) % 5 === 0,
  )) {
    console.log(
      `  ${s.t.toFixed(0).padStart(5)} ${mb(s.bytes).padStart(10)} ${mb(s.walBytes).padStart(9)}` +
        ` ${mb(withoutAudit(s) - s.walBytes).padStart(15)}` +
        ` ${mb(s.prunableBytes).padStart(12)} ${String(rowsOf(s)).padStart(14)} ${String(s.backlog).padStart(8)}` +
        ` ${String(s.auditRows).padStart(11)} ${mb(s.rss).padStart(8)}`,
    );
  }

  // [name, measure, format, judged]. SQLite's log is shown, not judged: it keeps the largest size it reached,
  // and with a second process writing (this one enqueues) the store's checkpointer cannot restart it, so it
  // grows to its bound (10,000 pages, ~40 MB: store/sqlite/checkpointer.ts) before it stops.
  type Measure = [string, (s: Sample) => number, (n: number) => string, boolean];
  const wal: Measure = ['SQLite WAL (MB, not judged)', (s) => s.walBytes, mb, false];
  const measures: Measure[] = [
    ['store w/o audit log and WAL (MB)', (s) => withoutAudit(s) - s.walBytes, mb, true],
    ...(o.backend === 'sqlite' ? [wal] : []),
    ['prunable rows', rowsOf, String, true],
    ['gateway RSS (MB)', (s) => s.rss, mb, true],
  ];
  console.log(
    `\n  ${'measure'.padEnd(34)} ${'start'.padStart(8)} ${`middle ${warm.toFixed(0)}-${half.toFixed(0)} s`.padStart(16)}` +
      ` ${`end ${half.toFixed(0)}-${end.toFixed(0)} s`.padStart(14)}  end/middle`,
  );
  let flat = true;
  for (const [name, f, show, judged] of measures) {
    const m = peak(middle, f);
    const e = peak(last, f);
    const ok = !judged || e <= m * FLAT_FACTOR;
    flat &&= ok;
    console.log(
      `  ${name.padEnd(34)} ${show(f(samples[0]!)).padStart(8)} ${show(m).padStart(16)} ${show(e).padStart(14)}` +
        `  ${(e / m).toFixed(2).padStart(10)}${ok ? '' : '  growing'}`,
    );
  }
  console.log(
    `  verdict: ${flat ? 'FLAT' : 'NOT FLAT'} (rule: after a ${warm.toFixed(0)} s warm-up, the peak of the end half ≤ ` +
      `the peak of the middle half × ${FLAT_FACTOR}, for each judged measure above)`,
  );

  const from = middle[0] ?? samples[0]!;
  const to = samples.at(-1)!;
  const span = to.t - from.t;
  console.log(
    `  audit log (never pruned): ${((to.auditRows - from.auditRows) / span).toFixed(0)} records/s, ` +
      `${((to.auditBytes - from.auditBytes) / MB / span).toFixed(3)} MB/s ` +
      `(${to.auditRows} records, ${mb(to.auditBytes)} MB at the end)`,
  );
  const others = [...sent.statuses].map(([status, n]) => `${status} ×${n}`).join(', ');
  console.log(
    `  load: ${sent.webhooks} webhooks sent, ${sent.accepted} accepted${others === '' ? '' : `, ${others}`}` +
      `${sent.skipped > 0 ? `, ${sent.skipped} not sent (${MAX_IN_FLIGHT} in flight)` : ''}; ${sent.jobs} jobs enqueued; ` +
      `backlog at the end ${to.backlog}`,
  );
  console.log(
    `  pruned by the gateway: ${Object.entries(pruned)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')}`,
  );
  const gcs = fullGcs.map((gc) => ({ t: (gc.at - started) / 1000, heapMb: gc.heapMb }));
  const heapIn = (from: number, to: number) =>
    gcs.filter((gc) => gc.t >= from && gc.t < to).map((gc) => gc.heapMb.toFixed(1));
  console.log(
    `  gateway V8 heap after each full GC (MB): middle [${heapIn(warm, half).join(', ')}], ` +
      `end [${heapIn(half, Infinity).join(', ')}]`,
  );
  if (heapIn(warm, half).length === 0 || heapIn(half, Infinity).length === 0) {
    console.log(
      '  note: the gateway ran no full GC in one of the halves: V8 lets the heap (and so RSS) grow until its ' +
        'next full collection, so RSS alone cannot tell growth from garbage here; run longer (--seconds=300)',
    );
  }
  const warnings = output.filter((line) => /warn|error/i.test(line));
  if (warnings.length > 0) console.log(`  gateway warnings (${warnings.length}), first: ${warnings[0]}`);
}
