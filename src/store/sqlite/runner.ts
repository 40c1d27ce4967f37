import type Database from 'better-sqlite3';
import { GroupCommit, reentrantError } from './batch.js';
import type { SqliteContext } from './context.js';

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
  /** Group commit of the hot writes (see `batch.ts`). */
  private readonly batch: GroupCommit;

  constructor(readonly ctx: SqliteContext) {
    this.batch = new GroupCommit(ctx);
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
    if (this.isClosed) return Promise.reject(closedError());
    return this.batch.submit(step, ...args);
  }

  /**
   * Like {@link batched}, for a write whose arguments are decided first, outside any transaction (checks,
   * ids, user callbacks that must not run inside the batch): `prepare` throwing rejects at once, nothing
   * queued.
   */
  prepareThenBatch<P, R>(prepare: () => P, step: (prepared: P) => R): Promise<R> {
    if (this.isClosed) return Promise.reject(closedError());
    let prepared: P;
    try {
      prepared = prepare();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.batch.submit(step, prepared);
  }

  /** Runs a step that changes nothing; its error (or the closed store) becomes a rejection. */
  read<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    if (this.isClosed) return Promise.reject(closedError());
    try {
      this.batch.flush();
      return Promise.resolve(step(...args));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Runs a committing step, then emits the notifications it queued: only after the commit, so a listener that
   * reacts (a worker claiming) finds the change. A step that throws was rolled back; its notifications are
   * dropped.
   */
  write<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    if (this.isClosed) return Promise.reject(closedError());
    const ctx = this.ctx;
    let result: R;
    try {
      // Commit the queued group-commit work first, so this step sees every call issued before it.
      this.batch.flush();
      result = step(...args);
    } catch (error) {
      ctx.outbox.length = 0;
      return Promise.reject(error);
    }
    if (ctx.outbox.length > 0) {
      // Swap before emitting: a listener may run another step, which queues into the fresh outbox.
      const batch = ctx.outbox;
      ctx.outbox = [];
      for (const notification of batch) ctx.notifications.emit(notification);
    }
    return Promise.resolve(result);
  }

  /**
   * Marks the store closed (every later call rejects), commits queued work (or rejects it with its error),
   * then closes the connection. Idempotent.
   */
  close(): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    if (this.batch.inStep) return Promise.reject(reentrantError());
    this.isClosed = true;
    try {
      this.batch.flush();
      this.ctx.db.close();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** The rejection of every call on a closed store. */
export function closedError(): Error {
  return new Error('SQLite job store: the store is closed');
}
