/**
 * `npm run bench -- jobs [--jobs=N] [--rounds=R] [--pgboss-jobs=N] [--only=name,name]`: enqueues and processes N
 * no-op jobs (default 20 000) with 16 handlers at once, on Breakwater over SQLite (a WAL file in a temp folder, `synchronous = FULL`),
 * Breakwater over PostgreSQL (a fresh schema), BullMQ on the local Redis and pg-boss on the same PostgreSQL,
 * one after another in this process, for R rounds (default 3; pg-boss runs one, see below). Reports jobs/s from the first enqueue to the moment the system's own
 * books show all N completed, and enqueue-to-start latency p50/p99, taken inside the handler against the
 * enqueue time carried in the payload (one process, one `performance.now()` clock). Then an idle phase:
 * {@link IDLE_JOBS} jobs one at a time, each enqueued once the previous one started, for the pickup latency
 * of a queue that keeps up (the backlog run's latency is mostly time spent waiting behind other jobs).
 *
 * Fairness: every system has its workers started before the first enqueue, and enqueues one job per call,
 * at most {@link IN_FLIGHT} calls in flight. Each runs with its defaults otherwise (pool sizes, leases,
 * polling), because that is what a user gets. Latency includes queueing: enqueues outpace the handlers, so
 * a job waits behind the backlog and p50/p99 grow with N.
 *
 * CPU per job, over the backlog run: this process's (the enqueuers, the system's client and its workers)
 * and, where the system does its work in a server, that server's (Redis, every PostgreSQL process; read from
 * Linux's /proc). Throughput on a small machine depends on how many cores a system can keep busy — BullMQ's
 * work runs in Redis, on the second core, while Breakwater over SQLite runs in this one thread — so the CPU
 * per job is the figure that says which does less work.
 *
 * pg-boss 10 polls: a worker fetches once per `pollingIntervalSeconds` (at least 0.5 s) even when it just
 * got a job, so 16 workers top out at about 32 jobs/s. It therefore runs `--pgboss-jobs` jobs (default the
 * smaller of N and 1 000), which measures the same steady rate without a ten-minute run; the table says so.
 * Its run takes half a minute, so it runs in the first round only.
 *
 * Rounds: a small virtual machine's speed drifts by tens of percent within a minute, so one run of each
 * system, a few seconds apart, can put the drift into their ratio. Each round runs every system once; the
 * table shows every run, then each system's median run, and a ratio is the median of the per-round ratios.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { JobStore } from '../src/entries/jobs.js';
import { lib } from './lib.js';
import { intArg, median, middle, reachable, serverCpuMs, withPg } from './support.js';

const { createJobs, openPostgresStore, openSqliteStore } = lib;

const PG_HOST = '127.0.0.1';
const PG_PORT = 5432;
const PG_URL = `postgres://postgres@${PG_HOST}:${PG_PORT}/test`;
const REDIS = { host: '127.0.0.1', port: 6379 };
const CONCURRENCY = 16;
/** Enqueue calls in flight at once, for every system alike. */
const IN_FLIGHT = 64;
/** How often the end of a run is checked once every handler has started (ms). */
const SETTLE_POLL_MS = 2;
/** A run that makes no progress for this long is abandoned (ms). */
const STALL_MS = 60_000;

/** What every handler gets: the enqueue time, in `performance.now()` ms. */
interface Payload {
  t: number;
}

/** One system, set up with its workers running and its handler wired to `onStart`. */
interface System {
  enqueue(payload: Payload): Promise<unknown>;
  /** How many of this run's jobs the system has recorded as completed. */
  completed(): Promise<number>;
  close(): Promise<void>;
}

interface Contender {
  name: string;
  /** Sets the system up, or returns why it is skipped. */
  open(onStart: (payload: Payload) => void): Promise<System | string>;
  /** Jobs to run, when not N. */
  jobs?: (n: number) => number;
  /** Rounds to run, when fewer than `--rounds`. */
  rounds?: number;
  /** The command name of the server process doing the system's work outside this one, for its CPU time. */
  server?: string;
}

