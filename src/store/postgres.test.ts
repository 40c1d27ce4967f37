import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { jobStoreContract, pollUntil } from './contract.js';
import type { Claim, JobStore, NewJob, StoreNotification } from './jobs.js';
import { orderingKeyContract } from './ordering-contract.js';
import { openPostgresStore } from './postgres/index.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';

/**
 * Runs against the database in BREAKWATER_TEST_DATABASE_URL. Every test gets a fresh schema
 * `bw_test_<random>`, dropped after it, so tests never see each other's jobs and leave nothing behind.
 */
describePostgres('contract tests')('PostgreSQL job store', () => {
  const schemas = testSchemas();
  const freshSchema = () => schemas.create();
  const dropSchemas = () => schemas.dropAll();

  jobStoreContract(
    'postgres',
    async (clock) => openPostgresStore({ url, clock, schema: await freshSchema() }),
    dropSchemas,
    { asyncNotifications: true },
  );

  orderingKeyContract(
    'postgres',
    async (clock) => openPostgresStore({ url, clock, schema: await freshSchema() }),
    dropSchemas,
    { asyncNotifications: true },
  );

  describe('two store instances on one schema', () => {
    let clock: FakeClock;
    let schema: string;
    let a: JobStore;
    let b: JobStore;

    function newJob(overrides: Partial<NewJob> = {}): NewJob {
      return {
        type: 'email',
        payload: { to: 'ada@example.com' },
        runAt: clock.now(),
        priority: 0,
        maxAttempts: 3,
        ...overrides,
      };
    }

    beforeEach(async () => {
      clock = new FakeClock();
      schema = await freshSchema();
      a = await openPostgresStore({ url, clock, schema });
      b = await openPostgresStore({ url, clock, schema });
    });

    afterEach(async () => {
      await (a as JobStore | undefined)?.close();
      await (b as JobStore | undefined)?.close();
      await dropSchemas();
    });

    it('50 concurrent enqueues with one idempotency key give one job', async () => {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 === 0 ? a : b).enqueue(newJob({ idempotencyKey: 'order-42', payload: { i } })),
        ),
      );
      const ids = new Set(results.map((r) => r.job.id));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      const created = results.find((r) => r.created)!.job;
      for (const r of results) expect(r.job).toEqual(created);
      expect(await a.list()).toEqual([created]);
      expect(await b.list({ type: 'email' })).toEqual([created]);
    });

    it('concurrent claims from two instances never lease the same job', async () => {
      const total = 60;
      await Promise.all(Array.from({ length: total }, (_, i) => a.enqueue(newJob({ payload: { i } }))));
      const claimed: Claim[] = [];
      // SKIP LOCKED lets a claim come back short while another holds rows; keep going until all are taken.
      for (let round = 0; round < 30 && claimed.length < total; round++) {
        const batches = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            (i % 2 === 0 ? a : b).claim({ owner: `w${i}`, types: [], limit: 3, leaseMs: 30_000 }),
          ),
        );
        claimed.push(...batches.flat());
      }
      const ids = claimed.map((c) => c.job.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(total);
      for (const claim of claimed) {
        expect(claim.token).toBe(1);
        const stored = await b.get(claim.job.id);
        expect(stored).toMatchObject({
          status: 'in_progress',
          attempts: 1,
          leaseToken: 1,
          leaseOwner: claim.job.leaseOwner,
        });
        expect((await a.events(claim.job.id)).map((e) => e.type)).toEqual(['job.started']);
      }
      expect(await b.claim({ owner: 'late', types: [], limit: 10, leaseMs: 30_000 })).toEqual([]);
    });

    it('concurrent retryFailed of one job: one retried, every other answer is the job it left', async () => {
      const job = (await a.enqueue(newJob({ maxAttempts: 1 }))).job;
      const [claim] = await a.claim({ owner: 'w', types: [], limit: 1, leaseMs: 30_000 });
      await a.fail({ id: job.id, token: claim!.token }, { code: 'x', message: 'x', kind: 'permanent' });
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).retryFailed(job.id)),
      );
      expect(answers.filter((r) => r?.retried)).toHaveLength(1);
      const retried = answers.find((r) => r?.retried)!.job;
      expect(retried).toMatchObject({ status: 'pending', attempts: 0 });
      // A loser that waited on the winner's lock answers with the row as committed, never a stale `failed`.
      for (const r of answers) expect(r).toEqual({ job: retried, retried: r!.retried });
      expect(await b.get(job.id)).toEqual(retried);
    });

    it('a notification written by one instance reaches a subscriber of the other', async () => {
      const received: StoreNotification[] = [];
      b.subscribe((n) => received.push(n));
      const has = (expected: StoreNotification) => (): boolean =>
        received.some((n) => isDeepStrictEqual(n, expected));

      const job = (await a.enqueue(newJob({ type: 'cross', runAt: clock.now() }))).job;
      const available: StoreNotification = { kind: 'job_available', type: 'cross', runAt: job.runAt };
      await pollUntil(has(available));
      expect(received).toContainEqual(available);

      await b.watchEvents(job.id);
      await a.claim({ owner: 'w', types: ['cross'], limit: 1, leaseMs: 30_000 });
      const started: StoreNotification = {
        kind: 'job_event',
        jobId: job.id,
        seq: 1,
        eventType: 'job.started',
      };
      await pollUntil(has(started));
      expect(received).toContainEqual(started);

      await a.cancel(job.id);
      const cancel: StoreNotification = { kind: 'cancel_requested', jobId: job.id };
      await pollUntil(has(cancel));
      expect(received).toContainEqual(cancel);
    });

    it("announces a job's events only while some instance watches it; close ends its watches", async () => {
      const received: StoreNotification[] = [];
      a.subscribe((n) => received.push(n));
      const events = (): StoreNotification[] => received.filter((n) => n.kind === 'job_event');
      const job = (await a.enqueue(newJob({ type: 'watched' }))).job;
      const other = (await a.enqueue(newJob({ type: 'unwatched' }))).job;
      expect(await b.watchEvents('job_missing')).toBeDefined(); // no such job: registers nothing

      const watch = await b.watchEvents(job.id);
      const [claim] = await a.claim({ owner: 'w', types: ['watched'], limit: 1, leaseMs: 30_000 });
      const [otherClaim] = await a.claim({ owner: 'w', types: ['unwatched'], limit: 1, leaseMs: 30_000 });
      await a.complete({ id: other.id, token: otherClaim!.token }, 'unseen');
      await a.appendRunEvent({ id: job.id, token: claim!.token }, 'job.progress', { step: 1 });
      await pollUntil(() => events().length === 2);
      // The other job's started and completed events were committed before the progress event was.
      expect(events()).toEqual([
        { kind: 'job_event', jobId: job.id, seq: 1, eventType: 'job.started' },
        { kind: 'job_event', jobId: job.id, seq: 2, eventType: 'job.progress' },
      ]);

      await watch.unwatch();
      await a.appendRunEvent({ id: job.id, token: claim!.token }, 'job.progress', { step: 2 });
      await b.watchEvents(job.id); // a new watch, left to close
      await a.appendRunEvent({ id: job.id, token: claim!.token }, 'job.progress', { step: 3 });
      await pollUntil(() => events().length === 3);
      expect(events()[2]).toEqual({ kind: 'job_event', jobId: job.id, seq: 4, eventType: 'job.progress' });

      await b.close();
      await a.complete({ id: job.id, token: claim!.token }, 'done');
      const marker = (await a.enqueue(newJob({ type: 'marker' }))).job;
      await pollUntil(() => received.some((n) => n.kind === 'job_available' && n.type === 'marker'));
      expect(marker.status).toBe('pending');
      expect(events()).toHaveLength(3); // seq 3 (unwatched) and the completion (watch closed) were silent
    });

    it('pruneWatches removes the watches left on ended or missing jobs once they are old enough, never a live job', async () => {
      const sql = new pg.Client({ connectionString: url });
      await sql.connect();
      try {
        const watchers = async (): Promise<string[]> =>
          (
            await sql.query<{ job_id: string }>(`SELECT job_id FROM "${schema}".job_watchers ORDER BY job_id`)
          ).rows.map((r) => r.job_id);
        const ended = (await a.enqueue(newJob({ type: 'ended' }))).job;
        const running = (await a.enqueue(newJob({ type: 'running' }))).job;
        const pending = (await a.enqueue(newJob({ type: 'pending', runAt: clock.now() + 3_600_000 }))).job;
        // Watches of a process that dies: registered, never unwatched (b is not closed before the prune).
        for (const job of [ended, running, pending]) await b.watchEvents(job.id);
        await sql.query(
          `INSERT INTO "${schema}".job_watchers (job_id, watcher, created_at) VALUES ($1, $2, $3)`,
          ['job_gone', 'w', clock.now()],
        );
        const [done] = await a.claim({ owner: 'w', types: ['ended'], limit: 1, leaseMs: 30_000 });
        await a.complete({ id: ended.id, token: done!.token }, 'ok');
        await a.claim({ owner: 'w', types: ['running'], limit: 1, leaseMs: 30_000 });

        expect(await a.pruneWatches()).toBe(0); // all younger than a minute
        clock.tick(60_000);
        expect(await a.pruneWatches()).toBe(0); // exactly a minute: not older
        clock.tick(1);
        expect(await a.pruneWatches()).toBe(2);
        expect(await watchers()).toEqual([running.id, pending.id].sort());
        expect(await a.pruneWatches(0)).toBe(0);
        await expect(a.pruneWatches(-1)).rejects.toThrow(RangeError);
      } finally {
        await sql.end();
      }
    });
  });
});
