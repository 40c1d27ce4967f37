import type Database from 'better-sqlite3';
import type { SqliteContext } from './context.js';
import type { WalSync } from './wal-sync.js';

/**
 * Group commit for the hot writes (`enqueue`, `claim`, `complete`, `fail`, `acceptWebhook` of the inbox,
 * `begin` / `complete` of idempotency records, `append` of the audit log and `update` of counters).
 *
 * Every commit costs an fsync of the WAL (`wal-sync.ts`), so 64 enqueues in flight would cost 64 fsyncs. Here a call is queued instead of run; the first queued call schedules a flush with `setImmediate`
 * (I/O batching, not time logic: the injected clock plays no part), and the flush runs everything queued by
 * then — at most {@link MAX_BATCH} operations, the rest in the next flush — in ONE `BEGIN IMMEDIATE`
 * transaction, so one fsync acknowledges the whole batch.
 *
 * Why this is as durable as one transaction per call: a promise settles only after the flush that holds it.
 * It resolves only once the `COMMIT` of the batch returned and the log was synced after it (`wal-sync.ts`);
 * if the batch cannot commit (BEGIN busy, a disk error, an error that ended the whole transaction) every
 * operation of it rejects, none is reported done. An acknowledged write is therefore on disk exactly as
 * with one synced transaction per call; only the moment of the acknowledgement moves. (A claim is released at
 * the commit: see {@link GroupCommit.submitAtCommit}.)
 *
 * Isolation inside a batch, without a savepoint per operation: a savepoint makes SQLite copy every page an
 * operation touches into its sub-journal first (4 KiB each, several per job), a large share of the jobs
 * bench (docs/performance.md#sqlite-store). Steps are therefore plain functions (not `db.transaction(...)` wrappers) written to do every check,
 * serialization and user callback before their first write, so a step that throws has usually written nothing:
 * the store compares SQLite's `total_changes()` before and after it, and when it is unchanged the operation
 * rejects alone and the batch goes on (its queued notifications are dropped). A statement that fails is undone
 * by SQLite itself (statement rollback), so it never counts. A step that throws after writing (a bug, or an
 * I/O error) cannot be undone alone: the whole batch is rolled back and every operation of it rejects, the
 * others with an error that says so; nothing of it is reported done. Operations run in call order and each
 * sees the ones before it, so two enqueues of one idempotency key in a batch return the same job.
 * Notifications are emitted after the commit, before any promise of the batch resolves.
 *
 * Commits wait for the log sync that is running, if one is. A commit made while a sync runs is not covered by
 * it and would wait for the next one anyway, so the batch stays queued until that sync returns; then what was
 * queued by then (up to {@link MAX_BATCH}) commits in one transaction and the next sync starts (more than a
 * batch goes at the next turns, one batch per turn). Each acknowledgement comes when it did before, plus at
 * most the time of that commit, and under load there is one commit per sync instead of one per turn of the
 * event loop, so more deliveries share a transaction (docs/performance.md#sqlite-store). A commit
 * writes every page it touched once, so fewer, larger commits write fewer pages. Two kinds of queue do not
 * wait: one holding a claim, which is released at its commit, before the sync (see
 * {@link GroupCommit.submitAtCommit}), and a full batch, so a slow sync does not pile the queue up for its
 * end. Both commit at the next turn, as before.
 *
 * Program order: {@link GroupCommit.flush} runs synchronously, and the store calls it before every other
 * operation (reads and unbatched writes) and before `close()`, so every operation still observes all the
 * calls issued before it, as when each call committed at once. `close()` thus commits pending work first.
 */

/** Most operations in one transaction; the rest go in the next flush. */
export const MAX_BATCH = 256;

/** Counters for tests only: how many batch transactions were attempted and how many operations they held. */
export const groupCommitStats = { transactions: 0, operations: 0 };

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /**
   * Given for an operation that may be released when its transaction commits, before the log sync (see
   * {@link GroupCommit.submitAtCommit}): says whether its value may.
   */
  releasable: ((value: unknown, isUnsynced: (jobId: string) => boolean) => boolean) | undefined;
}

