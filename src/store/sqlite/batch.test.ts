import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { EventSource, FakeClock } from '../../core/index.js';
import type { StoreNotification } from '../jobs.js';
import { GroupCommit, groupCommitStats, MAX_BATCH } from './batch.js';
import type { SqliteContext } from './context.js';
import { WalSync } from './wal-sync.js';

/** A group commit over a private in-memory database with one table, and what its notifications said. */
function setup() {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const notifications = new EventSource<StoreNotification>();
  const ctx: SqliteContext = { db, clock: new FakeClock(0), notifications, outbox: [], created: [] };
  const heard: string[] = [];
  notifications.on((n) => {
    if (n.kind === 'job_available') heard.push(n.type);
  });
  const insert = db.prepare<[number, string | null]>('INSERT INTO t (n, v) VALUES (?, ?)');
  /** A step writing row `n` and announcing it. */
  const write = (n: number) => {
    insert.run(n, `v${n}`);
    ctx.outbox.push({ kind: 'job_available', type: `t${n}`, runAt: 0 });
    return n;
  };
  const group = new GroupCommit(ctx, new WalSync(undefined));
  const rows = () => db.prepare<[], number>('SELECT n FROM t ORDER BY n').pluck().all();
  /** One batch: row 1, then `step`, then row 3; how each of the three settled. */
  const around = (step: () => unknown) =>
    Promise.allSettled([group.submit(write, 1), group.submit(step), group.submit(write, 3)]);
  return { ctx, group, write, insert, rows, heard, around };
}