interface Result {
  name: string;
  jobs: number;
  jobsPerSec: number;
  p50: number;
  p99: number;
  /** Enqueue-to-start of a job enqueued into an idle queue (the next one only after it started). */
  idleP50: number;
  idleP99: number;
  /** CPU time per job of this process (the bench's enqueuers, the system's client and workers), µs. */
  cpuUsPerJob: number;
  /** CPU time per job of the server processes (Redis, PostgreSQL), µs; undefined when there are none. */
  serverCpuUsPerJob: number | undefined;
}

/** Jobs of the idle-pickup phase, each enqueued alone once the previous one has started. */
const IDLE_JOBS = 200;

function breakwater(store: () => Promise<{ store: JobStore; cleanup: () => Promise<void> }>) {
  return async (onStart: (payload: Payload) => void): Promise<System> => {
    const { store: jobStore, cleanup } = await store();
    const jobs = createJobs({ store: jobStore });
    jobs.defineJob<Payload>('noop', ({ payload }) => onStart(payload), { concurrency: CONCURRENCY });
    jobs.start();
    return {
      enqueue: (payload) => jobs.enqueue('noop', payload),
      completed: async () => (await jobStore.stats()).counts.completed,
      async close() {
        await jobs.stop();
        await jobStore.close();
        await cleanup();
      },
    };
  };
}

