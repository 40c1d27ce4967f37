import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  EventSource,
  NON_NEGATIVE,
  defineOptions,
  finite,
  newId,
  o,
  type Clock,
  type Disposable,
} from '../../core/index.js';
import { SQLITE_STORE_DEFAULTS } from './defaults.js';
import type {
  Claim,
  JobError,
  JobEvent,
  JobFilter,
  JobRecord,
  JobStats,
  JobStore,
  LeaseRef,
  NewJob,
  StoreNotification,
} from '../jobs.js';
import type { InputAnswerOutcome, InputExpiry, InputRequest, JobInput } from '../job-input.js';
import type { RetentionStore } from '../retention.js';
import type { Store, StoreFacets } from '../store.js';
import type { StreamEventStore, StreamEventsPage } from '../stream-events.js';
import {
  isInboxKey,
  resolveInboxJob,
  type InboxDelivery,
  type InboxFilter,
  type InboxJob,
  type InboxRecord,
  type WebhookInboxStore,
} from '../webhooks.js';
import { SqliteAuditStore } from './audit.js';
import { prepareCancel, prepareRetryFailed } from './cancel.js';
import { Checkpointer } from './checkpointer.js';
import { prepareClaim, type ClaimOptions } from './claim.js';
import type { SqliteContext } from './context.js';
import { SqliteCounterStore } from './counters.js';
import { prepareEnqueue, prepareInsertJob, prepareJob, type PreparedJob } from './enqueue.js';
import { prepareAppendEvent, prepareAppendRunEvent, prepareInsert, prepareReadEvents } from './events.js';
import { prepareGet, prepareList } from './get.js';
import { prepareHeartbeat } from './heartbeat.js';
import { prepareAnswerInput, prepareAskInput, prepareExpireInputs, prepareJobInput } from './input.js';
import { SqliteIdempotencyStore } from './idempotency.js';
import { SqliteApiKeyStore } from './keys.js';
import { migrate } from './migrate.js';
import { SqliteOperationStore } from './operations.js';
import { prepareNotifySuccessor } from './ordering.js';
import { createSqliteRetention } from './retention.js';
import { SqliteRouteStore } from './routes.js';
import { SqliteRunner } from './runner.js';
import { SqliteAdminSessionStore } from './sessions.js';
import { WalSync } from './wal-sync.js';
import { prepareComplete, prepareFail, prepareFinishCanceled, prepareRelease } from './settle.js';
import { prepareNextRunAt, prepareStats } from './stats.js';
import {
  prepareAppendStreamEvent,
  preparePruneStreamEvents,
  prepareStreamEventsAfter,
} from './stream-events.js';
import {
  prepareAccept,
  prepareAcceptWebhook,
  prepareGetWebhook,
  prepareListWebhooks,
  prepareReplayWebhook,
  prepareWebhookBacklog,
  type PreparedAccept,
} from './webhooks.js';

/** Options of {@link openSqliteStore}; validated when the store opens (defaults: {@link SQLITE_STORE_DEFAULTS}). */
export interface SqliteStoreOptions {
  /** The database file (default `./data/breakwater.db`; its folder is created). `':memory:'` for a private one. */
  path?: string;
  /** Where times come from (default the system clock; tests pass a `FakeClock`). */
  clock?: Clock;
  /**
   * How long an operation waits for another connection's lock before failing with `SQLITE_BUSY`, in ms
   * (integer >= 0, default 5000). better-sqlite3 is synchronous: the wait blocks the thread, so keep it short.
   */
  busyTimeoutMs?: number;
  /**
   * How often the store looks for commits made by other connections (other processes on the same file), in
   * ms (integer >= 0, default 100; 0 turns it off; always off for `:memory:`). A change is announced as an
   * `external_change` notification, so a worker in another process than the enqueuer claims within about
   * this long instead of at its safety-net poll. The check is one `PRAGMA data_version` read (no I/O when
   * nothing changed); the timer is unref'd.
   */
  watchMs?: number;
  /**
   * Whether a file store runs its WAL checkpoints on a worker thread (`checkpointer.ts`; default true). The
   * worker starts after the store's 64th commit and holds a thread and a connection (a few MB of memory):
   * turn it off for many small stores in one process (one file per tenant), which then checkpoint inside
   * their commits as SQLite does by default.
   */
  checkpointWorker?: boolean;
}

export { SQLITE_STORE_DEFAULTS };

