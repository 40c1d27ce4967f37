import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setLogger } from '../../core/index.js';
import { walCapacity, walRestarts } from '../../../test/support/wal.js';
import { openSqliteStore } from './index.js';
import { BOUND_PAGES, Checkpointer, CHECKPOINT_EVERY_COMMITS, type CommitGate } from './checkpointer.js';

/** A gate that records what the checkpointer asked, for a writer that waits while it is held. */
function recordingGate() {
  const events: ('hold' | 'release')[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  const record = (event: 'hold' | 'release') => {
    events.push(event);
    for (const w of waiting.filter((w) => events.length >= w.count)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve();
    }
  };
  const gate: CommitGate & {
    held: boolean;
    events: typeof events;
    /** Resolves once `count` events were recorded. */
    whenEvents(count: number): Promise<void>;
    /** Resolves at once when not held, else at the release. */
    whenOpen(): Promise<void>;
  } = {
    held: false,
    events,
    hold() {
      gate.held = true;
      record('hold');
    },
    release() {
      gate.held = false;
      record('release');
    },
    whenEvents: (count) =>
      events.length >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve })),
    whenOpen: () => (gate.held ? gate.whenEvents(events.length + 1) : Promise.resolve()),
  };
  return gate;
}

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
      // Halfway, wait for the checkpoint under way: on a starved CPU the worker may not have answered yet,
      // and the second half must request another (each ran while the writer kept committing).
      if (n === total / 2) await checkpointer.idle();
    }
    await checkpointer.idle();
    expect(checkpointer.completed).toBeGreaterThanOrEqual(2);
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

  it('restarts the log itself past restartAtPages: catches up, holds the commits for one checkpoint, and the log starts over', async () => {
    const gate = recordingGate();
    const checkpointer = new Checkpointer(db, { gate, restartAtPages: 300 });
    closers.push(() => checkpointer.close());
    const big = db.prepare('INSERT INTO t (n, body) VALUES (?, ?)');
    // The worker's start first (the writer would otherwise race far ahead of it).
    commit(checkpointer, 1, CHECKPOINT_EVERY_COMMITS);
    await checkpointer.idle();
    const total = 4000;
    for (let n = CHECKPOINT_EVERY_COMMITS + 1; n <= total; n++) {
      await gate.whenOpen(); // the store's group commit commits nothing while held
      big.run(n, 'x'.repeat(3000)); // about one page per commit
      checkpointer.noteCommit();
      await new Promise((resolve) => setImmediate(resolve)); // one commit per turn, as the group commit does
    }
    await checkpointer.idle();
    expect(checkpointer.restarts).toBeGreaterThanOrEqual(1);
    // Every hold was released, one at a time.
    expect(gate.events.length % 2).toBe(0);
    expect(gate.events.every((e, i) => e === (i % 2 === 0 ? 'hold' : 'release'))).toBe(true);
    expect(gate.events.length / 2).toBeGreaterThanOrEqual(checkpointer.restarts);
    // The log started over each time (SQLite's own count), well before the connection's bound: without the
    // worker's restarts it grows to the bound (10,000 frames here, checked with restartAtPages out of reach).
    // Its largest size was 2,700–3,900 frames on an idle machine, and up to ~6,700 with the worker thread
    // starved of CPU (its held checkpoint outlasts HOLD_LIMIT_MS, and the restart waits for the next one).
    expect(walRestarts(path)).toBeGreaterThanOrEqual(checkpointer.restarts);
    expect(walCapacity(path)).toBeLessThan(0.8 * BOUND_PAGES);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(total);
  });

  it('a held checkpoint that does not answer within HOLD_LIMIT_MS: the commits are released anyway', async () => {
    // A driver whose checkpoints take 300 ms: the second, held one is still running when the limit passes.
    const driver = join(dir, 'slow-driver.cjs');
    const real = createRequire(import.meta.url).resolve('better-sqlite3');
    writeFileSync(
      driver,
      `const Real = require(${JSON.stringify(real)});
module.exports = function SlowDatabase(path, options) {
  const db = new Real(path, options);
  const prepare = db.prepare.bind(db);
  db.prepare = (sql) => {
    const statement = prepare(sql);
    return { get: () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300); return statement.get(); } };
  };
  return db;
};`,
    );
    const gate = recordingGate();
    const released: number[] = [];
    const release = gate.release;
    gate.release = () => {
      released.push(checkpointer.completed); // how many checkpoints had answered when the hold ended
      release();
    };
    const checkpointer = new Checkpointer(db, { driver, gate, restartAtPages: 10 });
    closers.push(() => checkpointer.close());
    const big = db.prepare('INSERT INTO t (n, body) VALUES (?, ?)');
    for (let n = 1; n <= CHECKPOINT_EVERY_COMMITS; n++) {
      big.run(n, 'x'.repeat(3000));
      checkpointer.noteCommit();
    }
    // The first checkpoint answers (log ≥ 10 pages, all copied, no commit meanwhile): the commits are held
    // and a second one asked for, which answers only ~300 ms later.
    await gate.whenEvents(1);
    expect(gate.events).toEqual(['hold']);
    expect(checkpointer.completed).toBe(1);
    await gate.whenEvents(2);
    expect(gate.events).toEqual(['hold', 'release']);
    expect(released).toEqual([1]); // released by the limit, before the held checkpoint answered
    await checkpointer.idle();
    expect(checkpointer.completed).toBe(2);
    expect(checkpointer.restarts).toBe(0); // answered too late to count
    expect(gate.events).toEqual(['hold', 'release']); // its late answer starts no second hold
  });

  it('a worker that cannot start: a warning, and the connection keeps SQLite’s inline checkpoints', async () => {
    const lines: { fields: object; message: string }[] = [];
    const restore = setLogger({
      info: () => undefined,
      warn: (fields, message) => lines.push({ fields, message }),
      error: () => undefined,
    });
    closers.push(() => restore.dispose());
    const checkpointer = new Checkpointer(db, { driver: join(dir, 'no-such-driver.js') });
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

describe('a file store past RESTART_AT_PAGES', () => {
  it('has its log started over by the worker, long before the connection’s 10,000-page bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-checkpoint-restart-'));
    try {
      const path = join(dir, 'jobs.db');
      const store = await openSqliteStore({ path });
      // Each enqueue about 8 pages of log, one commit each.
      const blob = 'x'.repeat(30_000);
      const enqueue = (i: number) =>
        store.enqueue({ type: 'mail', payload: { i, blob }, runAt: 0, priority: 0, maxAttempts: 1 });
      // Until the worker is up, the connection keeps SQLite's 1,000-page automatic checkpoint, which restarts
      // the log on its own: count only the restarts after that.
      for (let i = 0; i < 150; i++) await enqueue(i);
      const before = walRestarts(path);
      // ~5,200 pages more (RESTART_AT_PAGES is 4,000; the connection's bound is now 10,000).
      for (let i = 150; i < 800; i++) await enqueue(i);
      expect(walRestarts(path)).toBeGreaterThan(before);
      expect(walCapacity(path)).toBeLessThan(BOUND_PAGES);
      await store.close();
      const db = new Database(path, { readonly: true });
      expect(db.prepare("SELECT count(*) FROM jobs WHERE type = 'mail'").pluck().get()).toBe(800);
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
