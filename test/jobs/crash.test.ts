import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createJobs, type Jobs } from '../../src/jobs/index.js';
import { TERMINAL_STATUSES, type JobRecord, type JobStatus, type JobStore } from '../../src/store/index.js';
import {
  CRASH_JOB,
  openSideEffects,
  openStore,
  performSideEffect,
  type Backend,
  type SideEffects,
  type WorkerConfig,
  type WorkerMessage,
} from './crash-support.js';

/**
 * The crash test of the jobs runtime: real processes, real SIGKILL, so real time. A worker in a child
 * process is killed in the middle of a job; a second worker (in this process) reclaims the job once the
 * dead one's lease has lapsed and completes it; the side effect keyed by the job id exists once. Also: an
 * enqueue acknowledged just before a SIGKILL is in the store when it is reopened.
 *
 * Runs on a SQLite file in a temp dir and, when BREAKWATER_TEST_DATABASE_URL is set, on PostgreSQL in a
 * fresh schema dropped after each test. Every wait is bounded by a deadline well inside the test timeout.
 */
const url = process.env.BREAKWATER_TEST_DATABASE_URL ?? '';
if (url === '')
  console.log('PostgreSQL crash tests skipped: set BREAKWATER_TEST_DATABASE_URL=postgres://...');

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKER = fileURLToPath(new URL('./crash-worker.ts', import.meta.url));

