import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { jobStoreContract } from './contract.js';
import type { Claim, JobStore, NewJob } from './jobs.js';
import { orderingKeyContract } from './ordering-contract.js';
import { groupCommitStats } from './sqlite/batch.js';
import { openSqliteStore } from './sqlite/index.js';

jobStoreContract('sqlite', (clock) => openSqliteStore({ path: ':memory:', clock }));
orderingKeyContract('sqlite', (clock) => openSqliteStore({ path: ':memory:', clock }));

describe('SQLite job store on a file', () => {
  let dir: string;
  let file: string;
  let clock: FakeClock;
  const opened: JobStore[] = [];

  async function openFile(): Promise<JobStore> {
    const store = await openSqliteStore({ path: file, clock });
    opened.push(store);
    return store;
  }

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

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-sqlite-'));
    file = join(dir, 'jobs.db');
    clock = new FakeClock();
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a store reopened on the same file keeps every acknowledged job and event', async () => {
    const first = await openFile();
    const pending = (await first.enqueue(newJob({ type: 'a', idempotencyKey: 'k1' }))).job;
    const done = (await first.enqueue(newJob({ type: 'b' }))).job;
    const running = (await first.enqueue(newJob({ type: 'c' }))).job;
    const [doneClaim] = await first.claim({ owner: 'w1', types: ['b'], limit: 1, leaseMs: 30_000 });
    clock.tick(10);
    await first.appendRunEvent({ id: done.id, token: doneClaim!.token }, 'job.progress', { pct: 50 });
    await first.complete({ id: done.id, token: doneClaim!.token }, { sent: true });
    await first.claim({ owner: 'w1', types: ['c'], limit: 1, leaseMs: 30_000 });
    const before = await Promise.all([pending, done, running].map((j) => first.get(j.id)));
    const eventsBefore = await Promise.all([pending, done, running].map((j) => first.events(j.id)));
    await first.close();

    const second = await openFile();
    expect(await Promise.all([pending, done, running].map((j) => second.get(j.id)))).toEqual(before);
    expect(await Promise.all([pending, done, running].map((j) => second.events(j.id)))).toEqual(eventsBefore);
    expect(eventsBefore.map((events) => events.length)).toEqual([0, 3, 1]);
    // The idempotency key and the queue survive too.
    expect(await second.enqueue(newJob({ type: 'a', idempotencyKey: 'k1' }))).toEqual({
      job: before[0],
      created: false,
    });
    const claims = await second.claim({ owner: 'w2', types: [], limit: 10, leaseMs: 30_000 });
    expect(claims.map((c) => c.job.id)).toEqual([pending.id]);
  });

  it('migrations are applied once: reopening changes neither the schema nor the data', async () => {
    const first = await openFile();
    const job = (await first.enqueue(newJob())).job;
    await first.close();
    const before = snapshot(file);

    for (let i = 0; i < 3; i++) {
      const again = await openFile();
      expect(await again.list()).toEqual([job]);
      await again.close();
      expect(snapshot(file)).toEqual(before);
    }
    // Two stores opened at once on a migrated file.
    const [a, b] = await Promise.all([openFile(), openFile()]);
    expect(await a!.get(job.id)).toEqual(job);
    expect(await b!.get(job.id)).toEqual(job);
    await a!.close();
    await b!.close();
    expect(snapshot(file)).toEqual(before);
  });

  it('a second close() resolves only once the first is done, queued work acknowledged', async () => {
    const store = await openFile();
    const enqueued = store.enqueue(newJob());
    let acknowledged = false;
    void enqueued.then(() => (acknowledged = true));
    const first = store.close();
    await store.close();
    expect(acknowledged).toBe(true);
    await first;
    await expect(store.get('anything')).rejects.toThrow('the store is closed');
  });

  it('two stores on the same file never claim the same job', async () => {
    const [a, b] = [await openFile(), await openFile()];
    const total = 40;
    for (let i = 0; i < total; i++) await a.enqueue(newJob({ payload: { i } }));
    const claimed: Claim[] = [];
    for (let round = 0; round < 20 && claimed.length < total; round++) {
      const batches = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 === 0 ? a : b).claim({ owner: `w${i}`, types: [], limit: 2, leaseMs: 30_000 }),
        ),
      );
      claimed.push(...batches.flat());
    }
    const ids = claimed.map((c) => c.job.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(total);
    for (const claim of claimed) {
      expect(claim.token).toBe(1);
      expect(await b.events(claim.job.id)).toHaveLength(1);
    }
  });

  describe('group commit of enqueue, complete and fail', () => {
    it('100 concurrent enqueues commit in fewer transactions than calls, all durable', async () => {
      const store = await openFile();
      const before = groupCommitStats.transactions;
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => store.enqueue(newJob({ payload: { i } }))),
      );
      const transactions = groupCommitStats.transactions - before;
      expect(transactions).toBeGreaterThanOrEqual(1);
      expect(transactions).toBeLessThan(10);
      expect(results.every((r) => r.created)).toBe(true);
      await store.close();
      const again = await openFile();
      expect(await again.list()).toHaveLength(100);
    });

    it('a batch larger than the cap is split into several transactions', async () => {
      const store = await openFile();
      const before = groupCommitStats.transactions;
      await Promise.all(Array.from({ length: 600 }, (_, i) => store.enqueue(newJob({ payload: { i } }))));
      expect(groupCommitStats.transactions - before).toBe(3);
      expect(await store.list({ limit: 1000 })).toHaveLength(600);
    });

    it('one failing operation in a batch rejects alone; the others commit and notify', async () => {
      const store = await openFile();
      const heard: string[] = [];
      store.subscribe((n) => {
        if (n.kind === 'job_available') heard.push(n.type);
      });
      const { job } = await store.enqueue(newJob({ type: 'b' }));
      const [claim] = await store.claim({ owner: 'w', types: ['b'], limit: 1, leaseMs: 1_000 });
      heard.length = 0;
      const before = groupCommitStats.transactions;
      const settled = await Promise.allSettled([
        store.enqueue(newJob({ type: 'a' })),
        // Queued, then refused inside the batch before it wrote anything: a BigInt has no JSON form.
        store.complete({ id: job.id, token: claim!.token }, 1n),
        store.enqueue(newJob({ type: 'c' })),
      ]);
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(await store.get(job.id)).toMatchObject({ status: 'in_progress' });
      expect(heard).toEqual(['a', 'c']);
      expect((await store.list()).map((j) => j.type).sort()).toEqual(['a', 'b', 'c']);
    });

    it('the same idempotency key twice in one batch gives one job', async () => {
      const store = await openFile();
      const before = groupCommitStats.transactions;
      const [first, second] = await Promise.all([
        store.enqueue(newJob({ idempotencyKey: 'k' })),
        store.enqueue(newJob({ idempotencyKey: 'k', payload: { other: true } })),
      ]);
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(first!.created).toBe(true);
      expect(second).toEqual({ job: first!.job, created: false });
      expect(await store.list()).toHaveLength(1);
    });

    it('complete and fail are batched too, each fenced by its own lease', async () => {
      const store = await openFile();
      for (let i = 0; i < 4; i++) await store.enqueue(newJob({ payload: { i } }));
      const claims = await store.claim({ owner: 'w', types: [], limit: 4, leaseMs: 30_000 });
      const before = groupCommitStats.transactions;
      const error = { code: 'x', message: 'x', kind: 'permanent' } as const;
      const lease = (c: Claim) => ({ id: c.job.id, token: c.token });
      const results = await Promise.all([
        store.complete(lease(claims[0]!), 1),
        store.fail(lease(claims[1]!), error),
        store.complete(lease(claims[2]!), 3),
        store.complete({ id: claims[3]!.job.id, token: 99 }, 4), // stale token
      ]);
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(results.map((e) => e?.type)).toEqual([
        'job.completed',
        'job.failed',
        'job.completed',
        undefined,
      ]);
    });

    it('other operations see queued writes first; close() commits what is pending', async () => {
      const store = await openFile();
      const pending = store.enqueue(newJob());
      // Not awaited: the claim still finds the job, as when each enqueue committed at once.
      const claims = await store.claim({ owner: 'w', types: [], limit: 1, leaseMs: 30_000 });
      expect(claims).toHaveLength(1);
      expect((await pending).job.id).toBe(claims[0]!.job.id);
      const late = store.enqueue(newJob({ type: 'late' }));
      await store.close();
      const { job } = await late;
      const again = await openFile();
      expect(await again.get(job.id)).toEqual(job);
    });
  });
});

/**
 * The file's schema as SQLite records it (every table, index and trigger with its SQL), its user_version,
 * and the rows of any table that looks like a migration ledger: reapplying a migration changes one of them.
 */
function snapshot(file: string): unknown {
  const db = new Database(file, { readonly: true });
  try {
    const objects = db
      .prepare(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
      )
      .all() as { type: string; name: string }[];
    const ledgers = objects
      .filter((o) => o.type === 'table' && /migration|schema_version|version/i.test(o.name))
      .map((o) => ({
        table: o.name,
        rows: db.prepare(`SELECT * FROM "${o.name.replaceAll('"', '""')}"`).all(),
      }));
    return { objects, userVersion: db.pragma('user_version', { simple: true }), ledgers };
  } finally {
    db.close();
  }
}