describe('GroupCommit', () => {
  it('commits the operations queued in one turn in one transaction, in call order', async () => {
    const { group, write, rows, heard } = setup();
    const before = groupCommitStats.transactions;
    await expect(
      Promise.all([group.submit(write, 1), group.submit(write, 2), group.submit(write, 3)]),
    ).resolves.toEqual([1, 2, 3]);
    expect(groupCommitStats.transactions - before).toBe(1);
    expect(rows()).toEqual([1, 2, 3]);
    expect(heard).toEqual(['t1', 't2', 't3']);
  });

  it('a step that throws before writing rejects alone, its notifications dropped', async () => {
    const { ctx, rows, heard, around } = setup();
    const settled = await around(() => {
      ctx.outbox.push({ kind: 'job_available', type: 'never', runAt: 0 });
      throw new TypeError('refused');
    });
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toEqual(new TypeError('refused'));
    expect(rows()).toEqual([1, 3]);
    expect(heard).toEqual(['t1', 't3']);
  });

  it('a failing statement is undone by SQLite itself: the step rejects alone', async () => {
    const { insert, rows, around } = setup();
    // v is NOT NULL: the INSERT fails and writes nothing.
    const settled = await around(() => insert.run(2, null));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(rows()).toEqual([1, 3]);
  });

  it('a step that throws after writing rolls the whole batch back: every operation rejects, nothing is heard', async () => {
    const { group, write, rows, heard, around } = setup();
    const settled = await around(() => {
      write(2);
      throw new RangeError('after writing');
    });
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const reasons = settled.map((s) => (s as PromiseRejectedResult).reason as Error);
    expect(reasons[1]).toEqual(new RangeError('after writing'));
    for (const i of [0, 2]) {
      expect(reasons[i]!.message).toBe(
        'SQLite store: rolled back with its group commit: another operation of the batch failed after writing',
      );
      expect(reasons[i]!.cause).toEqual(new RangeError('after writing'));
    }
    expect(rows()).toEqual([]);
    expect(heard).toEqual([]);
    // The next batch starts clean.
    await expect(group.submit(write, 4)).resolves.toBe(4);
    expect(rows()).toEqual([4]);
  });

  it('hold: calls queue and nothing commits until release; then they commit together, in call order', async () => {
    const { group, write, rows, heard } = setup();
    const before = groupCommitStats.transactions;
    group.hold();
    const settled: number[] = [];
    const calls = [1, 2, 3].map((n) => group.submit(write, n).then((v) => settled.push(v)));
    // Several turns of the event loop: still nothing committed, nothing resolved.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(rows()).toEqual([]);
    expect(settled).toEqual([]);
    expect(groupCommitStats.transactions - before).toBe(0);
    group.release();
    await Promise.all(calls);
    expect(rows()).toEqual([1, 2, 3]);
    expect(settled).toEqual([1, 2, 3]);
    expect(heard).toEqual(['t1', 't2', 't3']);
    expect(groupCommitStats.transactions - before).toBe(1);
    // Released for good: the next call commits on its own turn.
    await expect(group.submit(write, 4)).resolves.toBe(4);
    group.release(); // a second release changes nothing
    expect(rows()).toEqual([1, 2, 3, 4]);
  });

  it('hold: flush() still commits what is queued (program order before the hold)', async () => {
    const { group, write, rows } = setup();
    group.hold();
    const first = group.submit(write, 1);
    group.flush();
    expect(rows()).toEqual([1]);
    await expect(first).resolves.toBe(1);
    // Still held for what comes after.
    const second = group.submit(write, 2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(rows()).toEqual([1]);
    group.release();
    await expect(second).resolves.toBe(2);
  });

  describe('with a log to sync (wal-sync.ts)', () => {
    /** setup() with a WalSync whose syncs the test completes by hand. */
    function withManualSync() {
      const dir = mkdtempSync(join(tmpdir(), 'breakwater-batch-'));
      const wal = join(dir, 'db-wal');
      writeFileSync(wal, '');
      const syncs: ((error: NodeJS.ErrnoException | null) => void)[] = [];
      const base = setup();
      const group = new GroupCommit(base.ctx, new WalSync(wal, (_fd, done) => syncs.push(done)));
      const cleanup = () => rmSync(dir, { recursive: true, force: true });
      return { ...base, group, syncs, cleanup };
    }

    /** Lets the batch's setImmediate run. */
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    it('a claim-like step is released at its commit; the others and the notifications after the sync', async () => {
      const { group, write, rows, heard, syncs, cleanup } = withManualSync();
      const settled: string[] = [];
      group.submit(write, 1).then((n) => settled.push(`acked ${n}`));
      group.submitAtCommit(() => true, write, 2).then((n) => settled.push(`at commit ${n}`));
      await turn();
      expect(rows()).toEqual([1, 2]); // committed
      expect(settled).toEqual(['at commit 2']);
      expect(heard).toEqual([]);
      expect(syncs).toHaveLength(1);
      syncs.shift()!(null);
      await turn();
      expect(settled).toEqual(['at commit 2', 'acked 1']);
      expect(heard).toEqual(['t1', 't2']);
      cleanup();
    });

    it('operations queued while a sync runs commit when it returns, in one transaction, then the next sync covers them', async () => {
      const { group, write, rows, syncs, cleanup } = withManualSync();
      const settled: number[] = [];
      const track = (p: Promise<number>) => void p.then((n) => settled.push(n));
      track(group.submit(write, 1));
      await turn();
      expect(rows()).toEqual([1]);
      expect(syncs).toHaveLength(1);
      const before = groupCommitStats.transactions;
      track(group.submit(write, 2));
      await turn();
      track(group.submit(write, 3));
      await turn();
      // Kept back: a commit now would wait for the next sync anyway.
      expect(rows()).toEqual([1]);
      expect(groupCommitStats.transactions - before).toBe(0);
      syncs.shift()!(null);
      // Committed as the sync returned, before its waiters' promises settle, and a new sync started at once.
      expect(rows()).toEqual([1, 2, 3]);
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(syncs).toHaveLength(1);
      await turn();
      expect(settled).toEqual([1]);
      syncs.shift()!(null);
      await turn();
      expect(settled).toEqual([1, 2, 3]);
      cleanup();
    });

    it('a claim-like step queued while a sync runs commits at the next turn, with what was kept', async () => {
      const { group, write, rows, syncs, cleanup } = withManualSync();
      void group.submit(write, 1);
      await turn();
      void group.submit(write, 2);
      await turn();
      expect(rows()).toEqual([1]);
      const claimed = group.submitAtCommit(() => true, write, 3);
      await turn();
      expect(rows()).toEqual([1, 2, 3]);
      await expect(claimed).resolves.toBe(3);
      // Nothing queued needs haste now: the next write waits for the running sync again.
      void group.submit(write, 4);
      await turn();
      expect(rows()).toEqual([1, 2, 3]);
      syncs.shift()!(null);
      expect(rows()).toEqual([1, 2, 3, 4]);
      for (const done of syncs.splice(0)) done(null);
      cleanup();
    });

    it('a full batch queued while a sync runs commits at the next turn', async () => {
      const { group, write, rows, syncs, cleanup } = withManualSync();
      void group.submit(write, 0);
      await turn();
      const before = groupCommitStats.transactions;
      for (let n = 1; n < MAX_BATCH; n++) void group.submit(write, n);
      await turn();
      expect(groupCommitStats.transactions - before).toBe(0);
      void group.submit(write, MAX_BATCH);
      await turn();
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(rows()).toHaveLength(MAX_BATCH + 1);
      for (const done of syncs.splice(0)) done(null);
      cleanup();
    });

    it('a hold outlasts the sync: what was kept commits at the release', async () => {
      const { group, write, rows, syncs, cleanup } = withManualSync();
      void group.submit(write, 1);
      await turn();
      const second = group.submit(write, 2);
      group.hold();
      syncs.shift()!(null);
      await turn();
      expect(rows()).toEqual([1]);
      group.release();
      await turn();
      expect(rows()).toEqual([1, 2]);
      syncs.shift()!(null);
      await expect(second).resolves.toBe(2);
      cleanup();
    });

    it('a claim-like step that leased a job created by a commit not yet synced waits for the sync', async () => {
      const { ctx, group, write, syncs, cleanup } = withManualSync();
      /** An enqueue of job `id` (as the store's insert records it), then a claim that leases ids. */
      const create = (id: string) => {
        write(Number(id.slice(1)));
        ctx.created.push(id);
        return id;
      };
      const claim = (ids: string[]) => ids;
      const releasable = (ids: string[], isUnsynced: (id: string) => boolean) =>
        ids.every((id) => !isUnsynced(id));
      const order: string[] = [];
      void group.submit(create, 'j1').then(() => order.push('created j1'));
      void group.submitAtCommit(releasable, claim, ['j1']).then(() => order.push('claimed j1'));
      await turn();
      expect(order).toEqual([]); // j1's creation is in the same commit: the claim waits for its sync
      // A second batch: a claim of j1 again (created by a commit whose sync is still running) and of nothing.
      void group.submitAtCommit(releasable, claim, ['j1']).then(() => order.push('claimed j1 again'));
      void group.submitAtCommit(releasable, claim, [] as string[]).then(() => order.push('claimed none'));
      await turn();
      expect(order).toEqual(['claimed none']);
      syncs.shift()!(null); // covers the first batch only
      await turn();
      expect(order).toEqual(['claimed none', 'created j1', 'claimed j1']);
      syncs.shift()!(null);
      await turn();
      expect(order).toEqual(['claimed none', 'created j1', 'claimed j1', 'claimed j1 again']);
      // j1 is on disk now: a claim of it is released at its commit.
      void group.submitAtCommit(releasable, claim, ['j1']).then(() => order.push('claimed j1 at commit'));
      await turn();
      expect(order.at(-1)).toBe('claimed j1 at commit');
      cleanup();
    });

    it('after a failed sync a queued batch is refused without committing', async () => {
      const { group, write, rows, syncs, cleanup } = withManualSync();
      const first = group.submit(write, 1);
      await turn();
      const queued = group.submitAtCommit(() => true, write, 2);
      syncs.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
      await expect(first).rejects.toThrow(/syncing the write-ahead log failed/);
      await expect(queued).rejects.toThrow(/syncing the write-ahead log failed/);
      expect(rows()).toEqual([1]);
      cleanup();
    });

    it('a failed sync rejects what waited for it, drops its notifications and refuses nothing already released', async () => {
      const { group, write, heard, syncs, cleanup } = withManualSync();
      const acked = group.submit(write, 1);
      const claimed = group.submitAtCommit(() => true, write, 2);
      await turn();
      await expect(claimed).resolves.toBe(2);
      syncs.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
      await expect(acked).rejects.toThrow(/syncing the write-ahead log failed/);
      expect(heard).toEqual([]);
      cleanup();
    });
  });
});