/** Outcome of one operation inside a batch. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  /** The queue may hold a claim (released at its commit): it commits without waiting for the sync. */
  private urgent = false;
  /** True while {@link hold} keeps the scheduled flushes from committing (see there). */
  private held = false;
  /** True while a batch's steps run: a step (a counter step, an audit sealer) must not use the store. */
  private running = false;

  /** `total_changes()`: rows changed by completed statements of this connection, to tell if a step wrote. */
  private readonly totalChanges: Database.Statement<[], number>;
  /** One `BEGIN IMMEDIATE` transaction running a batch's steps in order (see the class comment). */
  private readonly transaction: (batch: Pending[], outcomes: Outcome[]) => void;

  constructor(
    private readonly ctx: SqliteContext,
    private readonly sync: WalSync,
  ) {
    const { db } = ctx;
    this.totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck();
    this.transaction = db.transaction((batch: Pending[], outcomes: Outcome[]) => {
      for (const op of batch) {
        const mark = ctx.outbox.length;
        const changesBefore = this.totalChanges.get();
        try {
          outcomes.push({ ok: true, value: op.run() });
        } catch (error) {
          ctx.outbox.length = mark;
          // Some errors (SQLITE_FULL, IOERR, ...) end the whole transaction: nothing of the batch can commit.
          if (!db.inTransaction) throw error;
          // Writes of this step are in the transaction and cannot be undone alone: roll back the batch.
          if (this.totalChanges.get() !== changesBefore) throw new WroteThenFailed(error);
          outcomes.push({ ok: false, error });
        }
      }
    }).immediate;
    sync.onSyncEnd = () => this.onSyncEnd();
  }

  /** True while a batch's steps run (see {@link flush}). */
  get inStep(): boolean {
    return this.running;
  }

  /** Queues `step(...args)` for the next flush; the promise settles once that flush committed or failed. */
  submit<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    return this.enqueue(undefined, () => step(...args));
  }

  /**
   * Like {@link submit}, but the promise settles as soon as the transaction commits, without waiting for the
   * log sync (`wal-sync.ts`), when `releasable(value, isUnsynced)` says so: for a claim, whose lease an OS
   * crash may then lose, which only puts the job back to pending — unless it leased a job whose creation is
   * not on disk yet (`isUnsynced`), which a crash would undo. The batch's notifications still wait.
   */
  submitAtCommit<A extends unknown[], R>(
    releasable: (value: R, isUnsynced: (jobId: string) => boolean) => boolean,
    step: (...args: A) => R,
    ...args: A
  ): Promise<R> {
    return this.enqueue(releasable as Pending['releasable'], () => step(...args));
  }

  private enqueue<R>(releasable: Pending['releasable'], run: () => R): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject, releasable });
      if (releasable !== undefined) this.urgent = true;
      if (!this.scheduled && !this.held) this.schedule();
    });
  }

  private schedule(): void {
    this.scheduled = true;
    setImmediate(() => this.onImmediate());
  }

  /**
   * Keeps queued operations from committing until {@link release}: the checkpoint worker holds the commits
   * for the one checkpoint (~10 ms, at most 50) that lets the log start over (`checkpointer.ts`), which it
   * can only do while no commit lands. Calls still queue; {@link flush} still commits (program order comes
   * first: such a commit only makes that restart wait for a later one).
   */
  hold(): void {
    this.held = true;
  }

  /** Ends a {@link hold}: what was queued meanwhile commits on the next turn of the event loop. */
  release(): void {
    if (!this.held) return;
    this.held = false;
    if (this.queue.length > 0 && !this.scheduled) this.schedule();
  }

  /**
   * Commits everything queued now, batch after batch, synchronously.
   * @throws Error when called from inside a batch's step (a counter step or an audit sealer calling the store):
   *   the nested work would commit and be acknowledged inside a transaction the outer step could still roll
   *   back.
   */
  flush(): void {
    if (this.running) throw reentrantError();
    while (this.queue.length > 0) this.runBatch();
  }

  private onImmediate(): void {
    this.scheduled = false;
    if (this.held) return;
    // Kept for the end of the running sync (see the class comment), which commits it: onSyncEnd.
    if (!this.urgent && this.queue.length < MAX_BATCH && this.sync.syncInFlight) return;
    if (this.queue.length > 0) this.runBatch();
    if (this.queue.length > 0 && !this.scheduled) this.schedule();
  }

  /** A log sync returned: commits what was kept for it, before the next sync starts. */
  private onSyncEnd(): void {
    if (this.held || this.queue.length === 0) return;
    // Only a sync completed from inside a step (a test's) lands here mid-batch: the next turn commits.
    if (this.running) {
      if (!this.scheduled) this.schedule();
      return;
    }
    // One batch, like a turn: the rest (only ever more than a batch after a burst) goes at the next turns.
    this.runBatch();
    if (this.queue.length > 0 && !this.scheduled) this.schedule();
  }

  /** Runs up to {@link MAX_BATCH} queued operations in one transaction, then settles their promises. */
  private runBatch(): void {
    const { ctx } = this;
    const batch = this.queue.splice(0, MAX_BATCH);
    // Conservative: a claim may still be queued after a full batch.
    if (this.queue.length === 0) this.urgent = false;
    // A failed log sync refuses everything: nothing more is committed (wal-sync.ts).
    const failure = this.sync.failure;
    if (failure !== undefined) {
      for (const op of batch) op.reject(failure);
      return;
    }
    groupCommitStats.transactions++;
    groupCommitStats.operations += batch.length;
    ctx.outbox = [];
    ctx.created = [];
    const outcomes: Outcome[] = [];
    this.running = true;
    try {
      this.transaction(batch, outcomes);
    } catch (error) {
      this.running = false;
      ctx.outbox = [];
      ctx.created = [];
      const culprit = outcomes.length < batch.length ? outcomes.length : -1;
      const batchError =
        error instanceof WroteThenFailed
          ? new Error(
              'SQLite store: rolled back with its group commit: another operation of the batch failed after writing',
              { cause: error.cause },
            )
          : error;
      batch.forEach((op, i) => {
        const own = outcomes[i];
        if (own !== undefined && !own.ok) op.reject(own.error);
        else if (i === culprit && error instanceof WroteThenFailed) op.reject(error.cause);
        else op.reject(batchError);
      });
      return;
    }
    this.running = false;
    const notifications = ctx.outbox;
    ctx.outbox = [];
    const created = ctx.created;
    ctx.created = [];
    const released: boolean[] = new Array(batch.length).fill(false);
    this.sync.afterCommit((error) => {
      // On disk: tell listeners, then acknowledge (or, the sync having failed, reject everything left).
      if (error === undefined) for (const notification of notifications) ctx.notifications.emit(notification);
      for (let i = 0; i < batch.length; i++) {
        const op = batch[i]!;
        const outcome = outcomes[i]!;
        if (released[i]) continue;
        if (error !== undefined) op.reject(error);
        else if (outcome.ok) op.resolve(outcome.value);
        else op.reject(outcome.error);
      }
    }, created);
    // After afterCommit, which counts this batch's new jobs as not on disk yet.
    for (let i = 0; i < batch.length; i++) {
      const op = batch[i]!;
      const outcome = outcomes[i]!;
      if (op.releasable !== undefined && outcome.ok && op.releasable(outcome.value, this.isUnsynced)) {
        released[i] = true;
        op.resolve(outcome.value);
      }
    }
  }

  private readonly isUnsynced = (jobId: string): boolean => this.sync.isUnsynced(jobId);
}

/** The refusal of a store call made from inside a group-committed step (see {@link GroupCommit.flush}). */
export function reentrantError(): Error {
  return new Error(
    'SQLite store: called from inside a group-committed step (a counter step or an audit sealer must not use the store)',
  );
}

/** A step threw after it had written: the batch's transaction is rolled back (see {@link GroupCommit}). */
class WroteThenFailed extends Error {
  constructor(cause: unknown) {
    super('a group-committed step failed after writing', { cause });
  }
}
