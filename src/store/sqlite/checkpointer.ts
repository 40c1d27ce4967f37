import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { errorFields, Log } from '../../core/index.js';

/**
 * Checkpoints of the write-ahead log, run on a worker thread with its own connection instead of inside a
 * `COMMIT` on the event loop.
 *
 * In WAL mode a commit appends pages to the log, and a *checkpoint* copies them back into the database file.
 * SQLite's default (`wal_autocheckpoint = 1000` pages) runs one inside the commit that crosses the threshold:
 * the event loop copies the pages and waits for two fsyncs (the log before, the database after, with
 * `synchronous = NORMAL`): 26 times per 20,000 jobs in the jobs bench, ~3 ms each. SQLite's documentation of
 * WAL mode suggests exactly this remedy ("disable the automatic checkpoints and run checkpoints in a separate
 * thread"), and a PASSIVE checkpoint never blocks the writer nor readers, so it can run beside them:
 *
 * - every {@link CHECKPOINT_EVERY_COMMITS} commits (counted by {@link noteCommit}), if none is running, the
 *   worker runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection: it syncs the log, copies every frame
 *   not yet in the database file, syncs the file. The worker starts at the first such request, so a store
 *   that writes little never has one;
 * - the log can only start over once every frame is copied *and* no commit came in between, which a writer
 *   under sustained load rarely leaves time for; so the store's own connection keeps an automatic checkpoint
 *   as a bound, at {@link BOUND_PAGES} pages instead of 1,000: it finds the frames already copied (only the
 *   two fsyncs are left to wait for), and the log starts over. Without the worker (it could not start, it
 *   died, or {@link MAX_FAILURES} checkpoints in a row failed) the store is back to SQLite's default of 1,000
 *   pages, as before, with one warning logged.
 *
 * Durability is SQLite's own: a checkpoint never copies a frame the log does not hold, and the log restarts
 * only once the database file is synced. The worker is unref'd (it never keeps a process alive) and is
 * stopped by {@link close} before the store's connection closes, so that connection is the last one and
 * SQLite checkpoints and removes the log as usual. The log file keeps the largest size it reached (up to
 * ~40 MB with 4 KB pages) until then. `openSqliteStore({ checkpointWorker: false })` does without it.
 */
export const CHECKPOINT_EVERY_COMMITS = 64;

/** The store connection's automatic checkpoint while the worker runs, pages (SQLite's default: 1,000). */
export const BOUND_PAGES = 10_000;

/** Checkpoints in a row that may fail before the store falls back to inline checkpoints. */
const MAX_FAILURES = 3;

/** SQLite's default `wal_autocheckpoint`, pages: what the store falls back to without the worker. */
const SQLITE_DEFAULT_PAGES = 1_000;

/**
 * The worker: CommonJS run with `eval` (no file of its own to find next to compiled or source code), given
 * the driver's resolved path and the database's. It answers every checkpoint request with the checkpoint's
 * figures or its error message, and closes its connection on `'close'`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const row = checkpoint.get();
    parentPort.postMessage({ ok: true, busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error && error.message) });
  }
});
parentPort.postMessage({ ready: true });
`;

/** What the worker answers to a checkpoint request (the three columns of `PRAGMA wal_checkpoint`). */
type Answer = { ok: true; busy: number; log: number; checkpointed: number } | { ok: false; message: string };

const log = new Log();

/**
 * The checkpoint worker of one file store (see the module comment above {@link CHECKPOINT_EVERY_COMMITS}).
 * Internal to `store/sqlite`: the store calls {@link noteCommit} at every commit and {@link close} before its
 * connection closes. Never throws: a worker that cannot run is a logged fallback to inline checkpoints.
 */
export class Checkpointer {
  private worker: Worker | undefined;
  private ready = false;
  private running = false;
  private commits = 0;
  private closing: Promise<void> | undefined;
  private failed = false;
  /** Checkpoints in a row that failed (see {@link MAX_FAILURES}). */
  private failures = 0;
  /** Checkpoints the worker completed (for tests and diagnostics). */
  completed = 0;
  private readonly waiters: (() => void)[] = [];