/** Checks {@link SqliteStoreOptions} and applies {@link SQLITE_STORE_DEFAULTS}. */
const parseOptions = defineOptions<SqliteStoreOptions>()('openSqliteStore', {
  path: o.string().min(1).default(SQLITE_STORE_DEFAULTS.path),
  clock: o.clock(),
  busyTimeoutMs: o.number().int().min(0).default(SQLITE_STORE_DEFAULTS.busyTimeoutMs),
  watchMs: o.number().int().min(0).default(SQLITE_STORE_DEFAULTS.watchMs),
  checkpointWorker: o.boolean().default(SQLITE_STORE_DEFAULTS.checkpointWorker),
});

/**
 * Opens the embedded job store (docs/architecture.md#storage): one SQLite file in WAL mode, migrated to
 * the current schema on open (see `migrate.ts`). Every state change and its event commit in one transaction;
 * claims take the write lock first (`BEGIN IMMEDIATE`), so any number of stores and processes on one file
 * never lease the same job.
 *
 * Notifications are emitted after the store's own commits; commits of other connections to the same file
 * (other processes) are noticed every `watchMs` through `PRAGMA data_version` and announced as
 * `external_change`. A worker also polls `nextRunAt` as a safety net.
 *
 * Operations are synchronous underneath (better-sqlite3). `enqueue`, `claim`, `complete`, `fail`,
 * `acceptWebhook`, `idempotency.begin`, `idempotency.complete`, `audit.append` and `counters.update` are
 * group-committed
 * (`batch.ts`): queued, then run together in one transaction on the next turn of the event loop, each
 * resolving only after that commit; every other operation first commits what is queued, so call order is
 * kept. On a file, every answer (and notification) waits until the log is synced after the commits it
 * reports (`wal-sync.ts`), a claim excepted. `close()` commits queued work and waits for its sync first;
 * after it, operations reject with an Error.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `openSqliteStore`) naming every bad option;
 *   the driver's error when the file cannot be opened or migrated.
 */
