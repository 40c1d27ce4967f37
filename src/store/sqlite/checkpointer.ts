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
 * - the log can only start over (at the next write, from its first frame) once every frame is copied *and*
 *   no commit came in between, which a writer under sustained load never leaves time for. So once a
 *   checkpoint reports a log of {@link RESTART_AT_PAGES} pages or more, all of it copied, the checkpointer
 *   makes that time: it asks for checkpoints back to back until one ran while at most
 *   {@link CATCH_UP_COMMITS} commits landed (each copies only what the one before left), then *holds* the
 *   store's group commit (`GroupCommit.hold`: calls queue, nothing commits) for one last checkpoint, which
 *   copies those few commits, and releases it when that checkpoint answers, or after
 *   {@link HOLD_LIMIT_MS} whatever the worker does. The next commit starts the log over. The event loop never
 *   waits; the writes queued meanwhile do. Without it, the store's own connection restarted the log inside a
 *   `COMMIT`, blocking the event loop each time; a hold is shorter, nearly all of it the checkpoint's two
 *   fsyncs, since the last checkpoint copies only a few pages. Copying them on the event loop instead
 *   blocked it longer (docs/performance.md#sqlite-store);
 * - the store's own connection keeps an automatic checkpoint as a bound, at {@link BOUND_PAGES} pages
 *   instead of 1,000, for a log the worker cannot restart: a reader in another process pinning old frames,
 *   or another connection writing to the file, which no hold of this store stops (seen in `PRAGMA
 *   data_version`, it makes the checkpointer hold nothing). It finds the frames already copied, syncs, and
 *   the log starts over. Without the worker (it could not start, it died, or {@link MAX_FAILURES}
 *   checkpoints in a row failed) the store is back to SQLite's default of 1,000 pages, as before, with one
 *   warning logged.
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

/** Log size, pages (16 MB with 4 KB pages), from which the checkpointer restarts the log itself. */
export const RESTART_AT_PAGES = 4_000;

/** Commits that may land during a catch-up checkpoint for the next one to be held (see the module comment). */
export const CATCH_UP_COMMITS = 4;

/** Catch-up checkpoints before the held one, at most (the log keeps growing if writes outpace the copy). */
const MAX_CATCH_UPS = 3;

/** The longest a restart holds the store's commits, ms, whatever the worker does. */
export const HOLD_LIMIT_MS = 50;

/** How the checkpointer holds the store's group commit (`SqliteRunner.holdCommits` / `releaseCommits`). */
export interface CommitGate {
  hold(): void;
  release(): void;
}

/** Options of {@link Checkpointer}, for the store and tests. */
export interface CheckpointerOptions {
  /** The module the worker loads (tests pass a broken one to see the fallback). Default: better-sqlite3. */
  driver?: string;
  /** The store's group commit, held during a restart; without it the log only restarts at the bound. */
  gate?: CommitGate;
  /** Default {@link RESTART_AT_PAGES}; tests lower it. */
  restartAtPages?: number;
}

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
  /**
   * Held checkpoints that copied the whole log, no commit landing meanwhile, within the hold: the log starts
   * over at the next commit unless a reader in another process still uses it (for tests and diagnostics).
   */
  restarts = 0;
  private readonly waiters: (() => void)[] = [];
  /** Catch-up checkpoints asked for in the current restart (see the module comment). */
  private catchUps = 0;
  /** True from the held checkpoint's request to its answer (which may come after the hold's time limit). */
  private heldCheckpoint = false;
  /** The release of the current hold's time limit, while the group commit is held. */
  private holdTimer: NodeJS.Timeout | undefined;

  /** The database file as an absolute path, fixed at construction (the process may chdir before the worker starts). */
  private readonly path: string;
  private readonly driver: string;
  private readonly gate: CommitGate | undefined;
  private readonly restartAtPages: number;
  /** `PRAGMA data_version` of the store's connection: it moves when another connection commits. */
  private readonly dataVersion: Database.Statement<[], number>;
  /** {@link dataVersion} when the running checkpoint was asked for. */
  private versionAtRequest = 0;

  /** @param db the store's connection, on a file in WAL mode, opened relative to the current directory. */
  constructor(
    private readonly db: Database.Database,
    options: CheckpointerOptions = {},
  ) {
    this.path = resolve(db.name);
    this.driver = options.driver ?? createRequire(import.meta.url).resolve('better-sqlite3');
    this.gate = options.gate;
    this.restartAtPages = options.restartAtPages ?? RESTART_AT_PAGES;
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
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
    this.releaseHold();
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
    this.versionAtRequest = this.dataVersion.get()!;
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
    const commitsDuring = this.commits;
    if (message.ok) {
      this.completed++;
      this.failures = 0;
      const othersCommitted = this.db.open && this.dataVersion.get() !== this.versionAtRequest;
      this.nextRestartStep(message, commitsDuring, othersCommitted);
      if (!this.running) for (const done of this.waiters.splice(0)) done();
      return;
    }
    this.abandonHold();
    for (const done of this.waiters.splice(0)) done();
    // A worker whose checkpoints keep failing copies nothing: the store goes back to checkpointing inline
    // rather than keep a log that only the 10,000-page bound ever empties.
    if (++this.failures >= MAX_FAILURES) {
      this.fallBack(new Error(`${MAX_FAILURES} checkpoints in a row failed, the last: ${message.message}`));
    }
  }

  /**
   * After a checkpoint that succeeded, `commitsDuring` commits of this store having landed while it ran and
   * `othersCommitted` saying whether another connection (a second store or process on the file) committed:
   * the restart's next step (see the module comment). A held checkpoint ends the hold (the log starts over at
   * the next commit if none landed meanwhile). A log of {@link RESTART_AT_PAGES} or more, all copied, starts
   * or continues a restart: one more catch-up, or the held checkpoint once few commits came in. Left to the
   * bound: a log the worker could not copy entirely (a reader pinning frames), and a file another connection
   * writes to — this store's hold cannot stop that writer, so it would only delay this store's writes.
   */
  private nextRestartStep(
    answer: { log: number; checkpointed: number },
    commitsDuring: number,
    othersCommitted: boolean,
  ): void {
    if (this.heldCheckpoint) {
      this.heldCheckpoint = false;
      if (
        this.holdTimer !== undefined &&
        commitsDuring === 0 &&
        !othersCommitted &&
        answer.checkpointed === answer.log
      ) {
        this.restarts++;
      }
      this.releaseHold();
      this.catchUps = 0;
      return;
    }
    if (
      answer.log < this.restartAtPages ||
      answer.checkpointed !== answer.log ||
      othersCommitted ||
      this.gate === undefined ||
      this.worker === undefined ||
      this.closing !== undefined
    ) {
      this.catchUps = 0;
      return;
    }
    if (commitsDuring > CATCH_UP_COMMITS && this.catchUps < MAX_CATCH_UPS) {
      this.catchUps++;
      this.request();
      return;
    }
    this.gate.hold();
    // Ref'd: a process waiting on held writes (and nothing else) must not exit before they commit.
    this.holdTimer = setTimeout(() => this.releaseHold(), HOLD_LIMIT_MS);
    this.heldCheckpoint = true;
    this.request();
  }

  /** Ends a hold (its checkpoint answered, the time limit passed, the worker failed or the store closes). */
  private releaseHold(): void {
    if (this.holdTimer === undefined) return;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.gate!.release();
  }

  /** Ends a hold whose checkpoint will not answer (it failed, or the worker is gone). */
  private abandonHold(): void {
    this.heldCheckpoint = false;
    this.releaseHold();
  }

  /** The worker cannot run: the store's connection checkpoints inline, at SQLite's default. */
  private fallBack(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.abandonHold();
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
