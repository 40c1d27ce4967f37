import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { EventSource, FakeClock } from '../../core/index.js';
import type { StoreNotification } from '../jobs.js';
import { GroupCommit, groupCommitStats } from './batch.js';
import type { SqliteContext } from './context.js';
import { WalSync } from './wal-sync.js';

/** A group commit over a private in-memory database with one table, and what its notifications said. */
function setup() {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const notifications = new EventSource<StoreNotification>();
  const ctx: SqliteContext = { db, clock: new FakeClock(0), notifications, outbox: [] };
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
  const rows = () => db.prepare<[], number>('SELECT n FROM t ORDER BY n').pluck().all();
  return { ctx, group: new GroupCommit(ctx, new WalSync(undefined)), write, insert, rows, heard };
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
    const { ctx, group, write, rows, heard } = setup();
    const refuse = () => {
      ctx.outbox.push({ kind: 'job_available', type: 'never', runAt: 0 });
      throw new TypeError('refused');
    };
    const settled = await Promise.allSettled([
      group.submit(write, 1),
      group.submit(refuse),
      group.submit(write, 3),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toEqual(new TypeError('refused'));
    expect(rows()).toEqual([1, 3]);
    expect(heard).toEqual(['t1', 't3']);
  });

  it('a failing statement is undone by SQLite itself: the step rejects alone', async () => {
    const { group, write, insert, rows } = setup();
    // v is NOT NULL: the INSERT fails and writes nothing.
    const settled = await Promise.allSettled([
      group.submit(write, 1),
      group.submit(() => insert.run(2, null)),
      group.submit(write, 3),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(rows()).toEqual([1, 3]);
  });

  it('a step that throws after writing rolls the whole batch back: every operation rejects, nothing is heard', async () => {
    const { group, write, rows, heard } = setup();
    const writeThenThrow = () => {
      write(2);
      throw new RangeError('after writing');
    };
    const settled = await Promise.allSettled([
      group.submit(write, 1),
      group.submit(writeThenThrow),
      group.submit(write, 3),
    ]);
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
      group.submitAtCommit(write, 2).then((n) => settled.push(`at commit ${n}`));
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

    it('a failed sync rejects what waited for it, drops its notifications and refuses nothing already released', async () => {
      const { group, write, heard, syncs, cleanup } = withManualSync();
      const acked = group.submit(write, 1);
      const claimed = group.submitAtCommit(write, 2);
      await turn();
      await expect(claimed).resolves.toBe(2);
      syncs.shift()!(Object.assign(new Error('EIO'), { code: 'EIO' }));
      await expect(acked).rejects.toThrow(/syncing the write-ahead log failed/);
      expect(heard).toEqual([]);
      cleanup();
    });
  });
});
