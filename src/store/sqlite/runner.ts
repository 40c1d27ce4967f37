import type Database from 'better-sqlite3';
import { GroupCommit, reentrantError } from './batch.js';
import type { StoreNotification } from '../jobs.js';
import type { SqliteContext } from './context.js';
import type { WalSync } from './wal-sync.js';

/**
 * How every operation of one SQLite store runs, whichever aggregate it belongs to (the job store and its
 * facets share one runner, hence one connection, one group commit and one closed flag):
 * - {@link batched}: queued for the next group commit (`batch.ts`), for the hot writes;
 * - {@link write}: its own transaction, after committing what is queued (program order), then the
 *   notifications it produced;
 * - {@link read}: after committing what is queued, so it sees every call issued before it.
 * After {@link close} all three reject with an Error and nothing runs.
 */
export class SqliteRunner {
  private isClosed = false;
  private closing: Promise<void> | undefined;
  /** Group commit of the hot writes (see `batch.ts`). */
  private readonly batch: GroupCommit;

  /**
   * @param beforeClose runs once the last commit is on disk, before the connection closes (the checkpoint
   *   worker's connection must go first, so this one is the last and SQLite removes the log).
   */
  constructor(
    readonly ctx: SqliteContext,
    private readonly sync: WalSync,
    private readonly beforeClose?: () => Promise<void>,
  ) {
    this.batch = new GroupCommit(ctx, sync);
  }

  get db(): Database.Database {
    return this.ctx.db;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Queues a hot write for the next group commit: it resolves once the transaction that holds it has
   * committed, its notifications already emitted.
   */
  batched<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    return this.batch.submit(step, ...args);
  }

  /**
   * Like {@link batched}, resolving at the commit, before the log sync, when `releasable` says the value
   * may be: for claims (see `GroupCommit.submitAtCommit`).
   */
  batchedAtCommit<A extends unknown[], R>(
    releasable: (value: R, isUnsynced: (jobId: string) => boolean) => boolean,
    step: (...args: A) => R,
    ...args: A
  ): Promise<R> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    return this.batch.submitAtCommit(releasable, step, ...args);
  }

  /** Holds the group commit (the checkpoint worker's log restart, see `GroupCommit.hold`). */
  holdCommits(): void {
    this.batch.hold();
  }

  /** Ends {@link holdCommits}. */
  releaseCommits(): void {
    this.batch.release();
  }

  /**
   * Like {@link batched}, for a write whose arguments are decided first, outside any transaction (checks,
   * ids, user callbacks that must not run inside the batch): `prepare` throwing rejects at once, nothing
   * queued.
   */
  prepareThenBatch<P, R>(prepare: () => P, step: (prepared: P) => R): Promise<R> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    let prepared: P;
    try {
      prepared = prepare();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.batch.submit(step, prepared);
  }

  /**
   * Runs a step that changes nothing; its error (or the closed store) becomes a rejection. The answer is
   * released once every commit it may have seen is on disk (`wal-sync.ts`), so a read never reports a change
   * an OS crash could still undo.
   */
  read<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    let result: R;
    try {
      this.batch.flush();
      result = step(...args);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.durable(result, undefined);
  }

  /**
   * Runs a committing step, then emits the notifications it queued: only after the commit, so a listener that
   * reacts (a worker claiming) finds the change. A step that throws was rolled back; its notifications are
   * dropped.
   */
  write<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    const ctx = this.ctx;
    let result: R;
    try {
      // Commit the queued group-commit work first, so this step sees every call issued before it.
      this.batch.flush();
      result = step(...args);
    } catch (error) {
      ctx.outbox.length = 0;
      ctx.created = [];
      return Promise.reject(error);
    }
    this.sync.noteCommit(ctx.created);
    ctx.created = [];
    // Swap before emitting: a listener may run another step, which queues into the fresh outbox.
    const notifications = ctx.outbox.length > 0 ? ctx.outbox : undefined;
    if (notifications !== undefined) ctx.outbox = [];
    return this.durable(result, notifications);
  }

  /**
   * `value` once every commit so far is on disk, after emitting `notifications`; without a log to sync (or
   * with everything synced) a settled promise at once.
   */
  private durable<R>(value: R, notifications: StoreNotification[] | undefined): Promise<R> {
    const failure = this.sync.failure;
    if (failure !== undefined) return Promise.reject(failure);
    if (this.sync.isDurable()) {
      if (notifications !== undefined) for (const n of notifications) this.ctx.notifications.emit(n);
      return Promise.resolve(value);
    }
    return new Promise<R>((resolve, reject) => {
      this.sync.whenDurable((error) => {
        if (error !== undefined) return reject(error);
        if (notifications !== undefined) for (const n of notifications) this.ctx.notifications.emit(n);
        resolve(value);
      });
    });
  }

  /** Why a new call is refused: the store is closed, or a log sync failed (`wal-sync.ts`). */
  private refusal(): Error | undefined {
    if (this.isClosed) return closedError();
    return this.sync.failure;
  }

  /**
   * Marks the store closed (every later call rejects), commits queued work (or rejects it with its error),
   * waits for the log sync that acknowledges it, then closes the connection. Idempotent: every call
   * resolves when that close is done.
   */
  close(): Promise<void> {
    if (this.closing === undefined) {
      if (this.batch.inStep) return Promise.reject(reentrantError());
      this.isClosed = true;
      this.closing = this.closeNow();
    }
    // A second call waits for the same close.
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    try {
      this.batch.flush();
    } finally {
      // Every commit acknowledged once on disk, then the connection goes.
      await this.sync.drain();
      try {
        await this.beforeClose?.();
      } finally {
        this.ctx.db.close();
      }
    }
  }
}

/** The rejection of every call on a closed store. */
export function closedError(): Error {
  return new Error('SQLite job store: the store is closed');
}