export async function openSqliteStore(options: SqliteStoreOptions = {}): Promise<Store> {
  const { path, clock, busyTimeoutMs, watchMs, checkpointWorker } = parseOptions(options);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  // `timeout` is SQLite's busy timeout: how long a statement waits for another connection's lock.
  const db = new Database(path, { timeout: busyTimeoutMs });
  try {
    // WAL: readers never block the writer nor the writer readers, and a commit appends to the log.
    db.pragma('journal_mode = WAL');
    // FULL while migrating: every commit syncs the log before it returns.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, clock.now());
    // Then NORMAL for a file in WAL mode: a commit returns once its log frames are written, and wal-sync.ts
    // syncs the log off the event loop, releasing each outcome only once a sync that began after its commit
    // returned — as durable as FULL, without the thread waiting for the disk. (NORMAL alone would let a power
    // loss or OS crash roll back commits already acknowledged.)
    const wal = path !== ':memory:' && String(db.pragma('journal_mode', { simple: true })) === 'wal';
    if (wal) db.pragma('synchronous = NORMAL');
    return new SqliteJobStore(
      db,
      clock,
      path === ':memory:' ? 0 : watchMs,
      // Absolute: the log is opened at the first commit, and the process may have changed directory by then.
      wal ? resolve(`${db.name}-wal`) : undefined,
      checkpointWorker,
    );
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Whether a claim may be handed to its worker at its commit, before the log sync (`wal-sync.ts`): an OS
 * crash that loses a lease only puts the job back to pending, as a crash of its worker would — unless the
 * job's creation is not on disk either, when the crash would undo the job itself after it ran.
 */
function claimReleasable(claims: Claim[], isUnsynced: (jobId: string) => boolean): boolean {
  for (const claim of claims) if (isUnsynced(claim.job.id)) return false;
  return true;
}

/** The watch of {@link SqliteJobStore.watchEvents}: nothing to undo. */
const NO_WATCH = { unwatch: (): Promise<void> => Promise.resolve() };

/**
 * The {@link JobStore}, {@link StreamEventStore} and {@link WebhookInboxStore} over one better-sqlite3
 * connection, with the {@link StoreFacets} on the same connection. Each operation lives in its own file.
 */
class SqliteJobStore implements JobStore, StreamEventStore, WebhookInboxStore, StoreFacets {
  readonly idempotency: SqliteIdempotencyStore;
  readonly operations: SqliteOperationStore;
  readonly audit: SqliteAuditStore;
  readonly counters: SqliteCounterStore;
  readonly routes: SqliteRouteStore;
  readonly keys: SqliteApiKeyStore;
  readonly sessions: SqliteAdminSessionStore;
  readonly retention: RetentionStore;

  private readonly ctx: SqliteContext;
  /** Runs every operation, the facets' too: the group commit, program order, the closed flag. */
  private readonly runner: SqliteRunner;

  private readonly enqueueTx: (prepared: PreparedJob) => { job: JobRecord; created: boolean };
  private readonly getOne: (id: string) => JobRecord | undefined;
  private readonly listJobs: (filter?: JobFilter) => JobRecord[];
  private readonly claimTx: (options: ClaimOptions) => Claim[];
  private readonly heartbeatStmt: (
    lease: LeaseRef,
    leaseMs: number,
  ) => { ok: boolean; cancelRequested: boolean };
  private readonly appendRunEventTx: (
    lease: LeaseRef,
    type: 'job.progress' | 'job.partial',
    payload: unknown,
  ) => JobEvent | undefined;
  private readonly completeTx: (lease: LeaseRef, result: unknown) => JobEvent | undefined;
  private readonly failTx: (lease: LeaseRef, error: JobError, retryAt?: number) => JobEvent | undefined;
  private readonly finishCanceledTx: (lease: LeaseRef) => JobEvent | undefined;
  private readonly releaseTx: (lease: LeaseRef) => boolean;
  private readonly cancelTx: (id: string) => JobRecord | undefined;
  private readonly askInputTx: (
    lease: LeaseRef,
    request: InputRequest | readonly InputRequest[],
  ) => JobEvent | undefined;
  private readonly jobInputStmt: (id: string) => JobInput | undefined;
  private readonly answerInputTx: (
    id: string,
    key: string,
    answer: unknown,
  ) => InputAnswerOutcome | undefined;
  private readonly expireInputsTx: (types: readonly string[]) => InputExpiry;
  private readonly retryFailedTx: (id: string) => { job: JobRecord; retried: boolean } | undefined;
  private readonly readEvents: (jobId: string, afterSeq?: number, limit?: number) => JobEvent[];
  private readonly statsTx: () => JobStats;
  private readonly nextRunAtStmt: (types: readonly string[], exclude?: readonly string[]) => number | null;
  private readonly appendStreamEventTx: (streamId: string, message: unknown) => string;
  private readonly streamEventsAfterTx: (eventId: string, limit?: number) => StreamEventsPage | undefined;
  private readonly pruneStreamEventsTx: (olderThanMs?: number) => number;
  private readonly acceptWebhookTx: (accept: PreparedAccept) => { duplicate: boolean; record: InboxRecord };
  private readonly getWebhookStmt: (source: string, eventId: string) => InboxRecord | undefined;
  private readonly listWebhooksStmt: (filter?: InboxFilter) => InboxRecord[];
  private readonly webhookBacklogStmt: (source: string) => number;
  private readonly replayWebhookTx: (inboxId: string, jobId: string, job: NewJob) => InboxRecord | undefined;

  /** The watch for other connections' commits (see `SqliteStoreOptions.watchMs`), when on. */
  private readonly watch: NodeJS.Timeout | undefined;

  constructor(
    db: Database.Database,
    clock: Clock,
    watchMs: number,
    walPath: string | undefined,
    checkpointWorker: boolean,
  ) {
    // A file in WAL mode: its checkpoints run on a worker thread (`checkpointer.ts`) unless turned off.
    // It holds the group commit for the one checkpoint that lets the log start over (`checkpointer.ts`).
    const gate = { hold: () => this.runner.holdCommits(), release: () => this.runner.releaseCommits() };
    const checkpointer =
      walPath === undefined || !checkpointWorker ? undefined : new Checkpointer(db, { gate });
    const ctx: SqliteContext = {
      db,
      clock,
      notifications: new EventSource<StoreNotification>(),
      outbox: [],
      created: [],
    };
    this.ctx = ctx;
    this.runner = new SqliteRunner(
      ctx,
      new WalSync(walPath, undefined, checkpointer && (() => checkpointer.noteCommit())),
      checkpointer && (() => checkpointer.close()),
    );
    this.idempotency = new SqliteIdempotencyStore(this.runner);
    this.operations = new SqliteOperationStore(this.runner);
    this.audit = new SqliteAuditStore(this.runner);
    this.counters = new SqliteCounterStore(this.runner);
    this.routes = new SqliteRouteStore(this.runner);
    this.keys = new SqliteApiKeyStore(this.runner);
    this.sessions = new SqliteAdminSessionStore(this.runner);
    this.retention = createSqliteRetention(this.runner);
    this.watch = watchMs > 0 ? this.watchOtherConnections(watchMs) : undefined;
    const appendEvent = prepareAppendEvent(ctx);
    const insertEvent = prepareInsert(ctx);
    const insertJob = prepareInsertJob(ctx);
    const notifySuccessor = prepareNotifySuccessor(ctx);
    this.enqueueTx = prepareEnqueue(ctx);
    this.getOne = prepareGet(ctx);
    this.listJobs = prepareList(ctx);
    this.claimTx = prepareClaim(ctx, appendEvent, insertEvent, notifySuccessor);
    this.heartbeatStmt = prepareHeartbeat(ctx);
    this.appendRunEventTx = prepareAppendRunEvent(ctx);
    this.completeTx = prepareComplete(ctx, insertEvent, notifySuccessor);
    this.failTx = prepareFail(ctx, appendEvent, notifySuccessor);
    this.finishCanceledTx = prepareFinishCanceled(ctx, appendEvent, notifySuccessor);
    this.releaseTx = prepareRelease(ctx, appendEvent, notifySuccessor);
    this.cancelTx = prepareCancel(ctx, appendEvent, notifySuccessor);
    this.retryFailedTx = prepareRetryFailed(ctx);
    this.askInputTx = prepareAskInput(ctx, appendEvent, notifySuccessor);
    this.jobInputStmt = prepareJobInput(ctx);
    this.answerInputTx = prepareAnswerInput(ctx, appendEvent);
    this.expireInputsTx = prepareExpireInputs(ctx, appendEvent, notifySuccessor);
    this.readEvents = prepareReadEvents(ctx);
    this.statsTx = prepareStats(ctx);
    this.nextRunAtStmt = prepareNextRunAt(ctx);
    this.appendStreamEventTx = prepareAppendStreamEvent(ctx);
    this.streamEventsAfterTx = prepareStreamEventsAfter(ctx);
    this.pruneStreamEventsTx = preparePruneStreamEvents(ctx);
    this.acceptWebhookTx = prepareAcceptWebhook(ctx, insertJob);
    this.getWebhookStmt = prepareGetWebhook(ctx);
    this.listWebhooksStmt = prepareListWebhooks(ctx);
    this.webhookBacklogStmt = prepareWebhookBacklog(ctx);
    this.replayWebhookTx = prepareReplayWebhook(ctx, insertJob);
  }

  enqueue(job: NewJob): Promise<{ job: JobRecord; created: boolean }> {
    return this.runner.prepareThenBatch(() => prepareJob(job), this.enqueueTx);
  }

  get(id: string): Promise<JobRecord | undefined> {
    return this.read(this.getOne, id);
  }

  list(filter?: JobFilter): Promise<JobRecord[]> {
    return this.read(this.listJobs, filter);
  }

  claim(options: ClaimOptions): Promise<Claim[]> {
    return this.runner.batchedAtCommit(claimReleasable, this.claimTx, options);
  }

  heartbeat(lease: LeaseRef, leaseMs: number): Promise<{ ok: boolean; cancelRequested: boolean }> {
    return this.write(this.heartbeatStmt, lease, leaseMs);
  }

  appendRunEvent(
    lease: LeaseRef,
    type: 'job.progress' | 'job.partial',
    payload: unknown,
  ): Promise<JobEvent | undefined> {
    return this.write(this.appendRunEventTx, lease, type, payload);
  }

  complete(lease: LeaseRef, result: unknown): Promise<JobEvent | undefined> {
    return this.batched(this.completeTx, lease, result);
  }

  fail(lease: LeaseRef, error: JobError, retryAt?: number): Promise<JobEvent | undefined> {
    return this.batched(this.failTx, lease, error, retryAt);
  }

  finishCanceled(lease: LeaseRef): Promise<JobEvent | undefined> {
    return this.write(this.finishCanceledTx, lease);
  }

  release(lease: LeaseRef): Promise<boolean> {
    return this.write(this.releaseTx, lease);
  }

  cancel(id: string): Promise<JobRecord | undefined> {
    return this.write(this.cancelTx, id);
  }

  retryFailed(id: string): Promise<{ job: JobRecord; retried: boolean } | undefined> {
    return this.write(this.retryFailedTx, id);
  }

  askInput(lease: LeaseRef, request: InputRequest | readonly InputRequest[]): Promise<JobEvent | undefined> {
    return this.write(this.askInputTx, lease, request);
  }

  jobInput(id: string): Promise<JobInput | undefined> {
    return this.read(this.jobInputStmt, id);
  }

  answerInput(id: string, key: string, answer: unknown): Promise<InputAnswerOutcome | undefined> {
    return this.write(this.answerInputTx, id, key, answer);
  }

  expireInputs(types: readonly string[]): Promise<InputExpiry> {
    return this.write(this.expireInputsTx, types);
  }

  events(jobId: string, afterSeq?: number, limit?: number): Promise<JobEvent[]> {
    return this.read(this.readEvents, jobId, afterSeq, limit);
  }

  stats(): Promise<JobStats> {
    return this.read(this.statsTx);
  }

  nextRunAt(types: readonly string[], exclude?: readonly string[]): Promise<number | null> {
    return this.read(this.nextRunAtStmt, types, exclude);
  }

  subscribe(listener: (notification: StoreNotification) => void): Disposable {
    return this.ctx.notifications.on(listener);
  }

  /** A no-op: every event is announced already (in this process at once, to others by `watchMs`). */
  watchEvents(): Promise<{ unwatch(): Promise<void> }> {
    return Promise.resolve(NO_WATCH);
  }

  /** SQLite keeps no watches: nothing to prune (the argument is still checked). */
  pruneWatches(olderThanMs?: number): Promise<number> {
    return this.runner.read((age?: number) => {
      if (age !== undefined) finite('pruneWatches', 'olderThanMs', age, NON_NEGATIVE);
      return 0;
    }, olderThanMs);
  }

  // Stream events are not group-committed: like every unbatched operation they commit what is queued first.
  appendStreamEvent(streamId: string, message: unknown): Promise<string> {
    return this.write(this.appendStreamEventTx, streamId, message);
  }

  streamEventsAfter(eventId: string, limit?: number): Promise<StreamEventsPage | undefined> {
    return this.read(this.streamEventsAfterTx, eventId, limit);
  }

  pruneStreamEvents(olderThanMs?: number): Promise<number> {
    return this.write(this.pruneStreamEventsTx, olderThanMs);
  }

  /**
   * Group-committed like `enqueue` (the webhook hot path: one fsync per burst). The delivery is checked, its
   * ids made and its job built before it is queued, so a bad one rejects at once and user code never runs
   * inside the batch's transaction.
   */
  acceptWebhook(
    delivery: InboxDelivery,
    job: InboxJob,
  ): Promise<{ duplicate: boolean; record: InboxRecord }> {
    return this.runner.prepareThenBatch(() => prepareAccept(delivery, job), this.acceptWebhookTx);
  }

  getWebhook(source: string, eventId: string): Promise<InboxRecord | undefined> {
    if (!isInboxKey(source) || !isInboxKey(eventId)) return this.read(() => undefined);
    return this.read(this.getWebhookStmt, source, eventId);
  }

  listWebhooks(filter?: InboxFilter): Promise<InboxRecord[]> {
    return this.read(this.listWebhooksStmt, filter);
  }

  webhookBacklog(source: string): Promise<number> {
    if (!isInboxKey(source)) return this.read(() => 0);
    return this.read(this.webhookBacklogStmt, source);
  }

  /** Looks the delivery up, builds the job outside any transaction, then writes both in one. */
  replayWebhook(source: string, eventId: string, job: InboxJob): Promise<InboxRecord | undefined> {
    return this.write((): InboxRecord | undefined => {
      if (!isInboxKey(source) || !isInboxKey(eventId)) return undefined;
      const record = this.getWebhookStmt(source, eventId);
      if (record === undefined) return undefined;
      return this.replayWebhookTx(record.id, newId('job'), resolveInboxJob(job, record.id));
    });
  }

  close(): Promise<void> {
    clearInterval(this.watch);
    // Pending group-commit work is committed (or rejected with its error) before the connection goes.
    return this.runner.close();
  }

  /**
   * `PRAGMA data_version` changes when another connection commits to the file (never for this connection's
   * own commits), so a changed value means work this store was not told about. It is I/O polling, not time
   * logic, hence a real timer rather than the injected clock; unref'd so it never keeps a process alive.
   */
  private watchOtherConnections(everyMs: number): NodeJS.Timeout {
    const read = this.ctx.db.prepare<[], number>('PRAGMA data_version').pluck();
    let seen = read.get();
    const timer = setInterval(() => {
      if (this.runner.closed) return;
      let now: number | undefined;
      try {
        now = read.get();
      } catch {
        return; // busy or closing: the next tick looks again
      }
      if (now === seen) return;
      seen = now;
      this.ctx.notifications.emit({ kind: 'external_change' });
    }, everyMs);
    timer.unref();
    return timer;
  }

  private batched<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    return this.runner.batched(step, ...args);
  }

  private read<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    return this.runner.read(step, ...args);
  }

  private write<A extends unknown[], R>(step: (...args: A) => R, ...args: A): Promise<R> {
    return this.runner.write(step, ...args);
  }
}
