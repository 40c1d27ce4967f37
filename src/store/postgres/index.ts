import pg from 'pg';
import { EventSource, defineOptions, o, type Clock, type Disposable } from '../../core/index.js';
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
import type { InboxDelivery, InboxFilter, InboxJob, InboxRecord, WebhookInboxStore } from '../webhooks.js';
import { PostgresAuditStore } from './audit.js';
import { cancel, retryFailed } from './cancel.js';
import { claim } from './claim.js';
import { PostgresCounterStore } from './counters.js';
import { quoteIdent, storeTypes, type Db } from './db.js';
import { enqueue } from './enqueue.js';
import { appendRunEvent, events } from './events.js';
import { get, list } from './get.js';
import { heartbeat } from './heartbeat.js';
import { answerInput, askInput, expireInputs, jobInput } from './input.js';
import { PostgresIdempotencyStore } from './idempotency.js';
import { PostgresApiKeyStore } from './keys.js';
import { NotificationListener } from './listener.js';
import { migrate } from './migrate.js';
import { PostgresOperationStore } from './operations.js';
import { createPostgresRetention } from './retention.js';
import { PostgresRouteStore } from './routes.js';
import { PgRunner } from './runner.js';
import { PostgresAdminSessionStore } from './sessions.js';
import { pruneWatches, unwatchEvents, watchEvents } from './watchers.js';
import { complete, fail, finishCanceled, release } from './settle.js';
import { nextRunAt, stats } from './stats.js';
import { appendStreamEvent, pruneStreamEvents, streamEventsAfter, type StreamDb } from './stream-events.js';
import {
  acceptWebhook,
  getWebhook,
  listWebhooks,
  replayWebhook,
  webhookBacklog,
  type InboxDb,
} from './webhooks.js';

/** Options of {@link openPostgresStore}; validated at open (defaults: {@link POSTGRES_STORE_DEFAULTS}). */
export interface PostgresStoreOptions {
  /**
   * A libpq connection URL, e.g. `postgres://user:pass@host:5432/db` (docs/architecture.md#storage:
   * `DATABASE_URL`).
   */
  url: string;
  /** Source of every stored time (default: the system clock; tests pass a `FakeClock`). */
  clock?: Clock;
  /**
   * The PostgreSQL schema holding the tables (default `breakwater`), created when missing. Its
   * notifications use the channel `<schema>_jobs`, so stores on different schemas never hear each other
   * (tests use a fresh schema per suite). At most 58 bytes, so the channel name fits PostgreSQL's 63.
   */
  schema?: string;
  /** Most pooled connections for queries (integer >= 1, default 10); LISTEN uses one more of its own. */
  poolSize?: number;
}

/** Defaults of {@link PostgresStoreOptions}. */
export const POSTGRES_STORE_DEFAULTS = { schema: 'breakwater', poolSize: 10 } as const;

/** Longest schema name: PostgreSQL identifiers hold 63 bytes, and the channel adds `_jobs`. */
const MAX_SCHEMA_BYTES = 63 - '_jobs'.length;

/** Checks {@link PostgresStoreOptions} and applies {@link POSTGRES_STORE_DEFAULTS}. */
const parseOptions = defineOptions<PostgresStoreOptions>()('openPostgresStore', {
  url: o.string().min(1),
  clock: o.clock(),
  schema: o
    .custom<string>(
      (schema) =>
        typeof schema === 'string' &&
        schema.length > 0 &&
        !schema.includes('\0') &&
        Buffer.byteLength(schema) <= MAX_SCHEMA_BYTES,
      `a non-empty name of at most ${MAX_SCHEMA_BYTES} bytes without NUL`,
    )
    .default(POSTGRES_STORE_DEFAULTS.schema),
  poolSize: o.number().int().min(1).default(POSTGRES_STORE_DEFAULTS.poolSize),
});