/** Lease of both workers (real ms): the dead worker's job is reclaimable this long after its last heartbeat. */
const LEASE_MS = 500;
/** The rescuing worker's safety-net poll: expired leases are found by polling (the store announces none). */
const POLL_MS = 50;
/** Budget of one test, in real ms (the vitest timeout is 10 s). */
const BUDGET_MS = 8_000;
/** Acknowledged enqueues to see before the SIGKILL. */
const ACKS_BEFORE_KILL = 20;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A crash-worker.ts process: its JSON stdout lines as they arrive, its stderr for diagnostics. */
class WorkerProcess {
  readonly child: ChildProcess;
  readonly messages: WorkerMessage[] = [];
  /** Resolves once the process exited and its stdout was read to the end. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stderr = '';
  private wakeUp: (() => void) | undefined;

  constructor(config: WorkerConfig) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.messages.push(JSON.parse(line) as WorkerMessage);
      this.wakeUp?.();
    });
    this.closed = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        resolve({ code, signal });
        this.wakeUp?.();
      });
    });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits until `count` messages match, or throws when the process ends first or the deadline passes. */
  async waitFor<M extends WorkerMessage>(
    match: (m: WorkerMessage) => m is M,
    deadline: number,
    count = 1,
  ): Promise<M[]> {
    for (;;) {
      const found = this.messages.filter(match);
      if (found.length >= count) return found;
      if (!this.alive) throw new Error(`the worker process ended early; its stderr:\n${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no message from the worker process in time; its stderr:\n${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  /** SIGKILLs the process (when alive) and waits, up to 3 s, until it is gone and its stdout is drained. */
  async kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.alive) this.child.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the worker process did not die within 3 s')), 3_000);
    });
    try {
      return await Promise.race([this.closed, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Reads `read` until `done` holds of its value, every 20 ms, or throws at the deadline with the last value. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, deadline: number): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met in time; last: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

const isMidJob = (m: WorkerMessage): m is Extract<WorkerMessage, { event: 'mid-job' }> =>
  m.event === 'mid-job';
const isEnqueued = (m: WorkerMessage): m is Extract<WorkerMessage, { event: 'enqueued' }> =>
  m.event === 'enqueued';

/** The variant-specific part: a fresh backend per test, and how to remove it. */
interface Variant {
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
  fresh(): Promise<Backend>;
  remove(backend: Backend): Promise<void>;
}

function crashSuite(name: string, variant: Variant, enabled: boolean): void {
  (enabled ? describe : describe.skip)(`jobs crash test on ${name}`, () => {
    let backend: Backend;
    let children: WorkerProcess[];
    /** Undone in reverse order after each test: runtimes stopped, connections closed. */
    let cleanups: (() => Promise<void>)[];

    beforeAll(async () => variant.setup?.());
    afterAll(async () => variant.teardown?.());

    beforeEach(async () => {
      children = [];
      cleanups = [];
      backend = await variant.fresh();
    });

    afterEach(async () => {
      for (const child of children) if (child.alive) await child.kill();
      for (const cleanup of cleanups.reverse()) await cleanup();
      await variant.remove(backend);
    });

    function startWorker(config: WorkerConfig): WorkerProcess {
      const child = new WorkerProcess(config);
      children.push(child);
      return child;
    }

    async function storeHere(): Promise<JobStore> {
      const store = await openStore(backend);
      cleanups.push(() => store.close());
      return store;
    }

    async function sideEffectsHere(): Promise<SideEffects> {
      const effects = await openSideEffects(backend);
      cleanups.push(() => effects.close());
      return effects;
    }

    function runtimeHere(store: JobStore, owner: string): Jobs {
      const jobs = createJobs({ store, owner, leaseMs: LEASE_MS, pollMs: POLL_MS });
      cleanups.push(() => jobs.stop({ graceMs: 0 }));
      return jobs;
    }

    it('a worker SIGKILLed mid-job: another reclaims the job after the lease lapses and completes it; the side effect happens once', async () => {
      const deadline = Date.now() + BUDGET_MS;

      // 1. The first worker, in its own process, runs attempt 1 and is killed in the middle of it.
      const doomed = startWorker({ mode: 'run', backend, owner: 'doomed', leaseMs: LEASE_MS });
      const [mid] = await doomed.waitFor(isMidJob, deadline);
      expect(mid).toMatchObject({ attempt: 1, owner: 'doomed', pid: doomed.child.pid });
      expect(await doomed.kill()).toEqual({ code: null, signal: 'SIGKILL' });
      const { jobId, token: staleToken } = mid!;

      // The job is left leased to the dead worker, its side effect already done once.
      const store = await storeHere();
      const effects = await sideEffectsHere();
      const orphan = (await store.get(jobId))!;
      expect(orphan).toMatchObject({
        type: CRASH_JOB,
        status: 'in_progress',
        attempts: 1,
        maxAttempts: 3,
        leaseOwner: 'doomed',
        leaseToken: staleToken,
      });
      expect(orphan.leaseExpiresAt).toEqual(expect.any(Number));
      expect(await effects.effects(jobId)).toEqual([{ attempt: 1, pid: doomed.child.pid }]);
      expect(await effects.runs(jobId)).toEqual([1]);

      // 2. A second worker reclaims it once the lease lapsed. Its handler runs the side effect again (which
      // must write nothing) and, while it holds the new lease, tries the dead run's token on the store.
      const rescuer = runtimeHere(store, 'rescuer');
      let stale: Record<string, unknown> | undefined;
      rescuer.defineJob(CRASH_JOB, async ({ jobId: id, attempt }) => {
        const appliedNow = await performSideEffect(effects, id, attempt);
        const lease = { id, token: staleToken };
        const before = await store.get(id);
        const eventsBefore = await store.events(id);
        stale = {
          complete: await store.complete(lease, { stale: true }),
          fail: await store.fail(lease, { code: 'upstream_error', message: 'stale', kind: 'permanent' }),
          heartbeat: await store.heartbeat(lease, 60_000),
          progress: await store.appendRunEvent(lease, 'job.progress', { step: 1, total: 2 }),
          jobUnchanged: JSON.stringify(await store.get(id)) === JSON.stringify(before),
          eventsUnchanged: JSON.stringify(await store.events(id)) === JSON.stringify(eventsBefore),
          before,
        };
        return { attempt, appliedNow };
      });
      rescuer.start();
      const done = await until(
        () => store.get(jobId),
        (job) => job !== undefined && TERMINAL_STATUSES.has(job.status),
        deadline,
      );
      await rescuer.stop({ graceMs: 1_000 });

      // The job completed on the second attempt, with the effect already there.
      expect(done).toMatchObject({
        status: 'completed',
        attempts: 2,
        result: { attempt: 2, appliedNow: false },
        error: null,
        leaseOwner: null,
        leaseToken: staleToken + 1,
        leaseExpiresAt: null,
      });

      // The stale token was rejected while the second run held the job, and changed nothing.
      expect(stale).toMatchObject({
        complete: undefined,
        fail: undefined,
        heartbeat: { ok: false },
        progress: undefined,
        jobUnchanged: true,
        eventsUnchanged: true,
        before: { status: 'in_progress', attempts: 2, leaseOwner: 'rescuer', leaseToken: staleToken + 1 },
      });

      // Events: two starts and one completion, seq 1..3, exactly one terminal event.
      const events = await store.events(jobId);
      expect(events.map(({ seq, type, payload }) => ({ seq, type, payload }))).toEqual([
        { seq: 1, type: 'job.started', payload: { attempt: 1 } },
        { seq: 2, type: 'job.started', payload: { attempt: 2 } },
        { seq: 3, type: 'job.completed', payload: { result: { attempt: 2, appliedNow: false } } },
      ]);
      const terminal = ['job.completed', 'job.failed', 'job.canceled'];
      expect(events.filter((e) => terminal.includes(e.type))).toHaveLength(1);
      // The reclaim waited for the dead worker's lease to lapse.
      expect(events[1]!.timestamp).toBeGreaterThanOrEqual(orphan.leaseExpiresAt!);

      // The handler ran twice; the side effect keyed by the job id exists once, written by the first run.
      expect(await effects.runs(jobId)).toEqual([1, 2]);
      expect(await effects.effects(jobId)).toEqual([{ attempt: 1, pid: doomed.child.pid }]);

      // After the end, the dead run's token still changes nothing.
      expect(await store.complete({ id: jobId, token: staleToken }, { stale: true })).toBeUndefined();
      expect(await store.get(jobId)).toEqual(done);
      expect(await store.events(jobId)).toEqual(events);

      // Nothing else is in the store.
      const { counts } = await store.stats();
      expect(counts).toEqual<Record<JobStatus, number>>({
        pending: 0,
        in_progress: 0,
        input_required: 0,
        completed: 1,
        failed: 0,
        canceled: 0,
      });
    });

    it('an enqueue acknowledged right before a SIGKILL survives it', async () => {
      const deadline = Date.now() + BUDGET_MS;
      const child = startWorker({ mode: 'enqueue', backend, max: 100_000 });
      await child.waitFor(isEnqueued, deadline, ACKS_BEFORE_KILL);
      // Killed while it goes on enqueueing: the last acknowledgement came just before the signal.
      expect(await child.kill()).toEqual({ code: null, signal: 'SIGKILL' });
      const acked = child.messages.filter(isEnqueued);
      expect(acked.length).toBeGreaterThanOrEqual(ACKS_BEFORE_KILL);
      expect(new Set(acked.map((m) => m.jobId)).size).toBe(acked.length);

      const store = await storeHere();
      const found: (JobRecord | undefined)[] = [];
      for (const { jobId } of acked) found.push(await store.get(jobId));
      expect(found.map((job) => job && { id: job.id, status: job.status, payload: job.payload })).toEqual(
        acked.map(({ jobId, i }) => ({ id: jobId, status: 'pending', payload: { i } })),
      );
      const { counts } = await store.stats();
      // Every acknowledged job, maybe one more whose acknowledgement the kill cut off.
      expect(counts.pending).toBeGreaterThanOrEqual(acked.length);
      expect(counts.pending).toBeLessThanOrEqual(acked.length + 1);
    });
  });
}

crashSuite(
  'SQLite (a file)',
  {
    async fresh() {
      const dir = await mkdtemp(join(tmpdir(), 'bw-crash-'));
      return { kind: 'sqlite', path: join(dir, 'breakwater.db') };
    },
    async remove(backend) {
      if (backend.kind === 'sqlite') await rm(dirname(backend.path), { recursive: true, force: true });
    },
  },
  true,
);

let admin: pg.Client | undefined;
crashSuite(
  'PostgreSQL (a fresh schema)',
  {
    async setup() {
      admin = new pg.Client({ connectionString: url });
      await admin.connect();
    },
    async teardown() {
      await admin?.end();
    },
    async fresh() {
      const schema = `bw_test_${randomBytes(6).toString('hex')}`;
      await admin!.query(`CREATE SCHEMA ${schema}`);
      return { kind: 'postgres', url, schema };
    },
    async remove(backend) {
      if (backend.kind === 'postgres') await admin!.query(`DROP SCHEMA IF EXISTS ${backend.schema} CASCADE`);
    },
  },
  url !== '',
);
