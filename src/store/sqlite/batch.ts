import type { SqliteContext } from './context.js';

/**
 * Group commit for the hot writes (`enqueue`, `claim`, `complete`, `fail`, `acceptWebhook` of the inbox,
 * `begin` / `complete` of idempotency records, `append` of the audit log and `update` of counters).
 *
 * With `synchronous = FULL` every commit costs an fsync of the WAL, so 64 enqueues in flight used to cost 64
 * fsyncs. Here a call is queued instead of run; the first queued call schedules a flush with `setImmediate`
 * (I/O batching, not time logic: the injected clock plays no part), and the flush runs everything queued by
 * then — at most {@link MAX_BATCH} operations, the rest in the next flush — in ONE `BEGIN IMMEDIATE`
 * transaction, so one fsync acknowledges the whole batch.
 *
 * Why this is as durable as one transaction per call: a promise settles only after the flush that holds it.
 * It resolves only once the `COMMIT` of the batch returned, which with WAL + `synchronous = FULL` means the
 * log was synced; if the batch cannot commit (BEGIN busy, a disk error, an error that ended the whole
 * transaction) every operation of it rejects, none is reported done. An acknowledged write is therefore on
 * disk exactly as before; only the moment of the acknowledgement moves (by one turn of the event loop).
 *
 * Isolation inside a batch: each operation's step is itself a `db.transaction(...)` function, which
 * better-sqlite3 runs as a SAVEPOINT when a transaction is open. An operation that throws is rolled back to
 * its savepoint and rejects alone (its queued notifications are dropped); the others commit. Operations run
 * in call order and each sees the ones before it, so two enqueues of one idempotency key in a batch return the
 * same job. Notifications are emitted after the commit, before any promise of the batch resolves.
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
}

/** Outcome of one operation inside a batch. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;

  constructor(private readonly ctx: SqliteContext) {}

  /** Queues `step(...args)` for the next flush; the promise settles once that flush committed or failed. */
  submit<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ run: () => step(...args), resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.onImmediate());
      }
    });
  }

  /** Commits everything queued now, batch after batch, synchronously. */
  flush(): void {
    while (this.queue.length > 0) this.runBatch();
  }

  private onImmediate(): void {
    this.scheduled = false;
    if (this.queue.length > 0) this.runBatch();
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.onImmediate());
    }
  }

  /** Runs up to {@link MAX_BATCH} queued operations in one transaction, then settles their promises. */
  private runBatch(): void {
    const { ctx } = this;
    const batch = this.queue.splice(0, MAX_BATCH);
    const outcomes: Outcome[] = [];
    groupCommitStats.transactions++;
    groupCommitStats.operations += batch.length;
    ctx.outbox = [];
    try {
      ctx.db
        .transaction(() => {
          for (const op of batch) {
            const mark = ctx.outbox.length;
            try {
              outcomes.push({ ok: true, value: op.run() });
            } catch (error) {
              ctx.outbox.length = mark;
              // The savepoint was rolled back; but some errors (SQLITE_FULL, IOERR, ...) end the whole
              // transaction: nothing of the batch can commit then, so fail it all.
              if (!ctx.db.inTransaction) throw error;
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
    } catch (error) {
      ctx.outbox = [];
      batch.forEach((op, i) => {
        const own = outcomes[i];
        op.reject(own !== undefined && !own.ok ? own.error : error);
      });
      return;
    }
    // Committed (and synced): tell listeners, then acknowledge.
    const notifications = ctx.outbox;
    ctx.outbox = [];
    for (const notification of notifications) ctx.notifications.emit(notification);
    batch.forEach((op, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) op.resolve(outcome.value);
      else op.reject(outcome.error);
    });
  }
}