/**
 * Opens the PostgreSQL {@link JobStore} (docs/architecture.md#storage, distributed mode): migrates the
 * schema (safe when several processes start at once), then starts listening for notifications before it
 * resolves, so the caller hears everything committed from then on.
 *
 * Several processes share one schema: claims use `FOR UPDATE SKIP LOCKED`, and notifications travel by
 * LISTEN/NOTIFY to every process, the sender included (a lone process hears its own, shortly after the
 * commit). Each operation is one statement or one transaction; times come from `clock` as BIGINT ms.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `openPostgresStore`) naming every bad option;
 *   the connection's error when the database is unreachable or the migration fails (nothing is left open
 *   then).
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const { url, clock, schema, poolSize } = parseOptions(options);

  const pool = new pg.Pool({ connectionString: url, max: poolSize, types: storeTypes });
  // An idle pooled connection that fails (server restart) emits 'error' on the pool; unhandled, that would
  // crash the process. The pool has already dropped it, and the next query opens a fresh one.
  pool.on('error', () => undefined);

  const notifications = new EventSource<StoreNotification>();
  const listener = new NotificationListener(url, `${schema}_jobs`, (n) => notifications.emit(n));
  try {
    await migrate(pool, schema, clock.now());
    await listener.start();
  } catch (error) {
    await listener.close();
    await pool.end().catch(() => undefined);
    throw error;
  }
  const s = quoteIdent(schema);
  return new PostgresJobStore(
    new PgRunner(pool, clock, schema),
    {
      pool,
      jobs: `${s}.jobs`,
      events: `${s}.job_events`,
      watchers: `${s}.job_watchers`,
      claimJobs: `${s}.claim_jobs`,
      clock,
    },
    { pool, streams: `${s}.streams`, streamEvents: `${s}.stream_events`, clock },
    { pool, jobs: `${s}.jobs`, inbox: `${s}.webhook_inbox`, clock },
    listener,
    notifications,
  );
}

/** A watch that registered nothing (no such job). */
const NO_WATCH = { unwatch: (): Promise<void> => Promise.resolve() };

/**
 * The {@link JobStore}, {@link StreamEventStore} and {@link WebhookInboxStore} over one pool and one LISTEN
 * connection, with the {@link StoreFacets} on the same pool; each method is in its own file.
 */
class PostgresJobStore implements JobStore, StreamEventStore, WebhookInboxStore, StoreFacets {
  readonly idempotency: PostgresIdempotencyStore;
  readonly operations: PostgresOperationStore;
  readonly audit: PostgresAuditStore;
  readonly counters: PostgresCounterStore;
  readonly routes: PostgresRouteStore;
  readonly keys: PostgresApiKeyStore;
  readonly sessions: PostgresAdminSessionStore;
  readonly retention: RetentionStore;
  /** Watches of this store not yet unwatched, `[jobId, watcher]`. */
  private readonly watches = new Set<readonly [string, string]>();

  constructor(
    /** The pool, clock and schema every aggregate shares, and the store's closed state. */
    private readonly runner: PgRunner,
    private readonly db: Db,
    private readonly streamDb: StreamDb,
    private readonly inboxDb: InboxDb,
    private readonly listener: NotificationListener,
    private readonly notifications: EventSource<StoreNotification>,
  ) {
    this.idempotency = new PostgresIdempotencyStore(runner);
    this.operations = new PostgresOperationStore(runner);
    this.audit = new PostgresAuditStore(runner);
    this.counters = new PostgresCounterStore(runner);
    this.routes = new PostgresRouteStore(runner);
    this.keys = new PostgresApiKeyStore(runner);
    this.sessions = new PostgresAdminSessionStore(runner);
    this.retention = createPostgresRetention(runner);
  }

  enqueue(job: NewJob): Promise<{ job: JobRecord; created: boolean }> {
    return this.open().then(() => enqueue(this.db, job));
  }

  get(id: string): Promise<JobRecord | undefined> {
    return this.open().then(() => get(this.db, id));
  }

  list(filter?: JobFilter): Promise<JobRecord[]> {
    return this.open().then(() => list(this.db, filter));
  }

  claim(options: {
    owner: string;
    types: readonly string[];
    limit: number;
    leaseMs: number;
    exclude?: readonly string[];
  }): Promise<Claim[]> {
    return this.open().then(() => claim(this.db, options));
  }

  heartbeat(lease: LeaseRef, leaseMs: number): Promise<{ ok: boolean; cancelRequested: boolean }> {
    return this.open().then(() => heartbeat(this.db, lease, leaseMs));
  }

  appendRunEvent(
    lease: LeaseRef,
    type: 'job.progress' | 'job.partial',
    payload: unknown,
  ): Promise<JobEvent | undefined> {
    return this.open().then(() => appendRunEvent(this.db, lease, type, payload));
  }

  complete(lease: LeaseRef, result: unknown): Promise<JobEvent | undefined> {
    return this.open().then(() => complete(this.db, lease, result));
  }

  fail(lease: LeaseRef, error: JobError, retryAt?: number): Promise<JobEvent | undefined> {
    return this.open().then(() => fail(this.db, lease, error, retryAt));
  }

  finishCanceled(lease: LeaseRef): Promise<JobEvent | undefined> {
    return this.open().then(() => finishCanceled(this.db, lease));
  }

  release(lease: LeaseRef): Promise<boolean> {
    return this.open().then(() => release(this.db, lease));
  }

