import { isDeepStrictEqual } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { pollUntil, type JobStoreContractOptions } from './contract.js';
import type { Claim, JobError, JobRecord, JobStore, LeaseRef, NewJob, StoreNotification } from './jobs.js';

/**
 * The ordering-key rules of the job store contract (`NewJob.orderingKey`, `JobStore.claim`, `nextRunAt`,
 * `StoreNotification`), run against each backend next to the main suite in `contract.ts`.
 */

const LEASE_MS = 30_000;
const TRANSIENT: JobError = { code: 'upstream_unavailable', message: 'down', kind: 'transient' };
const PERMANENT: JobError = { code: 'invalid_input', message: 'bad', kind: 'permanent' };

function leaseOf(claim: Claim): LeaseRef {
  return { id: claim.job.id, token: claim.token };
}

/**
 * Declares the ordering-key suite for one backend.
 * @param open opens an empty store reading time from `clock`; called once per test.
 * @param cleanup runs after each test once the store is closed.
 */
export function orderingKeyContract(
  name: string,
  open: (clock: FakeClock) => Promise<JobStore>,
  cleanup?: () => Promise<void>,
  options: JobStoreContractOptions = {},
): void {
  describe(`JobStore ordering keys: ${name}`, () => {
    let clock: FakeClock;
    let store: JobStore;
    let start: number;

    beforeEach(async () => {
      clock = new FakeClock();
      start = clock.now();
      store = await open(clock);
    });

    afterEach(async () => {
      await (store as JobStore | undefined)?.close();
      store = undefined as unknown as JobStore;
      await cleanup?.();
    });

    async function enqueue(overrides: Partial<NewJob> = {}): Promise<JobRecord> {
      const { job, created } = await store.enqueue({
        type: 'order.event',
        payload: { n: 1 },
        runAt: clock.now(),
        priority: 0,
        maxAttempts: 3,
        ...overrides,
      });
      expect(created).toBe(true);
      return job;
    }

    async function claim(limit: number, types: readonly string[] = []): Promise<Claim[]> {
      return store.claim({ owner: 'w1', types, limit, leaseMs: LEASE_MS });
    }

    async function claimedIds(limit: number, types: readonly string[] = []): Promise<string[]> {
      return (await claim(limit, types)).map((c) => c.job.id);
    }

    async function expectNotified(received: StoreNotification[], expected: StoreNotification): Promise<void> {
      if (options.asyncNotifications) {
        await pollUntil(() => received.some((n) => isDeepStrictEqual(n, expected)));
      }
      expect(received).toContainEqual(expected);
    }

    it('stores the ordering key (null when none) and reads it back', async () => {
      const keyed = await enqueue({ orderingKey: 'order-42' });
      const plain = await enqueue();
      expect(keyed.orderingKey).toBe('order-42');
      expect(plain.orderingKey).toBeNull();
      expect(await store.get(keyed.id)).toEqual(keyed);
      const [claimed] = await claim(1);
      expect(claimed!.job.orderingKey).toBe('order-42');
    });

    it('5 jobs of one key run one at a time in id order, even with room for 4 and concurrent claims', async () => {
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 5; i++) jobs.push(await enqueue({ orderingKey: 'order-1', payload: { i } }));
      const order: string[] = [];
      for (let round = 0; round < 5; round++) {
        // Two claimers at once, each with room for 4: one job of the key between them.
        const [a, b] = await Promise.all([claim(4), claim(4)]);
        const claims = [...a!, ...b!];
        expect(claims).toHaveLength(1);
        order.push(claims[0]!.job.id);
        expect(await claim(4)).toEqual([]);
        await store.complete(leaseOf(claims[0]!), { round });
      }
      expect(order).toEqual(jobs.map((j) => j.id));
      expect(await claim(4)).toEqual([]);
    });

    it('different keys run in parallel; jobs without a key are not held up, claim order otherwise kept', async () => {
      const a1 = await enqueue({ orderingKey: 'a', priority: 1 });
      const b1 = await enqueue({ orderingKey: 'b' });
      const a2 = await enqueue({ orderingKey: 'a', priority: 5 });
      const plain1 = await enqueue();
      const b2 = await enqueue({ orderingKey: 'b' });
      const plain2 = await enqueue({ priority: 3 });
      // a2's priority does not let it pass a1; the rest keep priority, runAt, id order.
      expect(await claimedIds(10)).toEqual([plain2.id, a1.id, b1.id, plain1.id]);
      expect(await claimedIds(10)).toEqual([]);
      const all = await store.list({ status: 'pending' });
      expect(all.map((j) => j.id).sort()).toEqual([a2.id, b2.id].sort());
    });

    it('keys span job types: a job of another type with the key waits its turn', async () => {
      const first = await enqueue({ type: 'payment.created', orderingKey: 'order-7' });
      const second = await enqueue({ type: 'payment.succeeded', orderingKey: 'order-7' });
      expect(await claimedIds(4, ['payment.succeeded'])).toEqual([]);
      const [lease] = await claim(4, ['payment.created']);
      expect(lease!.job.id).toBe(first.id);
      expect(await claimedIds(4, ['payment.succeeded'])).toEqual([]);
      await store.complete(leaseOf(lease!), null);
      expect(await claimedIds(4, ['payment.succeeded'])).toEqual([second.id]);
    });

    it('a predecessor waiting out its retry backoff blocks; nextRunAt is its retry time, not now', async () => {
      const first = await enqueue({ orderingKey: 'k' });
      const second = await enqueue({ orderingKey: 'k' });
      const [run] = await claim(4);
      expect(await store.nextRunAt([])).toBe(start + LEASE_MS); // second is blocked, not due
      await store.fail(leaseOf(run!), TRANSIENT, start + 1_000);
      expect(await claim(4)).toEqual([]);
      expect(await store.nextRunAt([])).toBe(start + 1_000);
      clock.tick(1_000);
      const [retry] = await claim(4);
      expect(retry!.job).toMatchObject({ id: first.id, attempts: 2 });
      expect(await claim(4)).toEqual([]);
      await store.complete(leaseOf(retry!), 'ok');
      expect(await store.nextRunAt([])).toBe(start);
      expect(await claimedIds(4)).toEqual([second.id]);
    });

    it('a dead-lettered (failed) or canceled predecessor does not block its successors', async () => {
      const failing = await enqueue({ orderingKey: 'k', maxAttempts: 1 });
      const canceled = await enqueue({ orderingKey: 'k' });
      const last = await enqueue({ orderingKey: 'k' });
      const [run] = await claim(4);
      expect(run!.job.id).toBe(failing.id);
      await store.fail(leaseOf(run!), PERMANENT);
      expect((await store.get(failing.id))!.status).toBe('failed');
      await store.cancel(canceled.id);
      expect(await claimedIds(4)).toEqual([last.id]);
    });

    it('an expired lease reaped as failed frees its key', async () => {
      const lost = await enqueue({ orderingKey: 'k', maxAttempts: 1 });
      const next = await enqueue({ orderingKey: 'k' });
      await claim(1);
      clock.tick(LEASE_MS);
      // The claim that reaps may already lease the successor (SQLite does; a PostgreSQL claim reads its
      // candidates from the snapshot before the reap, so the next claim does).
      expect([...(await claimedIds(4)), ...(await claimedIds(4))]).toEqual([next.id]);
      expect(await store.get(lost.id)).toMatchObject({ status: 'failed', error: { code: 'lease_expired' } });
    });

    it('while any job of a key runs, an earlier one retried by hand waits for it', async () => {
      const first = await enqueue({ orderingKey: 'k', maxAttempts: 1 });
      const second = await enqueue({ orderingKey: 'k' });
      await store.fail(leaseOf((await claim(1))[0]!), PERMANENT);
      const [run] = await claim(4);
      expect(run!.job.id).toBe(second.id);
      expect((await store.retryFailed(first.id))!.retried).toBe(true);
      expect(await claim(4)).toEqual([]);
      expect(await store.nextRunAt([])).toBe(start + LEASE_MS);
      await store.complete(leaseOf(run!), null);
      expect(await claimedIds(4)).toEqual([first.id]);
    });

    it('the end of a keyed job announces the next pending job of its key (complete, fail, cancel)', async () => {
      const received: StoreNotification[] = [];
      store.subscribe((n) => received.push(n));
      const a = await enqueue({ type: 'first', orderingKey: 'k', maxAttempts: 1 });
      const b = await enqueue({ type: 'second', orderingKey: 'k', runAt: start + 50 });
      const c = await enqueue({ type: 'third', orderingKey: 'k' });
      // The enqueues' own announcements are in before the list is reset, so only the ends' can match below.
      await expectNotified(received, { kind: 'job_available', type: 'second', runAt: start + 50 });
      await expectNotified(received, { kind: 'job_available', type: 'third', runAt: start });
      clock.tick(100);
      const [runA] = await claim(1, ['first']);
      received.length = 0;
      await store.complete(leaseOf(runA!), null);
      await expectNotified(received, { kind: 'job_available', type: 'second', runAt: start + 50 });

      received.length = 0;
      await store.cancel(b.id);
      await expectNotified(received, { kind: 'job_available', type: 'third', runAt: start });

      const d = await enqueue({ type: 'fourth', orderingKey: 'k', runAt: start + 7 });
      await expectNotified(received, { kind: 'job_available', type: 'fourth', runAt: start + 7 });
      const [runC] = await claim(1, ['third']);
      expect(runC!.job.id).toBe(c.id);
      received.length = 0;
      await store.fail(leaseOf(runC!), PERMANENT);
      await expectNotified(received, { kind: 'job_available', type: 'fourth', runAt: start + 7 });
      expect(await claimedIds(4)).toEqual([d.id]);
      expect(a.id < b.id && b.id < c.id && c.id < d.id).toBe(true);
    });
  });
}