// Run in this order each round: the pair of the 1.5x target (SQLite, BullMQ) back to back, so the ratio of a
// round compares two runs seconds apart (this machine's speed drifts by tens of percent over a minute).
const contenders: Contender[] = [
  {
    name: 'breakwater sqlite',
    open: breakwater(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'breakwater-bench-'));
      const store = await openSqliteStore({ path: join(dir, 'jobs.db') });
      return { store, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    }),
  },
  {
    name: 'bullmq redis',
    server: 'redis-server',
    async open(onStart) {
      const down = await reachable(REDIS.host, REDIS.port);
      if (down !== undefined) return `Redis ${down}`;
      const name = `bench-${randomUUID()}`;
      const queue = new Queue<Payload>(name, { connection: REDIS });
      let completed = 0;
      const worker = new Worker<Payload>(
        name,
        async (job) => {
          onStart(job.data);
        },
        { connection: { ...REDIS, maxRetriesPerRequest: null }, concurrency: CONCURRENCY },
      );
      worker.on('completed', () => completed++);
      worker.on('error', (error) => console.error(`  bullmq worker: ${error.message}`));
      await worker.waitUntilReady();
      await queue.waitUntilReady();
      return {
        enqueue: (payload) => queue.add('noop', payload),
        completed: async () => completed,
        async close() {
          await worker.close();
          await queue.obliterate({ force: true });
          await queue.close();
        },
      };
    },
  },
  {
    name: 'breakwater postgres',
    server: 'postgres',
    async open(onStart) {
      const down = await reachable(PG_HOST, PG_PORT);
      if (down !== undefined) return `PostgreSQL ${down}`;
      const schema = `bench_bw_${randomUUID().slice(0, 8)}`;
      return breakwater(async () => ({
        store: await openPostgresStore({ url: PG_URL, schema }),
        cleanup: () =>
          withPg(PG_URL, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).then(() => undefined),
      }))(onStart);
    },
  },
  {
    name: 'pg-boss postgres',
    server: 'postgres',
    jobs: (n) => intArg('pgboss-jobs', Math.min(n, 1000)),
    rounds: 1,
    async open(onStart) {
      const down = await reachable(PG_HOST, PG_PORT);
      if (down !== undefined) return `PostgreSQL ${down}`;
      const schema = `bench_pgboss_${randomUUID().slice(0, 8)}`;
      const boss = new PgBoss({ connectionString: PG_URL, schema });
      boss.on('error', (error) => console.error(`  pg-boss: ${error.message}`));
      await boss.start();
      const name = 'noop';
      await boss.createQueue(name);
      // pg-boss 10 has no team size: one work() per concurrent handler, each fetching one job per poll at
      // the shortest interval it allows.
      for (let i = 0; i < CONCURRENCY; i++) {
        await boss.work<Payload>(name, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
          onStart(job!.data);
        });
      }
      const counter = new pg.Pool({ connectionString: PG_URL, max: 1 });
      return {
        enqueue: (payload) => boss.send(name, payload),
        async completed() {
          const { rows } = await counter.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND state = 'completed'`,
            [name],
          );
          return rows[0]!.n;
        },
        async close() {
          await boss.stop({ graceful: true, wait: true });
          await counter.end();
          await withPg(PG_URL, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
        },
      };
    },
  },
];

/** Runs `n` jobs through one system; resolves with its numbers. */
async function measure(contender: Contender, n: number): Promise<Result | string> {
  const latencies: number[] = [];
  let allStarted!: () => void;
  const started = new Promise<void>((resolve) => (allStarted = resolve));
  let lastProgress = performance.now();
  /** During the idle phase: resolves the wait for the one job in flight. */
  let idleStarted: ((latencyMs: number) => void) | undefined;
  const onStart = (payload: Payload): void => {
    const now = performance.now();
    if (idleStarted !== undefined) return idleStarted(now - payload.t);
    latencies.push(now - payload.t);
    lastProgress = now;
    if (latencies.length === n) allStarted();
  };
  const system = await contender.open(onStart).catch((error: unknown) => `setup failed: ${String(error)}`);
  if (typeof system === 'string') return system;

  try {
    const begin = performance.now();
    const cpuAtBegin = process.cpuUsage();
    const serverCpuAtBegin = contender.server === undefined ? undefined : serverCpuMs(contender.server);
    let next = 0;
    const enqueuer = async (): Promise<void> => {
      while (next < n) {
        next++;
        await system.enqueue({ t: performance.now() });
      }
    };
    const enqueued = Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n) }, enqueuer));
    const stall = setInterval(() => {
      if (performance.now() - lastProgress > STALL_MS) allStarted();
    }, 1000);
    await Promise.all([enqueued, started]);
    clearInterval(stall);
    if (latencies.length < n) return `stalled: ${latencies.length} of ${n} jobs started`;
    let done = await system.completed();
    while (done < n) {
      if (performance.now() - lastProgress > STALL_MS) return `stalled: ${done} of ${n} jobs completed`;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
      const now = await system.completed();
      if (now > done) lastProgress = performance.now();
      done = now;
    }
    const elapsedMs = performance.now() - begin;
    const cpu = process.cpuUsage(cpuAtBegin);
    const serverCpuAtEnd = contender.server === undefined ? undefined : serverCpuMs(contender.server);
    latencies.sort((a, b) => a - b);
    // Idle pickup: the latency a single job sees when workers wait for work (the common case of a queue
    // that keeps up), without a backlog in front of it.
    const idle: number[] = [];
    for (let i = 0; i < IDLE_JOBS; i++) {
      const latency = new Promise<number>((resolve) => (idleStarted = resolve));
      await system.enqueue({ t: performance.now() });
      idle.push(await latency);
    }
    idleStarted = undefined;
    idle.sort((a, b) => a - b);
    return {
      name: contender.name,
      jobs: n,
      jobsPerSec: (n * 1000) / elapsedMs,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      idleP50: percentile(idle, 0.5),
      idleP99: percentile(idle, 0.99),
      cpuUsPerJob: (cpu.user + cpu.system) / n,
      serverCpuUsPerJob:
        serverCpuAtBegin === undefined || serverCpuAtEnd === undefined
          ? undefined
          : ((serverCpuAtEnd - serverCpuAtBegin) * 1000) / n,
    };
  } finally {
    await system.close();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

/**
 * `a / b` in jobs/s: the median of the per-round ratios when both ran in the same rounds (each round runs
 * the systems back to back, so a ratio pairs two runs measured a few seconds apart: a machine whose speed
 * drifts by tens of percent over a minute biases it least), else the ratio of the median runs.
 */
function ratioLine(label: string, a: Result[] | undefined, b: Result[] | undefined, target: string): string {
  let value = 'n/a';
  if (a !== undefined && b !== undefined && a.length > 0 && b.length > 0) {
    if (a.length === b.length && a.length > 1) {
      const ratios = a.map((run, i) => run.jobsPerSec / b[i]!.jobsPerSec);
      const each = ratios.map((r) => r.toFixed(2)).join(', ');
      value = `${median(ratios).toFixed(2)}x (rounds: ${each})`;
    } else {
      value = `${(medianRun(a).jobsPerSec / medianRun(b).jobsPerSec).toFixed(2)}x`;
    }
  }
  return `  ${label.padEnd(42)} ${value.padStart(8)}  target ${target}`;
}

/** The run with the median throughput. */
function medianRun(runs: Result[]): Result {
  return middle(runs, (run) => run.jobsPerSec);
}

function resultLine(result: Result, contender: Contender, prefix: string): string {
  return (
    `  ${prefix}${result.name.padEnd(20)} ${result.jobs.toLocaleString('en-US').padStart(7)} jobs` +
    `  ${Math.round(result.jobsPerSec).toLocaleString('en-US').padStart(8)} jobs/s` +
    `  p50 ${result.p50.toFixed(2).padStart(9)} ms  p99 ${result.p99.toFixed(2).padStart(9)} ms` +
    `  idle p50 ${result.idleP50.toFixed(2).padStart(7)} ms  p99 ${result.idleP99.toFixed(2).padStart(7)} ms` +
    `  CPU/job ${result.cpuUsPerJob.toFixed(0).padStart(4)} µs` +
    (result.serverCpuUsPerJob === undefined
      ? ' (all in this process)'
      : ` here + ${result.serverCpuUsPerJob.toFixed(0)} µs in ${contender.server}`)
  );
}

export async function main(): Promise<void> {
  const n = intArg('jobs', 20_000);
  const rounds = intArg('rounds', 3);
  console.log(
    `\nJobs: ${n.toLocaleString('en-US')} no-op jobs, concurrency ${CONCURRENCY}, ${IN_FLIGHT} enqueues in flight, ` +
      `${rounds} round${rounds === 1 ? '' : 's'} (each runs the systems one after another)`,
  );
  const results = new Map<string, Result[]>();
  const skipped = new Set<string>();
  const only = process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const chosen = contenders.filter(
    (contender) => only === undefined || only.some((part) => contender.name.includes(part)),
  );
  for (let round = 1; round <= rounds; round++) {
    for (const contender of chosen) {
      if (skipped.has(contender.name)) continue;
      if (round > (contender.rounds ?? rounds)) continue;
      const result = await measure(contender, contender.jobs?.(n) ?? n);
      // A system on PostgreSQL leaves dirty buffers that the server flushes in the background for seconds
      // after: flushed now (CHECKPOINT waits for it), so that the next system measured does not share the
      // disk and a CPU with the previous one's write-back (a SQLite round right after pg-boss measured 0.93x).
      if (contender.server === 'postgres' && typeof result !== 'string') {
        await withPg(PG_URL, (c) => c.query('CHECKPOINT'));
      }
      if (typeof result === 'string') {
        console.log(`  ${contender.name}: skipped: ${result}`);
        skipped.add(contender.name);
        continue;
      }
      const runs = results.get(result.name) ?? [];
      runs.push(result);
      results.set(result.name, runs);
      console.log(resultLine(result, contender, rounds > 1 ? `[${round}] ` : ''));
    }
  }
  if (rounds > 1) {
    console.log('\nMedian run of each:');
    for (const contender of chosen) {
      const runs = results.get(contender.name);
      if (runs !== undefined) console.log(resultLine(medianRun(runs), contender, ''));
    }
  }
  const sqlite = results.get('breakwater sqlite');
  console.log('\nRatios (throughput, higher is faster for breakwater):');
  console.log(ratioLine('breakwater sqlite / bullmq', sqlite, results.get('bullmq redis'), '>= 1.5x'));
  const idle = sqlite === undefined ? 'n/a' : `${medianRun(sqlite).idleP50.toFixed(2)} ms`;
  console.log(`  ${'breakwater sqlite idle p50 latency'.padEnd(42)} ${idle.padStart(8)}  target <= 2 ms`);
  console.log(
    ratioLine(
      'breakwater postgres / pg-boss',
      results.get('breakwater postgres'),
      results.get('pg-boss postgres'),
      '>= 2x',
    ),
  );
}
