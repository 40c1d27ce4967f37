/**
 * `npm run bench -- jobs-scale [--jobs=N] [--concurrency=C] [--work-ms=W1,W2]`: PostgreSQL job throughput
 * with 1, 2 and 4 worker processes (target: 4 workers ≥ 3× one). For each count, a fresh schema is filled
 * with N jobs (default 4 000) before any worker runs; then the workers (`jobs-scale-worker.ts`, each its own
 * process, pool and LISTEN connection, C handlers at once, default 8) are told to start together, and the
 * time runs until the store's books show all N completed.
 *
 * Handlers, one after the other: `io`, which waits W ms (default 20, then 100) like a job calling an
 * upstream (what jobs mostly do: the work is elsewhere, the worker waits), and `noop`, which returns at
 * once, so only the queue's own work is measured (claim, events, settle). Each line also says how busy the
 * whole machine was and its CPU per job (the workers' share apart): when the machine is saturated — the
 * workers, PostgreSQL and this process share its cores — more workers cannot add throughput, and the
 * ratio says more about the machine than about the queue. */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { lib } from './lib.js';

import { intArg, reachable, withPg } from './support.js';

const { openPostgresStore } = lib;

const PG_URL = process.env.BREAKWATER_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const WORKER = fileURLToPath(new URL('./jobs-scale-worker.ts', import.meta.url));
const WORKER_COUNTS = [1, 2, 4];
/** Enqueue calls in flight while the backlog is filled. */
const IN_FLIGHT = 32;
/** A run that completes nothing for this long is abandoned (ms). */
const STALL_MS = 60_000;

/** `--name=a,b,…`: integers >= 1. */
function listArg(name: string, fallback: number[]): number[] {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const values = arg
    .slice(name.length + 3)
    .split(',')
    .map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new RangeError(`--${name} must be a comma-separated list of integers >= 1`);
  }
  return values;
}

/** A worker's CPU time since `go`, ms. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve((m as { cpuMs: number }).cpuMs));
    child.send('cpu');
  });
}

/** Forks a worker and resolves once it has opened its store and defined the job type. */
function startWorker(config: object): Promise<ChildProcess> {
  const child = fork(WORKER, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`a bench worker exited with ${code} before it was ready`)));
  });
}

/** CPU time the whole machine has spent busy so far (ms, all cores: PostgreSQL, workers, this process). */
function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  const total = fields.reduce((a, b) => a + b, 0);
  return ((total - idle) * 1000) / 100; // USER_HZ is 100 on Linux
}

/** What one run measured. */
interface Rate {
  jobsPerSecond: number;
  /** Busy CPU of the whole machine per job, ms (NaN where /proc/stat is missing). */
  cpuMsPerJob: number;
  /** CPU of the worker processes per job, ms (the rest is PostgreSQL, this process and the system). */
  workerCpuMsPerJob: number;
  /** Share of all cores busy during the run, 0..1. */
  busy: number;
}

/** Jobs per second with `workers` processes over a backlog of `n` jobs, and what it cost the machine. */
async function measure(workers: number, n: number, concurrency: number, workMs: number): Promise<Rate> {
  const schema = `bench_scale_${randomUUID().slice(0, 8)}`;
  const store = await openPostgresStore({ url: PG_URL, schema });
  const children: ChildProcess[] = [];
  try {
    let next = 0;
    const filler = async () => {
      while (next++ < n) {
        await store.enqueue({
          type: 'bench.scale',
          payload: {},
          runAt: Date.now(),
          priority: 0,
          maxAttempts: 1,
        });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, filler));
    for (let i = 0; i < workers; i++) {
      children.push(await startWorker({ url: PG_URL, schema, concurrency, workMs }));
    }
    const begin = performance.now();
    const busyBefore = existsSync('/proc/stat') ? machineBusyMs() : NaN;
    for (const child of children) child.send('go');
    let done = 0;
    let lastProgress = begin;
    // A cheap count every 50 ms (an index-only scan), not stats(): a full pass over the table 50 times a second
    // would be a share of the CPU being measured.
    const counter = new pg.Client({ connectionString: PG_URL });
    await counter.connect();
    while (done < n) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const counted = await counter.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${schema}".jobs WHERE status = 'completed'`,
      );
      const now = Number(counted.rows[0]!.n);
      if (now > done) lastProgress = performance.now();
      else if (performance.now() - lastProgress > STALL_MS) throw new Error(`stalled at ${now} of ${n}`);
      done = now;
    }
    const elapsedMs = performance.now() - begin;
    await counter.end();
    const busyMs = existsSync('/proc/stat') ? machineBusyMs() - busyBefore : NaN;
    const workerCpuMs = (await Promise.all(children.map(cpuOf))).reduce((a, b) => a + b, 0);
    return {
      jobsPerSecond: (n * 1000) / elapsedMs,
      cpuMsPerJob: busyMs / n,
      workerCpuMsPerJob: workerCpuMs / n,
      busy: busyMs / (elapsedMs * cpus().length),
    };
  } finally {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.send('stop');
          }),
      ),
    );
    await store.close();
    await withPg(PG_URL, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
  }
}

export async function main(): Promise<void> {
  const n = intArg('jobs', 4_000);
  const concurrency = intArg('concurrency', 8);
  const workMs = listArg('work-ms', [20, 100]);
  console.log(
    `\nJob throughput on PostgreSQL by worker processes: ${n.toLocaleString('en-US')} jobs already queued,` +
      ` ${concurrency} handlers per process, ${cpus().length} CPUs (shared with PostgreSQL)`,
  );
  const { hostname, port } = new URL(PG_URL);
  const down = await reachable(hostname, Number(port || 5432));
  if (down !== undefined) {
    console.log(`  skipped: PostgreSQL ${down}`);
    return;
  }
  const handlers: [string, number][] = [
    ...workMs.map((ms): [string, number] => [`io (each job waits ${ms} ms)`, ms]),
    ['noop (the queue alone)', 0],
  ];
  for (const [label, ms] of handlers) {
    const rates = new Map<number, Rate>();
    for (const workers of WORKER_COUNTS) rates.set(workers, await measure(workers, n, concurrency, ms));
    const one = rates.get(1)!.jobsPerSecond;
    console.log(`  ${label}`);
    for (const [workers, rate] of rates) {
      console.log(
        `    ${String(workers).padStart(2)} worker${workers === 1 ? ' ' : 's'}  ${Math.round(rate.jobsPerSecond).toLocaleString('en-US').padStart(7)} jobs/s  ${(rate.jobsPerSecond / one).toFixed(2)}x one` +
          `   machine CPU ${(rate.busy * 100).toFixed(0).padStart(3)}% busy, ${rate.cpuMsPerJob.toFixed(2)} ms per job (workers ${rate.workerCpuMsPerJob.toFixed(2)})`,
      );
    }
    console.log(`    4 workers / 1: ${(rates.get(4)!.jobsPerSecond / one).toFixed(2)}x  target >= 3x`);
  }
}
