import { isDeepStrictEqual } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import type { InputRequest } from './job-input.js';
import {
  JOB_STATUSES,
  TERMINAL_STATUSES,
  type Claim,
  type JobError,
  type JobEvent,
  type JobEventType,
  type JobFilter,
  type JobRecord,
  type JobStatus,
  type JobStore,
  type LeaseRef,
  type NewJob,
  type StoreNotification,
} from './jobs.js';

/**
 * The job store contract suite (docs/jobs.md; both backends pass the same contract tests:
 * docs/architecture.md#contract-suites). Every docstring of `store/jobs.ts` is a rule checked here, each rule
 * in its own `it`.
 */

/** How a backend differs in ways the contract allows. */
export interface JobStoreContractOptions {
  /**
   * True when notifications arrive asynchronously (PostgreSQL LISTEN/NOTIFY): the suite then polls for them
   * for up to {@link NOTIFY_WAIT_MS}. False (default): a notification must have reached the listener by the
   * time the awaited call that caused it resolves (SQLite, in process).
   */
  asyncNotifications?: boolean;
}

/** Longest real wait for a PostgreSQL NOTIFY to arrive; the only real-time wait in the store tests. */
export const NOTIFY_WAIT_MS = 2_000;

/**
 * Polls `condition` every 10 ms of real time until it holds or {@link NOTIFY_WAIT_MS} pass. Used only to
 * wait for a PostgreSQL NOTIFY, which arrives on its own connection.
 */