  /** The database file as an absolute path, fixed at construction (the process may chdir before the worker starts). */
  private readonly path: string;

  /**
   * @param db the store's connection, on a file in WAL mode, opened relative to the current directory.
   * @param driver the module the worker loads (tests pass a broken one to see the fallback).
   */
  constructor(
    private readonly db: Database.Database,
    private readonly driver: string = createRequire(import.meta.url).resolve('better-sqlite3'),
  ) {
    this.path = resolve(db.name);
  }

  /** True while the worker takes the checkpoints (false once it failed or the store closed). */
  get active(): boolean {
    return this.worker !== undefined && this.ready;
  }

  /**
   * Counts a commit of the store's connection; every {@link CHECKPOINT_EVERY_COMMITS}, asks for a checkpoint.
   * The worker starts at the first such request (a store that writes little never starts one).
   */
  noteCommit(): void {
    if (++this.commits < CHECKPOINT_EVERY_COMMITS || this.running) return;
    if (this.ready) this.request();
    else if (this.worker === undefined && !this.failed && this.closing === undefined) this.start();
  }

  /** Resolves when no checkpoint is running (at once when none is). For tests. */
  idle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Stops the worker (after the checkpoint it may be running) and closes its connection; the store's own
   * connection closes after this. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      const worker = this.worker;
      this.worker = undefined;
      if (worker === undefined) return resolve();
      worker.once('exit', () => resolve());
      // Held until it exits: unref'd, a process with nothing else to do would end with this close pending.
      worker.ref();
      worker.postMessage('close');
    });
    return this.closing;
  }

  /** Starts the worker; once it is ready, the connection's bound goes up and a first checkpoint runs. */
  private start(): void {
    let worker: Worker;
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { driver: this.driver, path: this.path },
      });
    } catch (error) {
      this.fallBack(error);
      return;
    }
    this.worker = worker;
    this.running = true; // until the first checkpoint, which runs once the worker is ready
    worker.on('message', (message: { ready: true } | Answer) => this.onMessage(message));
    worker.on('error', (error) => this.fallBack(error));
    worker.on('exit', (code) => {
      if (this.closing === undefined) this.fallBack(new Error(`the checkpoint worker exited (code ${code})`));
    });
    // After the listeners: Node refs a worker's port again when its first 'message' listener is added, and a
    // worker ref'd for good would keep a process that never calls close() from ever exiting.
    worker.unref();
  }

  private request(): void {
    this.commits = 0;
    this.running = true;
    this.worker!.postMessage('checkpoint');
  }

  private onMessage(message: { ready: true } | Answer): void {
    if ('ready' in message) {
      if (this.closing !== undefined) return;
      this.ready = true;
      this.db.pragma(`wal_autocheckpoint = ${BOUND_PAGES}`);
      this.request();
      return;
    }
    this.running = false;
    for (const done of this.waiters.splice(0)) done();
    if (message.ok) {
      this.completed++;
      this.failures = 0;
      return;
    }
    // A worker whose checkpoints keep failing copies nothing: the store goes back to checkpointing inline
    // rather than keep a log that only the 10,000-page bound ever empties.
    if (++this.failures >= MAX_FAILURES) {
      this.fallBack(new Error(`${MAX_FAILURES} checkpoints in a row failed, the last: ${message.message}`));
    }
  }

  /** The worker cannot run: the store's connection checkpoints inline, at SQLite's default. */
  private fallBack(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    const wasReady = this.ready;
    this.ready = false;
    this.running = false;
    for (const done of this.waiters.splice(0)) done();
    const worker = this.worker;
    this.worker = undefined;
    void worker?.terminate();
    if (this.closing !== undefined) return;
    if (wasReady && this.db.open) this.db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
    log.warn(
      { err: errorFields(error) },
      'SQLite checkpoint worker unavailable; checkpoints run inside commits (SQLite default)',
    );
  }
}