  cancel(id: string): Promise<JobRecord | undefined> {
    return this.open().then(() => cancel(this.db, id));
  }

  retryFailed(id: string): Promise<{ job: JobRecord; retried: boolean } | undefined> {
    return this.open().then(() => retryFailed(this.db, id));
  }

  askInput(lease: LeaseRef, request: InputRequest | readonly InputRequest[]): Promise<JobEvent | undefined> {
    return this.open().then(() => askInput(this.db, lease, request));
  }

  jobInput(id: string): Promise<JobInput | undefined> {
    return this.open().then(() => jobInput(this.db, id));
  }

  answerInput(id: string, key: string, answer: unknown): Promise<InputAnswerOutcome | undefined> {
    return this.open().then(() => answerInput(this.db, id, key, answer));
  }

  expireInputs(types: readonly string[]): Promise<InputExpiry> {
    return this.open().then(() => expireInputs(this.db, types));
  }

  events(jobId: string, afterSeq?: number, limit?: number): Promise<JobEvent[]> {
    return this.open().then(() => events(this.db, jobId, afterSeq, limit));
  }

  stats(): Promise<JobStats> {
    return this.open().then(() => stats(this.db));
  }

  nextRunAt(types: readonly string[], exclude?: readonly string[]): Promise<number | null> {
    return this.open().then(() => nextRunAt(this.db, types, exclude));
  }

  appendStreamEvent(streamId: string, message: unknown): Promise<string> {
    return this.open().then(() => appendStreamEvent(this.streamDb, streamId, message));
  }

  streamEventsAfter(eventId: string, limit?: number): Promise<StreamEventsPage | undefined> {
    return this.open().then(() => streamEventsAfter(this.streamDb, eventId, limit));
  }

  pruneStreamEvents(olderThanMs?: number): Promise<number> {
    return this.open().then(() => pruneStreamEvents(this.streamDb, olderThanMs));
  }

  acceptWebhook(
    delivery: InboxDelivery,
    job: InboxJob,
  ): Promise<{ duplicate: boolean; record: InboxRecord }> {
    return this.open().then(() => acceptWebhook(this.inboxDb, delivery, job));
  }

  getWebhook(source: string, eventId: string): Promise<InboxRecord | undefined> {
    return this.open().then(() => getWebhook(this.inboxDb, source, eventId));
  }

  listWebhooks(filter?: InboxFilter): Promise<InboxRecord[]> {
    return this.open().then(() => listWebhooks(this.inboxDb, filter));
  }

  webhookBacklog(source: string): Promise<number> {
    return this.open().then(() => webhookBacklog(this.inboxDb, source));
  }

  replayWebhook(source: string, eventId: string, job: InboxJob): Promise<InboxRecord | undefined> {
    return this.open().then(() => replayWebhook(this.inboxDb, source, eventId, job));
  }

  /** Listeners hear notifications until disposed or until the store closes. */
  subscribe(listener: (notification: StoreNotification) => void): Disposable {
    return this.notifications.on(listener);
  }

  pruneWatches(olderThanMs?: number): Promise<number> {
    return this.open().then(() => pruneWatches(this.db, olderThanMs));
  }

  /** Registers a row in `job_watchers` (see `watchers.ts`); `close` removes the ones still registered. */
  async watchEvents(jobId: string): Promise<{ unwatch(): Promise<void> }> {
    await this.open();
    const watcher = await watchEvents(this.db, jobId);
    if (watcher === undefined) return NO_WATCH;
    const watch = [jobId, watcher] as const;
    if (this.runner.closed) {
      // close() began while this watch was in flight and has removed the watches it knew: remove this one.
      await unwatchEvents(this.db, [watch]).catch(() => undefined);
      return NO_WATCH;
    }
    this.watches.add(watch);
    let unwatched: Promise<void> | undefined;
    return {
      unwatch: () =>
        (unwatched ??= this.watches.delete(watch) ? unwatchEvents(this.db, [watch]) : Promise.resolve()),
    };
  }

  /**
   * Stops listening, then ends the pool once queries in flight have returned their connections. Idempotent:
   * every call returns the same promise. Later operations reject.
   */
  close(): Promise<void> {
    return this.runner.close(async () => {
      // Best effort: a watch left behind only costs notifications of its job.
      await unwatchEvents(this.db, [...this.watches]).catch(() => undefined);
      this.watches.clear();
      await this.listener.close();
      await this.db.pool.end();
    });
  }

  /** Resolves while the store is open; rejects with a clear error once {@link close} was called. */
  private open(): Promise<void> {
    return this.runner.run(() => undefined);
  }
}