export async function pollUntil(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + NOTIFY_WAIT_MS;
  while (!condition() && Date.now() < deadline) {
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

/** Fixed error values used in settles. */
const TRANSIENT: JobError = {
  code: 'upstream_unavailable',
  message: 'The gift service is down',
  kind: 'transient',
};
const PERMANENT: JobError = { code: 'invalid_input', message: 'The address is not valid', kind: 'permanent' };

const LEASE_MS = 30_000;
const UUID_V7 = /^job_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TERMINAL_EVENTS: ReadonlySet<JobEventType> = new Set(['job.completed', 'job.failed', 'job.canceled']);

const QUESTION: InputRequest = { key: '0', message: 'Which?', schema: null, askedAt: 0, expiresAt: null };

function leaseOf(claim: Claim): LeaseRef {
  return { id: claim.job.id, token: claim.token };
}

function event(
  job: { id: string },
  seq: number,
  type: JobEventType,
  timestamp: number,
  payload: unknown,
): JobEvent {
  return { eventId: `${job.id}:${seq}`, seq, type, jobId: job.id, timestamp, payload };
}

/**
 * Declares the contract suite for one backend.
 * @param name names the backend in the test titles (`sqlite`, `postgres`).
 * @param open opens an empty store that reads time from `clock`; called once per test (before it).
 * @param cleanup runs after each test, once the suite has closed its stores (drop a schema, delete a file).
 * @param options what the backend does differently within the contract.
 */
export function jobStoreContract(
  name: string,
  open: (clock: FakeClock) => Promise<JobStore>,
  cleanup?: () => Promise<void>,
  options: JobStoreContractOptions = {},
): void {
  describe(`JobStore contract: ${name}`, () => {
    let clock: FakeClock;
    let store: JobStore;
    let start: number;

    beforeEach(async () => {
      clock = new FakeClock();
      start = clock.now();
      store = await open(clock);
    });

    afterEach(async () => {
      // `store` is unset when `open` failed.
      await (store as JobStore | undefined)?.close();
      store = undefined as unknown as JobStore;
      await cleanup?.();
    });

    /** A due job of type `email` with 3 attempts; `overrides` replace any field. */
    function newJob(overrides: Partial<NewJob> = {}): NewJob {
      return {
        type: 'email',
        payload: { to: 'ada@example.com', lines: ['hello', 2, null, { nested: true }] },
        runAt: clock.now(),
        priority: 0,
        maxAttempts: 3,
        ...overrides,
      };
    }

    async function enqueue(overrides: Partial<NewJob> = {}): Promise<JobRecord> {
      const { job, created } = await store.enqueue(newJob(overrides));
      expect(created).toBe(true);
      return job;
    }

    /** Claims exactly one job (of `types`, all when empty); fails the test when none or more come back. */
    async function claimOne(
      owner = 'worker-1',
      types: readonly string[] = [],
      leaseMs: number = LEASE_MS,
    ): Promise<Claim> {
      const claims = await store.claim({ owner, types, limit: 1, leaseMs });
      expect(claims).toHaveLength(1);
      return claims[0]!;
    }

    async function mustGet(id: string): Promise<JobRecord> {
      const job = await store.get(id);
      expect(job).toBeDefined();
      return job!;
    }

    async function eventTypes(id: string): Promise<JobEventType[]> {
      return (await store.events(id)).map((e) => e.type);
    }

    /** Waits for a notification equal to `expected` (async backends) or checks it already arrived. */
    async function expectNotified(received: StoreNotification[], expected: StoreNotification): Promise<void> {
      if (options.asyncNotifications)
        await pollUntil(() => received.some((n) => isDeepStrictEqual(n, expected)));
      expect(received).toContainEqual(expected);
    }

    describe('enqueue', () => {
      it('returns a pending job with every field exactly as given and the defaults', async () => {
        const given = newJob({ type: 'gift.suggest', priority: 7, maxAttempts: 5, runAt: start + 60_000 });
        const { job, created } = await store.enqueue(given);
        expect(created).toBe(true);
        expect(job.id).toMatch(UUID_V7);
        expect(job).toEqual({
          id: job.id,
          type: 'gift.suggest',
          status: 'pending',
          payload: { to: 'ada@example.com', lines: ['hello', 2, null, { nested: true }] },
          result: null,
          error: null,
          attempts: 0,
          maxAttempts: 5,
          runAt: start + 60_000,
          priority: 7,
          idempotencyKey: null,
          orderingKey: null,
          timeoutMs: null,
          leaseOwner: null,
          leaseToken: 0,
          leaseExpiresAt: null,
          cancelRequestedAt: null,
          createdAt: start,
          updatedAt: start,
          finishedAt: null,
          owner: null,
        } satisfies JobRecord);
        expect(await store.get(job.id)).toEqual(job);
        expect(await store.events(job.id)).toEqual([]);
      });

      it('stores the idempotency key and timeoutMs when given', async () => {
        const job = await enqueue({ idempotencyKey: 'order-42', timeoutMs: 4_000 });
        expect(job.idempotencyKey).toBe('order-42');
        expect(job.timeoutMs).toBe(4_000);
        expect(await store.get(job.id)).toEqual(job);
      });

      it('an idempotency key returns the existing job with created false, whatever else is given', async () => {
        const first = await enqueue({ idempotencyKey: 'order-42' });
        clock.tick(1_000);
        const again = await store.enqueue(
          newJob({ idempotencyKey: 'order-42', payload: { other: 1 }, priority: 9, maxAttempts: 1 }),
        );
        expect(again).toEqual({ job: first, created: false });
        expect(await store.list()).toEqual([first]);

        // Still the same job once it has run to the end.
        const claim = await claimOne();
        await store.complete(leaseOf(claim), { sent: true });
        const finished = await mustGet(first.id);
        expect(await store.enqueue(newJob({ idempotencyKey: 'order-42' }))).toEqual({
          job: finished,
          created: false,
        });
        expect(await store.list()).toHaveLength(1);
      });

      it.each([
        ['type', { type: '' }, 'job store: type must be a non-empty string without NUL, got '],
        ['runAt', { runAt: Number.NaN }, 'job store: runAt must be a safe integer (ms), got NaN'],
        ['priority', { priority: 1.5 }, 'job store: priority must be a 32-bit integer, got 1.5'],
        [
          'maxAttempts',
          { maxAttempts: 0 },
          'job store: maxAttempts must be an integer from 1 to 2147483647, got 0',
        ],
        ['timeoutMs', { timeoutMs: -1 }, 'job store: timeoutMs must be an integer > 0, got -1'],
        [
          'orderingKey',
          { orderingKey: 'a\0b' },
          'job store: orderingKey must be a non-empty string without NUL, got a\0b',
        ],
      ] as const)('refuses a job whose %s it cannot store, writing nothing', async (_, bad, message) => {
        await expect(store.enqueue(newJob(bad as Partial<NewJob>))).rejects.toThrow(message);
        expect(await store.list()).toEqual([]);
      });

      it('idempotency keys are scoped per type', async () => {
        const email = await enqueue({ type: 'email', idempotencyKey: 'k1' });
        const sms = await enqueue({ type: 'sms', idempotencyKey: 'k1' });
        expect(sms.id).not.toBe(email.id);
        expect(sms.type).toBe('sms');
        expect((await store.enqueue(newJob({ type: 'sms', idempotencyKey: 'k1' }))).job.id).toBe(sms.id);
        expect((await store.enqueue(newJob({ type: 'email', idempotencyKey: 'k1' }))).job.id).toBe(email.id);
        expect(await store.list()).toHaveLength(2);
      });
    });

    describe('get', () => {
      it('a missing id is undefined', async () => {
        await enqueue();
        expect(await store.get('job_00000000-0000-7000-8000-000000000000')).toBeUndefined();
        expect(await store.get('nope')).toBeUndefined();
      });
    });

    describe('list', () => {
      it('returns every job newest first (by id)', async () => {
        const a = await enqueue();
        clock.tick(1);
        const b = await enqueue({ type: 'sms' });
        clock.tick(1);
        const c = await enqueue();
        expect(await store.list()).toEqual([c, b, a]);
        expect(await store.list({})).toEqual([c, b, a]);
      });

      it('filters by one status or several', async () => {
        const pending = await enqueue({ type: 'a' });
        const running = await enqueue({ type: 'b' });
        const done = await enqueue({ type: 'c' });
        const doneClaim = await claimOne('w', ['c']);
        await store.complete(leaseOf(doneClaim), null);
        await claimOne('w', ['b']);
        const ids = async (status: JobStatus | JobStatus[]): Promise<string[]> =>
          (await store.list({ status })).map((j) => j.id);
        expect(await ids('pending')).toEqual([pending.id]);
        expect(await ids('in_progress')).toEqual([running.id]);
        expect(await ids('completed')).toEqual([done.id]);
        expect(await ids('failed')).toEqual([]);
        expect(await ids(['pending', 'completed'])).toEqual([done.id, pending.id]);
        expect(await ids(['canceled'])).toEqual([]);
      });

      it('every status and mix of statuses, newest first, with type and beforeId (each index path)', async () => {
        // Two jobs in each status, made in the order below; ids grow with creation.
        const made: Record<JobStatus, string[]> = {
          pending: [],
          in_progress: [],
          input_required: [],
          completed: [],
          failed: [],
          canceled: [],
        };
        const all: { id: string; status: JobStatus; type: string }[] = [];
        for (let round = 0; round < 2; round++) {
          for (const status of JOB_STATUSES) {
            const type = round === 0 ? 'x' : 'y';
            const job = await enqueue({ type: `${status}-${type}` });
            if (status === 'canceled') await store.cancel(job.id);
            else if (status !== 'pending') {
              const claim = await claimOne('w', [`${status}-${type}`]);
              if (status === 'completed') await store.complete(leaseOf(claim), null);
              if (status === 'failed') await store.fail(leaseOf(claim), PERMANENT);
              if (status === 'input_required') await store.askInput(leaseOf(claim), QUESTION);
            }
            made[status].push(job.id);
            all.push({ id: job.id, status, type: `${status}-${type}` });
            clock.tick(1);
          }
        }
        const newestFirst = (keep: (job: { status: JobStatus; type: string }) => boolean) =>
          all
            .filter(keep)
            .map((job) => job.id)
            .reverse();
        const ids = async (filter: JobFilter): Promise<string[]> =>
          (await store.list(filter)).map((j) => j.id);
        for (const status of JOB_STATUSES) {
          expect(await ids({ status })).toEqual([made[status][1], made[status][0]]);
          expect(await ids({ status, limit: 1 })).toEqual([made[status][1]]);
          expect(await ids({ status, beforeId: made[status][1] })).toEqual([made[status][0]]);
          expect(await ids({ status, type: `${status}-x` })).toEqual([made[status][0]]);
        }
        for (const statuses of [
          ['failed', 'canceled'],
          ['canceled', 'failed', 'failed'],
          ['in_progress', 'failed'],
          ['pending', 'in_progress', 'completed'],
          [...JOB_STATUSES],
        ] as JobStatus[][]) {
          expect(await ids({ status: statuses })).toEqual(
            newestFirst((job) => statuses.includes(job.status)),
          );
        }
        // An unknown status matches nothing, alone or next to a known one.
        expect(await ids({ status: 'lost' as JobStatus })).toEqual([]);
        expect(await ids({ status: ['lost', 'failed'] as JobStatus[] })).toEqual([
          made.failed[1],
          made.failed[0],
        ]);
        expect(await store.stats()).toMatchObject({
          counts: { pending: 2, in_progress: 2, input_required: 2, completed: 2, failed: 2, canceled: 2 },
        });
      });

      it('filters by type', async () => {
        const a1 = await enqueue({ type: 'a' });
        await enqueue({ type: 'b' });
        const a2 = await enqueue({ type: 'a' });
        expect(await store.list({ type: 'a' })).toEqual([a2, a1]);
        expect(await store.list({ type: 'zzz' })).toEqual([]);
        expect(await store.list({ type: 'a', status: 'in_progress' })).toEqual([]);
      });

      it('createdBefore keeps jobs created at or before that time', async () => {
        const a = await enqueue();
        clock.tick(1_000);
        const b = await enqueue();
        clock.tick(1_000);
        await enqueue();
        expect(await store.list({ createdBefore: start + 1_000 })).toEqual([b, a]);
        expect(await store.list({ createdBefore: start + 999 })).toEqual([a]);
        expect(await store.list({ createdBefore: start - 1 })).toEqual([]);
      });

      it('limit caps the number of jobs, newest first', async () => {
        const jobs: JobRecord[] = [];
        for (let i = 0; i < 5; i++) jobs.push(await enqueue({ payload: { i } }));
        expect(await store.list({ limit: 2 })).toEqual([jobs[4], jobs[3]]);
        expect(await store.list({ limit: 1 })).toEqual([jobs[4]]);
      });

      it('limit defaults to 100 and is at most 1000', async () => {
        await Promise.all(Array.from({ length: 1_001 }, (_, i) => store.enqueue(newJob({ payload: { i } }))));
        expect(await store.list()).toHaveLength(100);
        expect(await store.list({ limit: 5_000 })).toHaveLength(1_000);
        expect(await store.list({ limit: 1_000 })).toHaveLength(1_000);
      });

      it('beforeId pages through the jobs with no gap and no repeat', async () => {
        const jobs: JobRecord[] = [];
        for (let i = 0; i < 5; i++) jobs.push(await enqueue({ payload: { i } }));
        const page1 = await store.list({ limit: 2 });
        expect(page1).toEqual([jobs[4], jobs[3]]);
        const page2 = await store.list({ limit: 2, beforeId: page1[1]!.id });
        expect(page2).toEqual([jobs[2], jobs[1]]);
        const page3 = await store.list({ limit: 2, beforeId: page2[1]!.id });
        expect(page3).toEqual([jobs[0]]);
        expect(await store.list({ limit: 2, beforeId: jobs[0]!.id })).toEqual([]);
      });
    });

    describe('claim', () => {
      it('a delayed job is not claimed until its runAt', async () => {
        const job = await enqueue({ runAt: start + 5_000 });
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
        clock.tick(4_999);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
        clock.tick(1);
        const claim = await claimOne('w');
        expect(claim.job.id).toBe(job.id);
      });

      it('claims the highest priority first, then the earliest runAt, then the oldest', async () => {
        clock.tick(10_000);
        const now = clock.now();
        const lowOld = await enqueue({ priority: 0, runAt: now - 1_000 });
        clock.tick(1);
        const highLate = await enqueue({ priority: 10, runAt: now });
        clock.tick(1);
        const highEarly = await enqueue({ priority: 10, runAt: now - 500 });
        clock.tick(1);
        const lowYoung = await enqueue({ priority: 0, runAt: now - 1_000 });
        clock.tick(1);
        const negative = await enqueue({ priority: -5, runAt: now - 9_000 });
        clock.tick(1);
        const order: string[] = [];
        for (let i = 0; i < 5; i++) order.push((await claimOne('w')).job.id);
        expect(order).toEqual([highEarly.id, highLate.id, lowOld.id, lowYoung.id, negative.id]);
      });

      it('claims at most limit jobs', async () => {
        for (let i = 0; i < 5; i++) await enqueue({ payload: { i } });
        expect(await store.claim({ owner: 'w', types: [], limit: 2, leaseMs: LEASE_MS })).toHaveLength(2);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toHaveLength(3);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });

      it('claims only the given types, all types when the list is empty', async () => {
        const a = await enqueue({ type: 'a' });
        const b = await enqueue({ type: 'b' });
        const c = await enqueue({ type: 'c' });
        expect(await store.claim({ owner: 'w', types: ['zzz'], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
        const ab = await store.claim({ owner: 'w', types: ['b', 'a'], limit: 10, leaseMs: LEASE_MS });
        expect(ab.map((x) => x.job.id).sort()).toEqual([a.id, b.id].sort());
        const rest = await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS });
        expect(rest.map((x) => x.job.id)).toEqual([c.id]);
      });

      it('claims by a long list of types (more than eight) and by each list length, with a limit that changes', async () => {
        const types = Array.from({ length: 12 }, (_, i) => `t${i}`);
        const jobs = [];
        for (const type of types) jobs.push(await enqueue({ type }));
        const others = types.slice(0, 11).concat('zzz');
        const long = await store.claim({ owner: 'w', types: others, limit: 3, leaseMs: LEASE_MS });
        expect(long.map((x) => x.job.id)).toEqual(jobs.slice(0, 3).map((j) => j.id));
        const two = await store.claim({ owner: 'w', types: ['t9', 't3'], limit: 1, leaseMs: LEASE_MS });
        expect(two.map((x) => x.job.id)).toEqual([jobs[3]!.id]);
        const eight = await store.claim({
          owner: 'w',
          types: types.slice(4, 12),
          limit: 2,
          leaseMs: LEASE_MS,
        });
        expect(eight.map((x) => x.job.id)).toEqual([jobs[4]!.id, jobs[5]!.id]);
        const rest = await store.claim({ owner: 'w', types: others, limit: 10, leaseMs: LEASE_MS });
        expect(rest.map((x) => x.job.id)).toEqual(jobs.slice(6, 11).map((j) => j.id));
        expect(await store.claim({ owner: 'w', types: others, limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });

      it('leases the job: in_progress, attempts + 1, owner, expiry, a new token, and job.started { attempt } with seq 1', async () => {
        const job = await enqueue();
        clock.tick(250);
        const [claim, ...more] = await store.claim({
          owner: 'worker-7',
          types: [],
          limit: 5,
          leaseMs: 12_000,
        });
        expect(more).toEqual([]);
        const expected: JobRecord = {
          ...job,
          status: 'in_progress',
          attempts: 1,
          leaseOwner: 'worker-7',
          leaseToken: 1,
          leaseExpiresAt: start + 250 + 12_000,
          updatedAt: start + 250,
        };
        expect(claim).toEqual({ job: expected, token: 1 });
        expect(await store.get(job.id)).toEqual(expected);
        expect(await store.events(job.id)).toEqual([
          event(job, 1, 'job.started', start + 250, { attempt: 1 }),
        ]);
      });

      it('two claims never return the same job, even run concurrently', async () => {
        for (let i = 0; i < 12; i++) await enqueue({ payload: { i } });
        const rounds = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            store.claim({ owner: `w${i}`, types: [], limit: 3, leaseMs: LEASE_MS }),
          ),
        );
        const claimed = rounds.flat();
        const ids = claimed.map((c) => c.job.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids).toHaveLength(12);
        for (const c of claimed) {
          expect(c.token).toBe(1);
          expect(await eventTypes(c.job.id)).toEqual(['job.started']);
        }
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });
    });

    describe('heartbeat', () => {
      it('extends the lease to now + leaseMs, so the job is not reclaimed at the old expiry', async () => {
        await enqueue();
        const claim = await claimOne('w1', [], 1_000);
        clock.tick(600);
        expect(await store.heartbeat(leaseOf(claim), 1_000)).toEqual({ ok: true, cancelRequested: false });
        const job = await mustGet(claim.job.id);
        expect(job.leaseExpiresAt).toBe(start + 1_600);
        expect(job.leaseToken).toBe(1);
        expect(job.leaseOwner).toBe('w1');
        expect(job.status).toBe('in_progress');
        clock.tick(600); // past the first expiry, before the extended one
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 1_000 })).toEqual([]);
        expect(await eventTypes(claim.job.id)).toEqual(['job.started']);
      });

      it('returns ok false for a stale token and changes nothing', async () => {
        const job = await enqueue();
        const first = await claimOne('w1', [], 1_000);
        expect((await store.heartbeat({ id: job.id, token: 2 }, 5_000)).ok).toBe(false);
        expect((await store.heartbeat({ id: 'job_missing', token: 1 }, 5_000)).ok).toBe(false);
        clock.tick(1_001);
        const second = await claimOne('w2', [], 1_000);
        const before = await mustGet(job.id);
        expect((await store.heartbeat(leaseOf(first), 5_000)).ok).toBe(false);
        expect(await store.get(job.id)).toEqual(before);
        expect(await store.heartbeat(leaseOf(second), 5_000)).toEqual({ ok: true, cancelRequested: false });
      });
    });

    describe('fencing', () => {
      it('a stale token (lease expired and claimed again) cannot complete, fail, append events, cancel or release, and changes nothing', async () => {
        const job = await enqueue();
        const stale = leaseOf(await claimOne('w1', [], 1_000));
        clock.tick(1_001);
        const fresh = await claimOne('w2', [], 1_000);
        expect(fresh.token).toBe(2);
        const before = await mustGet(job.id);
        const eventsBefore = await store.events(job.id);
        clock.tick(10);

        expect(await store.appendRunEvent(stale, 'job.progress', { step: 'x' })).toBeUndefined();
        expect(await store.appendRunEvent(stale, 'job.partial', { text: 'x' })).toBeUndefined();
        expect(await store.complete(stale, { done: true })).toBeUndefined();
        expect(await store.fail(stale, TRANSIENT, clock.now() + 1_000)).toBeUndefined();
        expect(await store.fail(stale, PERMANENT)).toBeUndefined();
        expect(await store.finishCanceled(stale)).toBeUndefined();
        expect(await store.release(stale)).toBe(false);
        expect((await store.heartbeat(stale, 60_000)).ok).toBe(false);

        expect(await store.get(job.id)).toEqual(before);
        expect(await store.events(job.id)).toEqual(eventsBefore);
        // The run that replaced it still holds the lease.
        expect(await store.complete(leaseOf(fresh), 'ok')).toEqual(
          event(job, 3, 'job.completed', clock.now(), { result: 'ok' }),
        );
      });

      it('a token of a job that is no longer in_progress changes nothing', async () => {
        const job = await enqueue();
        const lease = leaseOf(await claimOne());
        await store.complete(lease, 1);
        const before = await mustGet(job.id);
        const eventsBefore = await store.events(job.id);
        clock.tick(10);
        expect(await store.complete(lease, 2)).toBeUndefined();
        expect(await store.fail(lease, PERMANENT)).toBeUndefined();
        expect(await store.fail(lease, TRANSIENT, clock.now())).toBeUndefined();
        expect(await store.finishCanceled(lease)).toBeUndefined();
        expect(await store.appendRunEvent(lease, 'job.progress', { pct: 1 })).toBeUndefined();
        expect(await store.release(lease)).toBe(false);
        expect((await store.heartbeat(lease, 1_000)).ok).toBe(false);
        expect(await store.get(job.id)).toEqual(before);
        expect(await store.events(job.id)).toEqual(eventsBefore);
      });
    });

    describe('reclaim of an expired lease', () => {
      it('is not reclaimed before the lease expires', async () => {
        await enqueue();
        await claimOne('w1', [], 1_000);
        clock.tick(999);
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 1_000 })).toEqual([]);
      });

      it('counts an attempt, increments the token and writes job.started', async () => {
        const job = await enqueue({ maxAttempts: 3 });
        await claimOne('w1', [], 1_000);
        clock.tick(1_001);
        const claim = await claimOne('w2', [], 2_000);
        const expected: JobRecord = {
          ...job,
          status: 'in_progress',
          attempts: 2,
          leaseOwner: 'w2',
          leaseToken: 2,
          leaseExpiresAt: start + 1_001 + 2_000,
          updatedAt: start + 1_001,
        };
        expect(claim).toEqual({ job: expected, token: 2 });
        expect(await store.get(job.id)).toEqual(expected);
        expect(await store.events(job.id)).toEqual([
          event(job, 1, 'job.started', start, { attempt: 1 }),
          event(job, 2, 'job.started', start + 1_001, { attempt: 2 }),
        ]);
      });

      it('a reclaimable job takes its place in claim order among pending ones (priority, then runAt, then id)', async () => {
        const low = await enqueue({ priority: 0 });
        const high = await enqueue({ priority: 5 });
        await claimOne('w1', [], 1_000); // high: leased, then lost
        clock.tick(1_001);
        const pendingHigh = await enqueue({ priority: 5 });
        const pendingLow = await enqueue({ priority: 0, runAt: start });
        const first = await store.claim({ owner: 'w2', types: [], limit: 3, leaseMs: 1_000 });
        expect(first.map((c) => c.job.id)).toEqual([high.id, pendingHigh.id, low.id]);
        expect(first.map((c) => [c.job.attempts, c.token])).toEqual([
          [2, 2],
          [1, 1],
          [1, 1],
        ]);
        const rest = await store.claim({ owner: 'w2', types: [], limit: 3, leaseMs: 1_000 });
        expect(rest.map((c) => c.job.id)).toEqual([pendingLow.id]);
      });

      it('with no attempts left: failed with error lease_expired and job.failed, not returned', async () => {
        const job = await enqueue({ maxAttempts: 1 });
        await claimOne('w1', [], 1_000);
        clock.tick(1_001);
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 1_000 })).toEqual([]);
        const failed = await mustGet(job.id);
        expect(failed).toMatchObject({
          status: 'failed',
          attempts: 1,
          finishedAt: start + 1_001,
          updatedAt: start + 1_001,
          error: { code: 'lease_expired', message: expect.any(String) },
        });
        expect(await store.events(job.id)).toEqual([
          event(job, 1, 'job.started', start, { attempt: 1 }),
          event(job, 2, 'job.failed', start + 1_001, { error: failed.error, attempts: 1 }),
        ]);
      });

      it('after a cancel request: canceled and job.canceled, not returned', async () => {
        const job = await enqueue({ maxAttempts: 3 });
        await claimOne('w1', [], 1_000);
        clock.tick(10);
        await store.cancel(job.id);
        clock.tick(991);
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 1_000 })).toEqual([]);
        expect(await mustGet(job.id)).toMatchObject({
          status: 'canceled',
          attempts: 1,
          finishedAt: start + 1_001,
          updatedAt: start + 1_001,
        });
        const events = await store.events(job.id);
        expect(events.map((e) => [e.seq, e.type, e.timestamp])).toEqual([
          [1, 'job.started', start],
          [2, 'job.canceled', start + 1_001],
        ]);
      });
    });

    describe('claim with exclude (the runs the caller holds)', () => {
      it('an excluded expired lease is neither reclaimed nor touched; another claimer still reclaims it', async () => {
        const held = await enqueue({ type: 'a' });
        const lost = await enqueue({ type: 'a' });
        await claimOne('w1', ['a'], 1_000);
        await claimOne('w9', ['a'], 1_000);
        const fresh = await enqueue({ type: 'a' });
        clock.tick(1_001);
        const before = await mustGet(held.id);
        const claims = await store.claim({
          owner: 'w1',
          types: ['a'],
          limit: 10,
          leaseMs: 1_000,
          exclude: [held.id],
        });
        expect(claims.map((c) => [c.job.id, c.job.attempts, c.token])).toEqual([
          [lost.id, 2, 2],
          [fresh.id, 1, 1],
        ]);
        expect(await mustGet(held.id)).toEqual(before);
        expect(await eventTypes(held.id)).toEqual(['job.started']);
        // The held run may still renew its lapsed lease: its token is current.
        expect(await store.heartbeat({ id: held.id, token: 1 }, 1_000)).toEqual({
          ok: true,
          cancelRequested: false,
        });
        clock.tick(1_001);
        const reclaim = await claimOne('w2', ['a']);
        expect(reclaim.job).toMatchObject({ id: held.id, attempts: 2, leaseOwner: 'w2', leaseToken: 2 });
      });

      it('an excluded expired lease with a cancel request or no attempts left is not ended under its run', async () => {
        const canceled = await enqueue({ maxAttempts: 3 });
        const exhausted = await enqueue({ maxAttempts: 1 });
        const first = await claimOne('w1', [], 1_000);
        const second = await claimOne('w1', [], 1_000);
        await store.cancel(canceled.id);
        clock.tick(1_001);
        const exclude = [canceled.id, exhausted.id];
        expect(await store.claim({ owner: 'w1', types: [], limit: 10, leaseMs: 1_000, exclude })).toEqual([]);
        expect(await mustGet(canceled.id)).toMatchObject({
          status: 'in_progress',
          attempts: 1,
          finishedAt: null,
        });
        expect(await mustGet(exhausted.id)).toMatchObject({
          status: 'in_progress',
          attempts: 1,
          finishedAt: null,
        });
        // Their runs end them.
        await store.finishCanceled(leaseOf(first));
        await store.complete(leaseOf(second), 'done');
        expect(await eventTypes(canceled.id)).toEqual(['job.started', 'job.canceled']);
        expect(await mustGet(exhausted.id)).toMatchObject({ status: 'completed', result: 'done' });
      });

      it('an empty exclude changes nothing; a pending job is never excluded', async () => {
        const job = await enqueue();
        const claims = await store.claim({
          owner: 'w1',
          types: [],
          limit: 1,
          leaseMs: 1_000,
          exclude: [job.id],
        });
        expect(claims.map((c) => c.job.id)).toEqual([job.id]);
        clock.tick(1_001);
        const again = await store.claim({ owner: 'w2', types: [], limit: 1, leaseMs: 1_000, exclude: [] });
        expect(again.map((c) => [c.job.id, c.token])).toEqual([[job.id, 2]]);
      });
    });

    describe('complete', () => {
      it('writes job.completed { result } and stores the result', async () => {
        const job = await enqueue();
        const claim = await claimOne();
        clock.tick(300);
        const result = { gifts: ['book', 'tea'], total: 2 };
        const written = await store.complete(leaseOf(claim), result);
        expect(written).toEqual(event(job, 2, 'job.completed', start + 300, { result }));
        expect(await mustGet(job.id)).toMatchObject({
          status: 'completed',
          result,
          error: null,
          attempts: 1,
          leaseToken: 1,
          finishedAt: start + 300,
          updatedAt: start + 300,
        });
        expect(await eventTypes(job.id)).toEqual(['job.started', 'job.completed']);
      });

      it('is terminal: nothing changes the job afterwards', async () => {
        const job = await enqueue();
        const lease = leaseOf(await claimOne('w1', [], 1_000));
        await store.complete(lease, 'done');
        const before = await mustGet(job.id);
        clock.tick(5_000);
        expect(await store.cancel(job.id)).toEqual(before);
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 1_000 })).toEqual([]);
        expect(await store.retryFailed(job.id)).toEqual({ job: before, retried: false });
        expect(await store.get(job.id)).toEqual(before);
        expect(await eventTypes(job.id)).toEqual(['job.started', 'job.completed']);
      });
    });

    describe('fail', () => {
      it('with retryAt and attempts left: pending at retryAt, error kept, job.retrying { error, nextAttempt, runAt }', async () => {
        const job = await enqueue({ maxAttempts: 3 });
        const claim = await claimOne();
        clock.tick(100);
        const retryAt = start + 100 + 2_000;
        const written = await store.fail(leaseOf(claim), TRANSIENT, retryAt);
        expect(written).toEqual(
          event(job, 2, 'job.retrying', start + 100, { error: TRANSIENT, nextAttempt: 2, runAt: retryAt }),
        );
        expect(await mustGet(job.id)).toMatchObject({
          status: 'pending',
          runAt: retryAt,
          error: TRANSIENT,
          attempts: 1,
          leaseToken: 1,
          result: null,
          finishedAt: null,
          updatedAt: start + 100,
        });
        // Not due before retryAt; the next claim is attempt 2 with a new token.
        clock.tick(1_999);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
        clock.tick(1);
        const next = await claimOne();
        expect(next.token).toBe(2);
        expect(next.job).toMatchObject({
          status: 'in_progress',
          attempts: 2,
          leaseToken: 2,
          error: TRANSIENT,
        });
        expect((await store.events(job.id)).at(-1)).toEqual(
          event(job, 3, 'job.started', retryAt, { attempt: 2 }),
        );
      });

      it('keeps every field of the error, the wait it carried (retryAt) included, in the job and its events', async () => {
        const full: JobError = {
          code: 'circuit_open',
          message: 'The gift service is temporarily unavailable; try again shortly.',
          kind: 'transient',
          userFacing: true,
          dependencyCode: 'gift_service_unavailable',
          outcome: 'failed',
          retryAt: start + 20_000,
        };
        const job = await enqueue({ maxAttempts: 2 });
        const retrying = await store.fail(leaseOf(await claimOne()), full, start + 20_000);
        expect(retrying?.payload).toEqual({ error: full, nextAttempt: 2, runAt: start + 20_000 });
        expect((await mustGet(job.id)).error).toEqual(full);
        clock.tick(20_000);
        const last = { ...full, outcome: 'unknown' as const, retryAt: start + 50_000 };
        const failed = await store.fail(leaseOf(await claimOne()), last);
        expect(failed?.payload).toEqual({ error: last, attempts: 2 });
        expect((await mustGet(job.id)).error).toEqual(last);
        expect((await store.events(job.id)).map((e) => e.payload)).toEqual([
          { attempt: 1 },
          { error: full, nextAttempt: 2, runAt: start + 20_000 },
          { attempt: 2 },
          { error: last, attempts: 2 },
        ]);
        // Only the error's own fields are stored: not an Error's extras, not unknown keys.
        const job2 = await enqueue({ maxAttempts: 1 });
        const extra = Object.assign(new Error('ignored'), { code: 'x', message: 'kept', kind: 'permanent' });
        await store.fail(leaseOf(await claimOne()), extra as unknown as JobError);
        expect((await mustGet(job2.id)).error).toEqual({ code: 'x', message: 'kept', kind: 'permanent' });
      });

      it('without retryAt: failed (dead letter) with job.failed { error, attempts }', async () => {
        const job = await enqueue({ maxAttempts: 3 });
        const claim = await claimOne();
        clock.tick(100);
        const written = await store.fail(leaseOf(claim), PERMANENT);
        expect(written).toEqual(event(job, 2, 'job.failed', start + 100, { error: PERMANENT, attempts: 1 }));
        expect(await mustGet(job.id)).toMatchObject({
          status: 'failed',
          error: PERMANENT,
          attempts: 1,
          result: null,
          finishedAt: start + 100,
          updatedAt: start + 100,
        });
        clock.tick(60_000);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });

      it('with retryAt but no attempts left: failed with job.failed', async () => {
        const job = await enqueue({ maxAttempts: 2 });
        await store.fail(leaseOf(await claimOne()), TRANSIENT, start + 10);
        clock.tick(10);
        const second = await claimOne();
        expect(second.job.attempts).toBe(2);
        clock.tick(5);
        const written = await store.fail(leaseOf(second), TRANSIENT, start + 1_000);
        expect(written).toEqual(event(job, 4, 'job.failed', start + 15, { error: TRANSIENT, attempts: 2 }));
        expect(await mustGet(job.id)).toMatchObject({
          status: 'failed',
          attempts: 2,
          finishedAt: start + 15,
        });
        expect(await eventTypes(job.id)).toEqual([
          'job.started',
          'job.retrying',
          'job.started',
          'job.failed',
        ]);
      });
    });

    describe('finishCanceled', () => {
      it('ends the run as canceled with job.canceled { attempts }', async () => {
        const job = await enqueue();
        const claim = await claimOne();
        clock.tick(50);
        await store.cancel(job.id);
        clock.tick(50);
        const written = await store.finishCanceled(leaseOf(claim));
        expect(written).toEqual(event(job, 2, 'job.canceled', start + 100, { attempts: 1 }));
        expect(await mustGet(job.id)).toMatchObject({
          status: 'canceled',
          attempts: 1,
          cancelRequestedAt: start + 50,
          finishedAt: start + 100,
          updatedAt: start + 100,
        });
      });
    });

    describe('release', () => {
      it('gives the lease back: pending, runAt now, attempts - 1, no event', async () => {
        const job = await enqueue({ runAt: start });
        const claim = await claimOne();
        clock.tick(700);
        expect(await store.release(leaseOf(claim))).toBe(true);
        expect(await mustGet(job.id)).toMatchObject({
          status: 'pending',
          runAt: start + 700,
          attempts: 0,
          leaseToken: 1,
          finishedAt: null,
          updatedAt: start + 700,
        });
        expect(await eventTypes(job.id)).toEqual(['job.started']);
        const next = await claimOne('w2');
        expect(next.token).toBe(2);
        expect(next.job.attempts).toBe(1);
        expect((await store.events(job.id)).at(-1)).toEqual(
          event(job, 2, 'job.started', start + 700, { attempt: 1 }),
        );
      });
    });

    describe('a cancel request during a run', () => {
      it('fail with retryAt ends the job canceled, not pending: the cancel is kept', async () => {
        const job = await enqueue({ runAt: start, maxAttempts: 3 });
        const claim = await claimOne();
        await store.cancel(job.id);
        clock.tick(100);
        const error = { code: 'upstream_unavailable', message: 'down', kind: 'transient' } as const;
        const written = await store.fail(leaseOf(claim), error, start + 5000);
        expect(written).toMatchObject({ type: 'job.canceled', seq: 2, payload: { attempts: 1 } });
        expect(await mustGet(job.id)).toMatchObject({
          status: 'canceled',
          attempts: 1,
          finishedAt: start + 100,
          leaseOwner: null,
        });
        expect(await eventTypes(job.id)).toEqual(['job.started', 'job.canceled']);
      });

      it('release ends the job canceled (the run not counted), with job.canceled', async () => {
        const job = await enqueue({ runAt: start });
        const claim = await claimOne();
        await store.cancel(job.id);
        clock.tick(100);
        expect(await store.release(leaseOf(claim))).toBe(true);
        expect(await mustGet(job.id)).toMatchObject({
          status: 'canceled',
          attempts: 0,
          finishedAt: start + 100,
          leaseOwner: null,
        });
        expect(await eventTypes(job.id)).toEqual(['job.started', 'job.canceled']);
        expect((await store.events(job.id)).at(-1)?.payload).toEqual({ attempts: 0 });
        expect(await store.claim({ owner: 'w2', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });
    });

    describe('cancel', () => {
      it('a pending job is canceled at once with job.canceled', async () => {
        const job = await enqueue();
        clock.tick(40);
        const canceled = await store.cancel(job.id);
        expect(canceled).toMatchObject({
          id: job.id,
          status: 'canceled',
          attempts: 0,
          finishedAt: start + 40,
          updatedAt: start + 40,
        });
        expect(await store.get(job.id)).toEqual(canceled);
        const events = await store.events(job.id);
        expect(events.map((e) => [e.eventId, e.seq, e.type, e.timestamp])).toEqual([
          [`${job.id}:1`, 1, 'job.canceled', start + 40],
        ]);
        expect(await store.claim({ owner: 'w', types: [], limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      });

      it('a running job gets cancelRequestedAt and its heartbeat reports cancelRequested', async () => {
        const job = await enqueue();
        const claim = await claimOne();
        clock.tick(40);
        const requested = await store.cancel(job.id);
        expect(requested).toEqual({ ...claim.job, cancelRequestedAt: start + 40, updatedAt: start + 40 });
        expect(await store.get(job.id)).toEqual(requested);
        expect(await eventTypes(job.id)).toEqual(['job.started']);
        expect(await store.heartbeat(leaseOf(claim), LEASE_MS)).toEqual({ ok: true, cancelRequested: true });
      });

      it('a terminal job is returned unchanged', async () => {
        const done = await enqueue({ type: 'a' });
        await store.complete(leaseOf(await claimOne('w', ['a'])), 'r');
        const dead = await enqueue({ type: 'b' });
        await store.fail(leaseOf(await claimOne('w', ['b'])), PERMANENT);
        const gone = await enqueue({ type: 'c' });
        await store.cancel(gone.id);
        clock.tick(1_000);
        for (const id of [done.id, dead.id, gone.id]) {
          const before = await mustGet(id);
          const eventsBefore = await store.events(id);
          expect(await store.cancel(id)).toEqual(before);
          expect(await store.get(id)).toEqual(before);
          expect(await store.events(id)).toEqual(eventsBefore);
        }
      });

      it('a missing job is undefined', async () => {
        expect(await store.cancel('job_00000000-0000-7000-8000-000000000000')).toBeUndefined();
      });
    });

    describe('retryFailed', () => {
      it('puts a failed job back to pending with attempts 0 and runAt now, retried: true, and notifies job_available', async () => {
        const job = await enqueue({ maxAttempts: 1 });
        await store.fail(leaseOf(await claimOne()), PERMANENT);
        clock.tick(60_000);
        const received: StoreNotification[] = [];
        store.subscribe((n) => received.push(n));
        const answer = await store.retryFailed(job.id);
        expect(answer).toEqual({ job: expect.any(Object), retried: true });
        expect(answer!.job).toMatchObject({
          id: job.id,
          status: 'pending',
          attempts: 0,
          runAt: start + 60_000,
          error: PERMANENT,
          finishedAt: null,
          updatedAt: start + 60_000,
        });
        expect(await store.get(job.id)).toEqual(answer!.job);
        await expectNotified(received, { kind: 'job_available', type: 'email', runAt: start + 60_000 });
        const claim = await claimOne();
        expect(claim.job.attempts).toBe(1);
        expect(claim.token).toBe(2);
        expect((await store.events(job.id)).at(-1)).toEqual(
          event(job, 3, 'job.started', start + 60_000, { attempt: 1 }),
        );
      });

      it('a job that is not failed: retried: false with the job unchanged; a missing job is undefined', async () => {
        const pending = await enqueue({ type: 'a' });
        const running = await enqueue({ type: 'b' });
        await claimOne('w', ['b']);
        const done = await enqueue({ type: 'c' });
        await store.complete(leaseOf(await claimOne('w', ['c'])), 1);
        const gone = await enqueue({ type: 'd' });
        await store.cancel(gone.id);
        clock.tick(1_000);
        for (const id of [pending.id, running.id, done.id, gone.id]) {
          const before = await mustGet(id);
          expect(await store.retryFailed(id)).toEqual({ job: before, retried: false });
          expect(await store.get(id)).toEqual(before);
        }
        expect(await store.retryFailed('job_00000000-0000-7000-8000-000000000000')).toBeUndefined();
      });

      it('a second retry of the same job is retried: false with the job as the first left it', async () => {
        const job = await enqueue({ maxAttempts: 1 });
        await store.fail(leaseOf(await claimOne()), PERMANENT);
        const first = await store.retryFailed(job.id);
        expect(first?.retried).toBe(true);
        clock.tick(1_000);
        expect(await store.retryFailed(job.id)).toEqual({ job: first!.job, retried: false });
      });
    });

    describe('events', () => {
      it('appendRunEvent writes job.progress and job.partial for the lease holder and returns them', async () => {
        const job = await enqueue();
        const lease = leaseOf(await claimOne());
        clock.tick(10);
        expect(await store.appendRunEvent(lease, 'job.progress', { step: 'search', pct: 10 })).toEqual(
          event(job, 2, 'job.progress', start + 10, { step: 'search', pct: 10 }),
        );
        clock.tick(10);
        expect(await store.appendRunEvent(lease, 'job.partial', { text: 'Here are' })).toEqual(
          event(job, 3, 'job.partial', start + 20, { text: 'Here are' }),
        );
        expect(await store.events(job.id)).toEqual([
          event(job, 1, 'job.started', start, { attempt: 1 }),
          event(job, 2, 'job.progress', start + 10, { step: 'search', pct: 10 }),
          event(job, 3, 'job.partial', start + 20, { text: 'Here are' }),
        ]);
        expect((await mustGet(job.id)).status).toBe('in_progress');
      });

      it('events(jobId, afterSeq) returns exactly the later events in order, seq contiguous from 1', async () => {
        const job = await enqueue({ maxAttempts: 3 });
        const first = leaseOf(await claimOne());
        await store.appendRunEvent(first, 'job.progress', { pct: 50 });
        await store.fail(first, TRANSIENT, start);
        const second = leaseOf(await claimOne());
        await store.appendRunEvent(second, 'job.partial', { text: 'a' });
        await store.complete(second, 'r');
        const all = await store.events(job.id);
        expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(all.map((e) => e.type)).toEqual([
          'job.started',
          'job.progress',
          'job.retrying',
          'job.started',
          'job.partial',
          'job.completed',
        ]);
        expect(all.map((e) => e.eventId)).toEqual([1, 2, 3, 4, 5, 6].map((seq) => `${job.id}:${seq}`));
        expect(all.every((e) => e.jobId === job.id)).toBe(true);
        expect(await store.events(job.id, 0)).toEqual(all);
        expect(await store.events(job.id, 2)).toEqual(all.slice(2));
        expect(await store.events(job.id, 5)).toEqual(all.slice(5));
        expect(await store.events(job.id, 6)).toEqual([]);
        expect(await store.events(job.id, 1, 2)).toEqual(all.slice(1, 3));
        expect(await store.events(job.id, 1, 2.9)).toEqual(all.slice(1, 3));
        expect(await store.events(job.id, 0, 0)).toEqual([]);
        expect(await store.events(job.id, 0, -3)).toEqual([]);
        expect(await store.events(job.id, 0, Infinity)).toEqual(all);
        expect(await store.events(job.id, 0, Number.NaN)).toEqual(all);
      });

      it('events of an unknown job are empty', async () => {
        expect(await store.events('job_00000000-0000-7000-8000-000000000000')).toEqual([]);
      });

      it('events are kept per job: another job has its own seq from 1', async () => {
        const a = await enqueue({ type: 'a' });
        const b = await enqueue({ type: 'b' });
        await claimOne('w', ['a']);
        await claimOne('w', ['b']);
        expect((await store.events(a.id)).map((e) => [e.jobId, e.seq])).toEqual([[a.id, 1]]);
        expect((await store.events(b.id)).map((e) => [e.jobId, e.seq])).toEqual([[b.id, 1]]);
      });
    });

    describe('terminal events', () => {
      it('every path ends in exactly one terminal event, the last one', async () => {
        const ids: Record<string, string> = {};
        const run = async (path: string, maxAttempts = 3): Promise<JobRecord> => {
          const job = await enqueue({ type: path, maxAttempts });
          ids[path] = job.id;
          return job;
        };
        const claimPath = async (path: string, leaseMs = LEASE_MS): Promise<LeaseRef> =>
          leaseOf(await claimOne('w', [path], leaseMs));

        await run('complete');
        await store.complete(await claimPath('complete'), 1);

        await run('fail');
        await store.fail(await claimPath('fail'), PERMANENT);

        await run('retry-then-complete');
        await store.fail(await claimPath('retry-then-complete'), TRANSIENT, clock.now());
        await store.complete(await claimPath('retry-then-complete'), 2);

        await run('retry-exhausted', 1);
        await store.fail(await claimPath('retry-exhausted'), TRANSIENT, clock.now());

        const running = await run('finish-canceled');
        const runningLease = await claimPath('finish-canceled');
        await store.cancel(running.id);
        await store.finishCanceled(runningLease);

        const pending = await run('cancel-pending');
        await store.cancel(pending.id);

        await run('release-then-complete');
        await store.release(await claimPath('release-then-complete'));
        await store.complete(await claimPath('release-then-complete'), 3);

        await run('lease-expired', 1);
        await claimPath('lease-expired', 1_000);
        const canceledLater = await run('lease-canceled');
        await claimPath('lease-canceled', 1_000);
        await store.cancel(canceledLater.id);
        clock.tick(1_001);
        expect(
          await store.claim({
            owner: 'w',
            types: ['lease-expired', 'lease-canceled'],
            limit: 10,
            leaseMs: 1_000,
          }),
        ).toEqual([]);

        // Nothing afterwards adds another.
        clock.tick(100_000);
        for (const id of Object.values(ids)) {
          await store.cancel(id);
          await store.complete({ id, token: 1 }, 'late');
          await store.complete({ id, token: 2 }, 'late');
          await store.fail({ id, token: 1 }, PERMANENT);
          await store.finishCanceled({ id, token: 2 });
        }
        await store.claim({ owner: 'w', types: [], limit: 100, leaseMs: LEASE_MS });

        const summary: Record<string, [JobStatus, JobEventType[]]> = {};
        for (const [path, id] of Object.entries(ids)) {
          const job = await mustGet(id);
          const events = await store.events(id);
          expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
          expect(TERMINAL_STATUSES.has(job.status)).toBe(true);
          summary[path] = [job.status, events.filter((e) => TERMINAL_EVENTS.has(e.type)).map((e) => e.type)];
          expect(TERMINAL_EVENTS.has(events.at(-1)!.type)).toBe(true);
        }
        expect(summary).toEqual({
          complete: ['completed', ['job.completed']],
          fail: ['failed', ['job.failed']],
          'retry-then-complete': ['completed', ['job.completed']],
          'retry-exhausted': ['failed', ['job.failed']],
          'finish-canceled': ['canceled', ['job.canceled']],
          'cancel-pending': ['canceled', ['job.canceled']],
          'release-then-complete': ['completed', ['job.completed']],
          'lease-expired': ['failed', ['job.failed']],
          'lease-canceled': ['canceled', ['job.canceled']],
        });
      });
    });

    describe('lease fields', () => {
      it('a job that is not in_progress has no lease owner or expiry (the token stays)', async () => {
        const released = await enqueue({ type: 'released' });
        await store.release(leaseOf(await claimOne('w', ['released'])));
        const retrying = await enqueue({ type: 'retrying' });
        await store.fail(leaseOf(await claimOne('w', ['retrying'])), TRANSIENT, start + 1_000_000);
        const done = await enqueue({ type: 'done' });
        await store.complete(leaseOf(await claimOne('w', ['done'])), 1);
        const dead = await enqueue({ type: 'dead' });
        await store.fail(leaseOf(await claimOne('w', ['dead'])), PERMANENT);
        const canceled = await enqueue({ type: 'canceled' });
        const canceledLease = leaseOf(await claimOne('w', ['canceled']));
        await store.cancel(canceled.id);
        await store.finishCanceled(canceledLease);
        for (const job of [released, retrying, done, dead, canceled]) {
          expect(await mustGet(job.id)).toMatchObject({
            leaseOwner: null,
            leaseExpiresAt: null,
            leaseToken: 1,
          });
        }
      });
    });

    describe('stats', () => {
      it('an empty store counts zero in every status and has no pending age', async () => {
        expect(await store.stats()).toEqual({
          counts: { pending: 0, in_progress: 0, input_required: 0, completed: 0, failed: 0, canceled: 0 },
          oldestPendingAgeMs: null,
        });
      });

      it('counts jobs by status; the pending age is that of the oldest due pending job only', async () => {
        await enqueue({ type: 'later', runAt: start + 100_000 }); // pending, not due: no age
        clock.tick(1_000);
        await enqueue({ type: 'due' }); // pending and due since start + 1000
        await enqueue({ type: 'run' });
        await claimOne('w', ['run']);
        await enqueue({ type: 'done' });
        await store.complete(leaseOf(await claimOne('w', ['done'])), 1);
        for (let i = 0; i < 2; i++) {
          await enqueue({ type: 'dead' });
          await store.fail(leaseOf(await claimOne('w', ['dead'])), PERMANENT);
        }
        const gone = await enqueue({ type: 'gone' });
        await store.cancel(gone.id);
        clock.tick(500);
        expect(await store.stats()).toEqual({
          counts: { pending: 2, in_progress: 1, input_required: 0, completed: 1, failed: 2, canceled: 1 },
          oldestPendingAgeMs: 500,
        });
      });

      it('oldestPendingAgeMs is null when no pending job is due', async () => {
        await enqueue({ runAt: start + 10_000 });
        clock.tick(9_999);
        expect((await store.stats()).oldestPendingAgeMs).toBeNull();
        expect((await store.stats()).counts.pending).toBe(1);
      });
    });

    describe('nextRunAt', () => {
      it('is the earliest runAt among pending jobs of the given types (all when empty), else null', async () => {
        expect(await store.nextRunAt([])).toBeNull();
        await enqueue({ type: 'a', runAt: start + 5_000 });
        await enqueue({ type: 'a', runAt: start + 3_000 });
        await enqueue({ type: 'b', runAt: start + 1_000 });
        expect(await store.nextRunAt([])).toBe(start + 1_000);
        expect(await store.nextRunAt(['a'])).toBe(start + 3_000);
        expect(await store.nextRunAt(['b', 'a'])).toBe(start + 1_000);
        expect(await store.nextRunAt(['zzz'])).toBeNull();
      });

      it('counts a running job at its lease expiry: a lease expiring before any pending runAt is the answer', async () => {
        await enqueue({ type: 'a', runAt: start + 50_000 });
        const running = await enqueue({ type: 'a', runAt: start });
        const lease = leaseOf(await claimOne('w', ['a'], 20_000));
        expect(await store.nextRunAt(['a'])).toBe(start + 20_000);
        expect(await store.nextRunAt([])).toBe(start + 20_000);
        expect(await store.nextRunAt(['b'])).toBeNull();
        // A heartbeat moves it; an expiry after the earliest runAt leaves the runAt as the answer.
        clock.tick(5_000);
        await store.heartbeat(lease, 20_000);
        expect(await store.nextRunAt(['a'])).toBe(start + 25_000);
        await store.heartbeat(lease, 60_000);
        expect(await store.nextRunAt(['a'])).toBe(start + 50_000);
        // At the answer a claim finds the job: the lost worker's run is reclaimed.
        await store.heartbeat(lease, 1_000);
        expect(await store.nextRunAt(['a'])).toBe(start + 6_000);
        clock.tick(1_000);
        const reclaim = await claimOne('w2', ['a']);
        expect(reclaim.job).toMatchObject({ id: running.id, attempts: 2, leaseOwner: 'w2' });
        expect(await store.nextRunAt(['a'])).toBe(start + 6_000 + LEASE_MS);
      });

      it('leaves out the leases of exclude (the runs the caller holds), as a claim with it would', async () => {
        const held = await enqueue({ type: 'a' });
        const other = await enqueue({ type: 'a' });
        await claimOne('w1', ['a'], 1_000);
        await claimOne('w1', ['a'], 5_000);
        await enqueue({ type: 'a', runAt: start + 9_000 });
        expect(await store.nextRunAt(['a'])).toBe(start + 1_000);
        expect(await store.nextRunAt(['a'], [held.id])).toBe(start + 5_000);
        expect(await store.nextRunAt([], [held.id])).toBe(start + 5_000);
        expect(await store.nextRunAt(['a'], [held.id, other.id])).toBe(start + 9_000);
        expect(await store.nextRunAt([], [held.id, other.id])).toBe(start + 9_000);
        expect(await store.nextRunAt(['a'], [])).toBe(start + 1_000);
      });

      it('ignores finished jobs and leases that ended', async () => {
        const done = await enqueue({ type: 'a' });
        await store.complete(leaseOf(await claimOne('w', ['a'])), 1);
        const failed = await enqueue({ type: 'a', maxAttempts: 1 });
        await store.fail(leaseOf(await claimOne('w', ['a'])), PERMANENT);
        const canceled = await enqueue({ type: 'a' });
        await claimOne('w', ['a']);
        await store.cancel(canceled.id);
        expect(await store.nextRunAt(['a'])).toBe(start + LEASE_MS); // a cancel request keeps the lease
        await store.finishCanceled(leaseOf({ job: await mustGet(canceled.id), token: 1 }));
        expect(await store.nextRunAt(['a'])).toBeNull();
        const released = await enqueue({ type: 'a', runAt: start });
        await store.release(leaseOf(await claimOne('w', ['a'])));
        expect(await store.nextRunAt(['a'])).toBe(start); // pending again, due now
        for (const job of [done, failed, canceled]) {
          expect(TERMINAL_STATUSES.has((await mustGet(job.id)).status)).toBe(true);
        }
        expect((await mustGet(released.id)).status).toBe('pending');
      });
    });

    describe('subscribe', () => {
      it('receives job_available on enqueue', async () => {
        const received: StoreNotification[] = [];
        store.subscribe((n) => received.push(n));
        await enqueue({ type: 'gift.suggest', runAt: start + 2_500 });
        await expectNotified(received, { kind: 'job_available', type: 'gift.suggest', runAt: start + 2_500 });
      });

      it('receives job_event for every event written of a watched job', async () => {
        const received: StoreNotification[] = [];
        const job = await enqueue();
        store.subscribe((n) => received.push(n));
        await store.watchEvents(job.id);
        const lease = leaseOf(await claimOne());
        await expectNotified(received, {
          kind: 'job_event',
          jobId: job.id,
          seq: 1,
          eventType: 'job.started',
        });
        await store.appendRunEvent(lease, 'job.progress', { pct: 10 });
        await expectNotified(received, {
          kind: 'job_event',
          jobId: job.id,
          seq: 2,
          eventType: 'job.progress',
        });
        await store.complete(lease, 'r');
        await expectNotified(received, {
          kind: 'job_event',
          jobId: job.id,
          seq: 3,
          eventType: 'job.completed',
        });
        if (!options.asyncNotifications) {
          expect(received.filter((n) => n.kind === 'job_event')).toEqual([
            { kind: 'job_event', jobId: job.id, seq: 1, eventType: 'job.started' },
            { kind: 'job_event', jobId: job.id, seq: 2, eventType: 'job.progress' },
            { kind: 'job_event', jobId: job.id, seq: 3, eventType: 'job.completed' },
          ]);
        }
      });

      it('pruneWatches keeps the watch of a live job, and rejects a negative age', async () => {
        const job = await enqueue();
        const watch = await store.watchEvents(job.id);
        clock.tick(3_600_000);
        expect(await store.pruneWatches()).toBe(0);
        await watch.unwatch();
        expect(await store.pruneWatches(0)).toBe(0);
        await expect(store.pruneWatches(-1)).rejects.toThrow(
          'pruneWatches: olderThanMs must be a finite number >= 0, got -1',
        );
      });

      it('receives cancel_requested when a running job is canceled', async () => {
        const received: StoreNotification[] = [];
        const job = await enqueue();
        await claimOne();
        store.subscribe((n) => received.push(n));
        await store.cancel(job.id);
        await expectNotified(received, { kind: 'cancel_requested', jobId: job.id });
      });

      it('dispose stops the notifications to that listener only', async () => {
        const disposed: StoreNotification[] = [];
        const kept: StoreNotification[] = [];
        const subscription = store.subscribe((n) => disposed.push(n));
        store.subscribe((n) => kept.push(n));
        subscription.dispose();
        subscription.dispose(); // idempotent
        await enqueue({ type: 'after-dispose', runAt: start });
        await expectNotified(kept, { kind: 'job_available', type: 'after-dispose', runAt: start });
        expect(disposed).toEqual([]);
      });
    });

    describe('close', () => {
      it('is idempotent, and later calls reject', async () => {
        const job = await enqueue();
        await store.close();
        await store.close();
        await expect(store.get(job.id)).rejects.toThrow();
        await expect(store.enqueue(newJob())).rejects.toThrow();
        await expect(store.claim({ owner: 'w', types: [], limit: 1, leaseMs: LEASE_MS })).rejects.toThrow();
        await expect(store.list()).rejects.toThrow();
        await expect(store.stats()).rejects.toThrow();
        await store.close();
      });
    });
  });
}
