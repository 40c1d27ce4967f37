import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setLogger } from '../../core/index.js';
import { openSqliteStore } from './index.js';
import { BOUND_PAGES, Checkpointer, CHECKPOINT_EVERY_COMMITS } from './checkpointer.js';

/** A connection set up as the store sets up its own: WAL, `synchronous = NORMAL`. */
function openWal(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  return db;
}

/**
 * Rows of `table` found in the database file alone, without its log (a copy of the file, opened on its own):
 * 0 when not even the table is there (before a checkpoint the schema is in the log too).
 */
function rowsInFile(path: string, dir: string, table = 't'): number {
  const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(path, copy);
  const db = new Database(copy, { readonly: true });
  try {
    const exists = db.prepare('SELECT count(*) FROM sqlite_master WHERE name = ?').pluck().get(table);
    return exists === 0 ? 0 : (db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number);
  } finally {
    db.close();
  }
}

describe('Checkpointer', () => {
  let dir: string;
  let path: string;
  let db: Database.Database;
  const closers: (() => unknown)[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-checkpoint-'));
    path = join(dir, 'jobs.db');
    db = openWal(path);
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insert = (n: number) => db.prepare('INSERT INTO t (n, body) VALUES (?, ?)').run(n, 'x'.repeat(500));
  /** Commits rows `from`..`to`, one per commit, each told to `checkpointer`. */
  const commit = (checkpointer: Checkpointer, from: number, to: number) => {
    for (let n = from; n <= to; n++) {
      insert(n);
      checkpointer.noteCommit();
    }
  };

  it('starts no worker before its first request; the log keeps the rows until then', () => {
    const checkpointer = new Checkpointer(db);
    closers.push(() => checkpointer.close());
    commit(checkpointer, 1, CHECKPOINT_EVERY_COMMITS - 1);
    expect(checkpointer.active).toBe(false);
    expect(rowsInFile(path, dir)).toBe(0); // 63 small commits: under SQLite's 1,000-page automatic checkpoint
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });

  it('at the 64th commit starts the worker, which copies the log into the database file', async () => {
    const checkpointer = new Checkpointer(db);
    closers.push(() => checkpointer.close());
    commit(checkpointer, 1, CHECKPOINT_EVERY_COMMITS);
    await checkpointer.idle();
    expect(checkpointer.active).toBe(true);
    expect(checkpointer.completed).toBe(1);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(BOUND_PAGES);
    expect(rowsInFile(path, dir)).toBe(CHECKPOINT_EVERY_COMMITS);
    // The next 64 commits: one more checkpoint, the file holds them too.
    commit(checkpointer, CHECKPOINT_EVERY_COMMITS + 1, 2 * CHECKPOINT_EVERY_COMMITS);
    await checkpointer.idle();
    expect(checkpointer.completed).toBe(2);
    expect(rowsInFile(path, dir)).toBe(2 * CHECKPOINT_EVERY_COMMITS);
  });

  it('checkpoints beside a writer that keeps committing: nothing lost, the file intact', async () => {
    const checkpointer = new Checkpointer(db);
    closers.push(() => checkpointer.close());
    const total = 3000;
    for (let n = 1; n <= total; n++) {
      insert(n);
      checkpointer.noteCommit();
      if (n % 16 === 0) await new Promise((resolve) => setImmediate(resolve)); // let the worker's answers in
    }
    await checkpointer.idle();
    expect(checkpointer.completed).toBeGreaterThan(1);
    await checkpointer.close();
    db.close();
    expect(existsSync(`${path}-wal`)).toBe(false); // the store's connection was the last: log checkpointed, removed
    const reopened = new Database(path, { readonly: true });
    expect(reopened.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(reopened.prepare('SELECT count(*), sum(n) FROM t').raw().get()).toEqual([
      total,
      (total * (total + 1)) / 2,
    ]);
    reopened.close();
  });

  it('a worker that cannot start: a warning, and the connection keeps SQLite’s inline checkpoints', async () => {
    const lines: { fields: object; message: string }[] = [];
    const restore = setLogger({
      info: () => undefined,
      warn: (fields, message) => lines.push({ fields, message }),
      error: () => undefined,
    });
    closers.push(() => restore.dispose());
    const checkpointer = new Checkpointer(db, join(dir, 'no-such-driver.js'));
    closers.push(() => checkpointer.close());
    commit(checkpointer, 1, CHECKPOINT_EVERY_COMMITS);
    await checkpointer.idle();
    expect(checkpointer.active).toBe(false);
    expect(checkpointer.completed).toBe(0);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(lines.map((l) => l.message)).toEqual([
      'SQLite checkpoint worker unavailable; checkpoints run inside commits (SQLite default)',
    ]);
    // It does not try again at every commit.
    commit(checkpointer, CHECKPOINT_EVERY_COMMITS + 1, 3 * CHECKPOINT_EVERY_COMMITS);
    await checkpointer.idle();
    expect(lines).toHaveLength(1);
  });

  it('close() before any worker resolves at once; twice is the same close', async () => {
    const checkpointer = new Checkpointer(db);
    const first = checkpointer.close();
    expect(checkpointer.close()).toBe(first);
    await first;
    // A closed checkpointer starts nothing.
    commit(checkpointer, 1, CHECKPOINT_EVERY_COMMITS);
    expect(checkpointer.active).toBe(false);
  });
});

describe('a file store with its checkpoint worker', () => {
  it('closes the worker before its connection: the log is checkpointed and removed, every job kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-checkpoint-store-'));
    try {
      const path = join(dir, 'jobs.db');
      const store = await openSqliteStore({ path });
      // One commit per awaited enqueue: past the first request, so the worker runs.
      for (let i = 0; i < 3 * CHECKPOINT_EVERY_COMMITS; i++) {
        await store.enqueue({ type: 'mail', payload: { i }, runAt: 0, priority: 0, maxAttempts: 1 });
      }
      await store.close();
      expect(existsSync(`${path}-wal`)).toBe(false);
      const db = new Database(path, { readonly: true });
      expect(db.prepare("SELECT count(*) FROM jobs WHERE type = 'mail'").pluck().get()).toBe(
        3 * CHECKPOINT_EVERY_COMMITS,
      );
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('openSqliteStore({ checkpointWorker })', () => {
  it('false: no worker, so the file gets nothing until SQLite’s own 1,000-page checkpoint; true (default) does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-checkpoint-option-'));
    try {
      const withWorker = await openSqliteStore({ path: join(dir, 'with.db') });
      const without = await openSqliteStore({ path: join(dir, 'without.db'), checkpointWorker: false });
      for (let i = 0; i < 2 * CHECKPOINT_EVERY_COMMITS; i++) {
        await withWorker.enqueue({ type: 'mail', payload: { i }, runAt: 0, priority: 0, maxAttempts: 1 });
        await without.enqueue({ type: 'mail', payload: { i }, runAt: 0, priority: 0, maxAttempts: 1 });
      }
      // The worker's first checkpoint lands within a few ms of its start; give it up to 5 s on a busy machine.
      const deadline = Date.now() + 5000;
      while (
        rowsInFile(join(dir, 'with.db'), dir, 'jobs') < CHECKPOINT_EVERY_COMMITS &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(rowsInFile(join(dir, 'with.db'), dir, 'jobs')).toBeGreaterThanOrEqual(CHECKPOINT_EVERY_COMMITS);
      expect(rowsInFile(join(dir, 'without.db'), dir, 'jobs')).toBe(0);
      await Promise.all([withWorker.close(), without.close()]);
      expect(rowsInFile(join(dir, 'without.db'), dir, 'jobs')).toBe(2 * CHECKPOINT_EVERY_COMMITS); // checkpointed at close
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('anything but a boolean is refused, naming the option', async () => {
    await expect(openSqliteStore({ path: ':memory:', checkpointWorker: 'yes' as never })).rejects.toThrow(
      /openSqliteStore.*checkpointWorker.*a boolean/,
    );
  });
});
