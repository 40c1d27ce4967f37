import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, type Logger } from '../core/index.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type Claim, type JobStore } from '../store/index.js';
import { eventually } from '../../test/support/eventually.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';
import { deferred, harness, type Harness } from './test-support.js';

/**
 * A run never starts on a lapsed lease, and a worker never reclaims a job whose run it holds (`run.ts`,
 * `worker.ts`, docs/jobs.md "Leases"). The pause between a claim and its run (a slow first fsync, a GC pause,
 * a busy event loop) is a claim whose answer the test holds back while it moves the FakeClock on: the store
 * wrote the lease at t0, the worker sees it at t0 + 200 ms. Lease 100 ms, pause 200 ms (the numbers of issue
 * 28's reproduction). The same tests run on SQLite and on PostgreSQL.
 */

const LEASE_MS = 100;
const HEARTBEAT_MS = 33;
const PAUSE_MS = 200;

interface Paused {
  store: JobStore;
  /** Ids returned by each claim call, in call order. */
  claimed: string[][];
  /** Resolves with the claims once the first claim that leased a job has been written (and is held back). */
  held: Promise<Claim[]>;
  /** Hands the held-back claim to the worker. */
  resume(): void;
}

/** `store` whose first claim that leases a job is held back (after its commit) until `resume()`. */
function pausedAfterFirstClaim(store: JobStore): Paused {
  const claimed: string[][] = [];
  const held = deferred<Claim[]>();
  const gate = deferred();
  let paused = false;
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'claim') {
        return async (options: Parameters<JobStore['claim']>[0]) => {
          const claims = await target.claim(options);
          claimed.push(claims.map((c) => c.job.id));
          if (!paused && claims.length > 0) {
            paused = true;
            held.resolve(claims);
            await gate.promise;
          }
          return claims;
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, claimed, held: held.promise, resume: () => gate.resolve() };
}

/** Resolves once `signal` aborts (so a test that fails still lets `stop()` end its runs). */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** A logger that keeps every line as `[level, message, fields]`. */
function recordingLogger(lines: [string, string, Record<string, unknown>][]): Logger {
  const write = (level: string) => (fields: object, message: string) =>
    void lines.push([level, message, fields as Record<string, unknown>]);
  return { info: write('info'), warn: write('warn'), error: write('error') };
}

