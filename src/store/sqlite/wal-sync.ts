import { closeSync, fdatasync, openSync } from 'node:fs';

/**
 * Durability of the store's commits, with the write-ahead log synced off the event loop.
 *
 * With `synchronous = FULL` SQLite calls fsync on the log inside every `COMMIT`: the thread (the event loop)
 * waits for the disk, ~25 % of the jobs bench. A file store therefore runs with `synchronous = NORMAL` (a
 * commit writes its log frames to the OS and returns) and this class makes every commit durable before
 * anyone hears of it: {@link afterCommit} holds a commit's outcome until an `fdatasync` of the log that
 * *started after* that commit returned — the log is append-only and fsync covers everything written to the
 * file before it began, so the commit is then on disk exactly as FULL would have put it there. One sync runs
 * at a time on libuv's thread pool, covering every commit made before it started; commits made meanwhile
 * wait for the next one. So no promise resolves, no notification is emitted and no read is answered before
 * what it reports is on disk. The one outcome released at the commit is a claim's lease
 * (`SqliteRunner.batchedAtCommit`): an OS crash that loses it only puts the job back to pending, which is what
 * a crash of the worker does anyway — unless the claim leased a job whose creation is not on disk yet
 * ({@link WalSync.isUnsynced}); such a claim waits for the sync.
 *
 * Visibility: another process reading the same file may see a commit up to one sync (~0.1 ms) before it is
 * on disk. A failed sync poisons the store ({@link failure}): the log may not hold what was committed, so
 * every waiting and later operation rejects with that error (PostgreSQL treats a failed fsync the same way).
 *
 * A store without a log file (`:memory:`) has nothing to sync: outcomes are released at once.
 */
const NONE: readonly string[] = [];

export class WalSync {
  /** Commits made on this connection; a commit's number is the value after it. */
  private committed = 0;
  /** Every commit up to this number is on disk. */
  private synced = 0;
  private syncing = false;
  private fd: number | undefined;
  /** Outcomes waiting for a sync, in commit order. */
  private waiting: { seq: number; settle: (error: Error | undefined) => void }[] = [];
  /** Jobs created by commits not yet on disk: the commit's number by job id (see {@link isUnsynced}). */
  private readonly unsynced = new Map<string, number>();
  private idle: (() => void)[] = [];
  /** The error of a failed sync, once one failed: every later operation rejects with it. */
  failure: Error | undefined;
  /**
   * Set by the group commit (`batch.ts`): called each time a sync returns or fails, after its waiters were
   * settled and before the next sync starts, to commit what it kept back while the sync ran.
   */
  onSyncEnd: (() => void) | undefined;

  /**
   * @param walPath the log file (`<database>-wal`), or undefined when there is none to sync.
   * @param syncFile how a sync is made: `fs.fdatasync` (on libuv's thread pool); tests pass their own.
   * @param onCommit called at every commit recorded (the checkpoint worker counts them).
   */
  constructor(
    private readonly walPath: string | undefined,
    private readonly syncFile: (
      fd: number,
      done: (error: NodeJS.ErrnoException | null) => void,
    ) => void = fdatasync,
    private readonly onCommit?: () => void,
  ) {}

  /**
   * Records a commit that just returned and calls `settle` once it is on disk (at once without a log), with
   * the sync's error if it failed.
   */
  afterCommit(settle: (error: Error | undefined) => void, created: readonly string[] = NONE): void {
    if (this.walPath === undefined) return settle(undefined);
    this.record(created);
    this.waiting.push({ seq: this.committed, settle });
    this.startSync();
  }

  /** Records a commit made outside {@link afterCommit} (a write in its own transaction). */
  noteCommit(created: readonly string[] = NONE): void {
    if (this.walPath === undefined) return;
    this.record(created);
    this.startSync();
  }

  /**
   * True while the commit that created job `id` (on this connection) is not on disk: an OS crash could still
   * undo the job's existence, so a claim that leased it must not be released before the sync.
   */
  isUnsynced(id: string): boolean {
    return this.unsynced.has(id);
  }

  private record(created: readonly string[]): void {
    this.committed++;
    this.onCommit?.();
    for (const id of created) this.unsynced.set(id, this.committed);
  }

  /** True when every commit made so far is on disk. */
  isDurable(): boolean {
    return this.synced >= this.committed;
  }

  /** Calls `settle` once every commit made so far is on disk (at once when they all are). */
  whenDurable(settle: (error: Error | undefined) => void): void {
    if (this.failure !== undefined) return settle(this.failure);
    if (this.isDurable()) return settle(undefined);
    this.waiting.push({ seq: this.committed, settle });
    this.startSync();
  }

  /** Resolves once no commit waits for a sync (before the connection closes); then closes the log's fd. */
  drain(): Promise<void> {
    const closeFd = (): void => {
      if (this.fd !== undefined) closeSync(this.fd);
      this.fd = undefined;
    };
    if (this.failure !== undefined) this.failed();
    if (!this.syncing && this.isDurable()) {
      closeFd();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.idle.push(() => {
        closeFd();
        resolve();
      });
      this.startSync();
    });
  }

  /** True while a sync runs: a commit made now waits for the next one. */
  get syncInFlight(): boolean {
    return this.syncing;
  }

  private startSync(): void {
    if (this.syncing) return;
    // Every waiter's commit is <= committed, so with everything synced none is left waiting.
    if (this.isDurable()) {
      for (const done of this.idle.splice(0)) done();
      return;
    }
    if (this.failure !== undefined) return this.failed();
    const target = this.committed;
    try {
      this.fd ??= openSync(this.walPath!, 'r');
    } catch (error) {
      return this.fail(error as Error);
    }
    this.syncing = true;
    this.syncFile(this.fd, (error) => {
      this.syncing = false;
      if (error !== null) this.fail(error);
      else {
        this.synced = target;
        // In commit order: stop at the first job of a commit this sync did not cover.
        for (const [id, seq] of this.unsynced) {
          if (seq > target) break;
          this.unsynced.delete(id);
        }
        this.release(target, undefined);
      }
      this.onSyncEnd?.();
      this.startSync();
    });
  }

  private fail(cause: Error): void {
    this.failure ??= new Error(
      'SQLite store: syncing the write-ahead log failed; the store refuses every operation, since the log may ' +
        'not hold what was committed',
      { cause },
    );
    this.failed();
  }

  /** After a failed sync: nothing more is synced, every waiter (now or later) is refused, drains end. */
  private failed(): void {
    this.synced = this.committed;
    this.release(this.committed, this.failure);
    for (const done of this.idle.splice(0)) done();
  }

  /** Settles, in commit order, every waiter whose commit is covered by `upTo`. */
  private release(upTo: number, error: Error | undefined): void {
    let n = 0;
    while (n < this.waiting.length && this.waiting[n]!.seq <= upTo) n++;
    if (n === 0) return;
    const ready = this.waiting.splice(0, n);
    for (const waiter of ready) waiter.settle(error);
  }
}
