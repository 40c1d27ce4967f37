import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WalSync } from './wal-sync.js';

/** A WalSync over a real file whose syncs the test completes by hand, in order. */
function manual(path: string) {
  const syncs: ((error: NodeJS.ErrnoException | null) => void)[] = [];
  const sync = new WalSync(path, (_fd, done) => syncs.push(done));
  /** Completes the oldest sync still running (with `error` when given). */
  const finish = (error: NodeJS.ErrnoException | null = null) => syncs.shift()!(error);
  return { sync, syncs, finish };
}

describe('WalSync', () => {
  let dir: string;
  let wal: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-walsync-'));
    wal = join(dir, 'jobs.db-wal');
    writeFileSync(wal, '');
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('without a log, every outcome is released at once', () => {
    const sync = new WalSync(undefined);
    const settled: (Error | undefined)[] = [];
    sync.afterCommit((error) => settled.push(error));
    sync.noteCommit();
    sync.whenDurable((error) => settled.push(error));
    expect(settled).toEqual([undefined, undefined]);
    expect(sync.isDurable()).toBe(true);
  });

  it('holds each commit until a sync that started after it returned, in commit order', async () => {
    const { sync, syncs, finish } = manual(wal);
    const order: string[] = [];
    sync.afterCommit(() => order.push('c1'));
    expect(syncs).toHaveLength(1); // a sync started at once, covering c1
    sync.afterCommit(() => order.push('c2')); // committed while that sync runs: not covered by it
    sync.whenDurable(() => order.push('read after c2'));
    expect(sync.isDurable()).toBe(false);
    expect(order).toEqual([]);

    finish();
    expect(order).toEqual(['c1']);
    expect(syncs).toHaveLength(1); // the next sync, for c2, started when the first returned
    finish();
    expect(order).toEqual(['c1', 'c2', 'read after c2']);
    expect(sync.isDurable()).toBe(true);
    expect(syncs).toHaveLength(0); // nothing left to sync: no idle syncing

    // A read with everything on disk is answered at once.
    sync.whenDurable(() => order.push('read'));
    expect(order.at(-1)).toBe('read');
    await sync.drain();
  });

  it('one sync covers every commit made before it started', () => {
    const { sync, syncs, finish } = manual(wal);
    const order: number[] = [];
    sync.afterCommit(() => order.push(1));
    sync.afterCommit(() => order.push(2));
    sync.noteCommit();
    sync.afterCommit(() => order.push(3));
    finish(); // covers 1 only: the sync started right after commit 1
    expect(order).toEqual([1]);
    finish(); // started after 2, the unwaited commit and 3: covers them all
    expect(order).toEqual([1, 2, 3]);
    expect(syncs).toHaveLength(0);
  });

  it('a failed sync rejects every waiter and poisons the store', () => {
    const { sync, syncs, finish } = manual(wal);
    const settled: string[] = [];
    sync.afterCommit((error) => settled.push(error?.message ?? 'ok'));
    sync.afterCommit((error) => settled.push(error?.message ?? 'ok'));
    finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    expect(settled).toHaveLength(2);
    expect(settled[0]).toMatch(/syncing the write-ahead log failed/);
    expect(settled[1]).toBe(settled[0]);
    expect(sync.failure?.cause).toMatchObject({ code: 'EIO' });
    // Later commits and reads are refused with the same error, without another sync.
    sync.afterCommit((error) => settled.push(error?.message ?? 'ok'));
    sync.whenDurable((error) => settled.push(error?.message ?? 'ok'));
    expect(settled).toHaveLength(4);
    expect(new Set(settled).size).toBe(1);
    expect(syncs).toHaveLength(0);
  });

  it('a job created by a commit stays unsynced until a sync that started after that commit returned', () => {
    const { sync, finish } = manual(wal);
    sync.afterCommit(() => {}, ['a']);
    sync.noteCommit(['b']); // committed while the first sync runs
    expect([sync.isUnsynced('a'), sync.isUnsynced('b'), sync.isUnsynced('c')]).toEqual([true, true, false]);
    finish();
    expect([sync.isUnsynced('a'), sync.isUnsynced('b')]).toEqual([false, true]);
    finish();
    expect(sync.isUnsynced('b')).toBe(false);
  });

  it('after a failed sync, a later commit is refused at once and drain still resolves', async () => {
    const { sync, syncs, finish } = manual(wal);
    sync.afterCommit(() => {});
    finish(Object.assign(new Error('EIO'), { code: 'EIO' }));
    let later: Error | undefined;
    sync.afterCommit((error) => (later = error));
    sync.noteCommit();
    expect(later).toBe(sync.failure);
    expect(syncs).toHaveLength(0);
    await sync.drain();
  });

  it('drain waits for the sync in flight, then resolves', async () => {
    const { sync, finish } = manual(wal);
    let released = false;
    sync.afterCommit(() => (released = true));
    let drained = false;
    const draining = sync.drain().then(() => (drained = true));
    await Promise.resolve();
    expect(drained).toBe(false);
    finish();
    await draining;
    expect(released).toBe(true);
  });

  it('a log that cannot be opened fails the sync instead of hanging', () => {
    const sync = new WalSync(join(dir, 'missing-wal'));
    let error: Error | undefined;
    sync.afterCommit((e) => (error = e));
    expect(error?.message).toMatch(/syncing the write-ahead log failed/);
  });
});