function leaseStartSuite(
  name: string,
  describeIt: typeof describe,
  open: (clock: FakeClock) => Promise<{
    store: JobStore;
    /** Another process on the same database. */
    other(): Promise<JobStore>;
    cleanup(): Promise<void>;
  }>,
): void {
  describeIt(`${name}: a run never starts on a lapsed lease`, () => {
    let h: Harness;
    let opened: Awaited<ReturnType<typeof open>>;
    const extra: JobStore[] = [];

    afterEach(async () => {
      await h.jobs.stop({ graceMs: 0 });
      await h.store.close();
      for (const store of extra.splice(0)) await store.close();
      await opened.cleanup();
    });

    it('a 200 ms pause after the claim with a 100 ms lease: the run renews its lease first and the worker does not reclaim the job it runs', async () => {
      const clock = new FakeClock();
      opened = await open(clock);
      const paused = pausedAfterFirstClaim(opened.store);
      h = await harness(
        { clock, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, pollMs: 3_600_000 },
        paused.store,
      );
      const gate = deferred();
      let runs = 0;
      let active = 0;
      let most = 0;
      // Concurrency 2: the worker has a free slot, so it looks for more work while the first run holds one.
      h.jobs.defineJob(
        'charge',
        async (ctx) => {
          runs++;
          most = Math.max(most, ++active);
          await Promise.race([gate.promise, untilAborted(ctx.signal)]);
          active--;
          return 'charged';
        },
        { concurrency: 2 },
      );
      const t0 = clock.now();
      const id = await h.jobs.enqueue('charge', {});
      h.jobs.start();
      await paused.held;
      await clock.tickAsync(PAUSE_MS);
      paused.resume();
      // The lease the run works under: renewed at the end of the pause (t0 + 200 ms) for 100 ms. (A reclaim
      // by this worker would also end there, with a new token and a second attempt.)
      await eventually(clock, async () => {
        expect((await h.jobs.get(id))?.leaseExpiresAt).toBe(t0 + PAUSE_MS + LEASE_MS);
      });
      await eventually(clock, () => expect(runs).toBe(1));
      expect(await h.jobs.get(id)).toMatchObject({
        status: 'in_progress',
        attempts: 1,
        leaseToken: 1,
        leaseOwner: 'w1',
      });
      // Heartbeats keep it for several lease terms; the worker never hands it to itself again.
      for (let i = 0; i < 10; i++) {
        await clock.tickAsync(HEARTBEAT_MS);
        await eventually(clock, async () => {
          expect((await h.jobs.get(id))?.leaseExpiresAt).toBe(
            t0 + PAUSE_MS + (i + 1) * HEARTBEAT_MS + LEASE_MS,
          );
        });
      }
      expect(paused.claimed.flat()).toEqual([id]);
      expect(runs).toBe(1);
      gate.resolve();
      await eventually(clock, async () => {
        expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 1, result: 'charged' });
      });
      expect(most).toBe(1);
      expect((await h.store.events(id)).map((e) => e.type)).toEqual(['job.started', 'job.completed']);
    });

    it('another worker reclaimed the job during the pause: the paused run never calls its handler and writes nothing', async () => {
      const clock = new FakeClock();
      opened = await open(clock);
      const otherStore = await opened.other();
      extra.push(otherStore);
      const paused = pausedAfterFirstClaim(opened.store);
      const lines: [string, string, Record<string, unknown>][] = [];
      h = await harness(
        {
          clock,
          leaseMs: LEASE_MS,
          heartbeatMs: HEARTBEAT_MS,
          pollMs: 3_600_000,
          logger: recordingLogger(lines),
        },
        paused.store,
      );
      let runs = 0;
      h.jobs.defineJob('charge', () => void runs++);
      const t0 = clock.now();
      const id = await h.jobs.enqueue('charge', {});
      h.jobs.start();
      await paused.held;
      await clock.tickAsync(PAUSE_MS);
      // The lease lapsed at t0 + 100 ms: to another process, this worker looks dead.
      const [reclaim] = await otherStore.claim({ owner: 'w2', types: ['charge'], limit: 1, leaseMs: 60_000 });
      paused.resume();
      await eventually(clock, () => {
        expect(lines.filter(([, message]) => message === 'job run not started')).toEqual([
          [
            'warn',
            'job run not started',
            expect.objectContaining({ job_id: id, job_type: 'charge', attempt: 1, outcome: 'lost' }),
          ],
        ]);
      });
      expect(runs).toBe(0);
      expect(reclaim?.job).toMatchObject({ id, attempts: 2, leaseOwner: 'w2' });
      await clock.tickAsync(1_000);
      expect(runs).toBe(0);
      // The reclaiming run owns the job: nothing of the paused run was written.
      expect(await h.jobs.get(id)).toMatchObject({
        status: 'in_progress',
        attempts: 2,
        leaseOwner: 'w2',
        leaseToken: 2,
        leaseExpiresAt: t0 + PAUSE_MS + 60_000,
      });
      expect((await h.store.events(id)).map((e) => e.type)).toEqual(['job.started', 'job.started']);
      expect(lines.filter(([, message]) => message === 'job run ended')).toEqual([]);
    });

    it('a cancel request seen on the renewal ends the job canceled without calling the handler', async () => {
      const clock = new FakeClock();
      opened = await open(clock);
      const paused = pausedAfterFirstClaim(opened.store);
      const lines: [string, string, Record<string, unknown>][] = [];
      h = await harness(
        {
          clock,
          leaseMs: LEASE_MS,
          heartbeatMs: HEARTBEAT_MS,
          pollMs: 3_600_000,
          logger: recordingLogger(lines),
        },
        paused.store,
      );
      let runs = 0;
      h.jobs.defineJob('charge', () => void runs++);
      const settled: string[] = [];
      h.jobs.onSettled((e) => settled.push(`${e.jobId} ${e.type}`));
      const t0 = clock.now();
      const id = await h.jobs.enqueue('charge', {});
      h.jobs.start();
      await paused.held;
      await clock.tickAsync(PAUSE_MS);
      await h.jobs.cancel(id);
      paused.resume();
      await eventually(clock, async () => {
        expect(await h.jobs.get(id)).toMatchObject({
          status: 'canceled',
          attempts: 1,
          finishedAt: t0 + PAUSE_MS,
        });
      });
      expect(runs).toBe(0);
      expect((await h.store.events(id)).map((e) => e.type)).toEqual(['job.started', 'job.canceled']);
      expect(settled).toEqual([`${id} job.canceled`]);
      expect(lines).toEqual([
        [
          'info',
          'job run not started',
          expect.objectContaining({ job_id: id, attempt: 1, outcome: 'canceled', reason: 'canceled' }),
        ],
      ]);
    });

    it('a renewal answered too late to leave a usable lease gives the lease back (the attempt not counted); the job then runs', async () => {
      const clock = new FakeClock();
      opened = await open(clock);
      const paused = pausedAfterFirstClaim(opened.store);
      // The renewal's answer is held back too: 80 ms more, so the renewed lease (to t0 + 300 ms) has 20 ms left.
      const renewal = deferred();
      const renewed = deferred();
      let heartbeats = 0;
      const slowRenewal = new Proxy(paused.store, {
        get(target, prop, receiver) {
          if (prop === 'heartbeat') {
            return async (...args: Parameters<JobStore['heartbeat']>) => {
              const answer = await target.heartbeat(...args);
              if (++heartbeats === 1) {
                renewed.resolve();
                await renewal.promise;
              }
              return answer;
            };
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const lines: [string, string, Record<string, unknown>][] = [];
      h = await harness(
        {
          clock,
          leaseMs: LEASE_MS,
          heartbeatMs: HEARTBEAT_MS,
          pollMs: 3_600_000,
          logger: recordingLogger(lines),
        },
        slowRenewal,
      );
      const ran: [number, number][] = [];
      h.jobs.defineJob('charge', (ctx) => void ran.push([clock.now(), ctx.attempt]));
      const t0 = clock.now();
      const id = await h.jobs.enqueue('charge', {});
      h.jobs.start();
      await paused.held;
      await clock.tickAsync(PAUSE_MS);
      paused.resume();
      await renewed.promise;
      expect(await h.jobs.get(id)).toMatchObject({ leaseExpiresAt: t0 + PAUSE_MS + LEASE_MS, leaseToken: 1 });
      await clock.tickAsync(80);
      renewal.resolve();
      await eventually(clock, async () => {
        expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 1, leaseToken: 2 });
      });
      expect(ran).toEqual([[t0 + PAUSE_MS + 80, 1]]);
      expect((await h.store.events(id)).map((e) => [e.type, e.payload])).toEqual([
        ['job.started', { attempt: 1 }],
        ['job.started', { attempt: 1 }],
        ['job.completed', { result: null }],
      ]);
      expect(lines.filter(([, message]) => message === 'job run not started')).toEqual([
        [
          'warn',
          'job run not started',
          expect.objectContaining({ job_id: id, attempt: 1, outcome: 'released', reason: 'renewal_late' }),
        ],
      ]);
    });

    it('heartbeats that cannot reach the store: the lease lapses, and the worker, with free slots, still does not reclaim it (nor spin)', async () => {
      const clock = new FakeClock();
      opened = await open(clock);
      let claims = 0;
      const partitioned = new Proxy(opened.store, {
        get(target, prop, receiver) {
          if (prop === 'heartbeat') return () => Promise.reject(new Error('connection lost'));
          if (prop === 'claim') {
            return (options: Parameters<JobStore['claim']>[0]) => {
              claims++;
              return target.claim(options);
            };
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      h = await harness({ clock, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, pollMs: 1_000 }, partitioned);
      const gate = deferred();
      const started: string[] = [];
      h.jobs.defineJob<{ name: string }>(
        'charge',
        async (ctx) => {
          started.push(ctx.payload.name);
          if (ctx.payload.name === 'first') await Promise.race([gate.promise, untilAborted(ctx.signal)]);
        },
        { concurrency: 3 },
      );
      const first = await h.jobs.enqueue('charge', { name: 'first' });
      h.jobs.start();
      await eventually(clock, () => expect(started).toEqual(['first']));
      // Five lease terms without a heartbeat reaching the store, and a safety-net poll.
      await clock.tickAsync(5 * LEASE_MS + 1_000);
      await h.jobs.enqueue('charge', { name: 'second' });
      await eventually(clock, () => expect(started).toEqual(['first', 'second']));
      expect(await h.jobs.get(first)).toMatchObject({ status: 'in_progress', attempts: 1, leaseToken: 1 });
      // Claims happen on wake-ups only: the start, the poll, the enqueue, the second run's end.
      expect(claims).toBeLessThanOrEqual(6);
      gate.resolve();
      // Its settle goes through (no one replaced the run): the lease token decides, not the clock.
      await eventually(clock, async () => {
        expect(await h.jobs.get(first)).toMatchObject({ status: 'completed', attempts: 1 });
      });
    });
  });
}

leaseStartSuite('SQLite', describe, async (clock) => {
  const store = await openSqliteStore({ path: ':memory:', clock });
  return {
    store,
    other: () => Promise.resolve(store),
    cleanup: async () => {},
  };
});

describePostgres('lease-start tests')('PostgreSQL', () => {
  const schemas = testSchemas();
  leaseStartSuite('PostgreSQL', describe, async (clock) => {
    const schema = await schemas.create();
    return {
      store: await openPostgresStore({ url, clock, schema }),
      other: () => openPostgresStore({ url, clock, schema }),
      cleanup: () => schemas.drop(schema),
    };
  });
});
