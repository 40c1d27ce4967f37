import type { Disposable } from '../core/index.js';
import type { InputAnswerOutcome, InputExpiry, InputRequest, JobInput } from './job-input.js';

/**
 * The job store contract (docs/jobs.md, docs/architecture.md#storage). Every method is one atomic step on
 * the backend (one SQLite transaction, one PostgreSQL transaction): a state change and the event it
 * produces are written together, so every job ends in exactly one terminal event. Implementations:
 * `store/sqlite` (embedded default) and `store/postgres` (distributed); one contract suite runs on both.
 *
 * Times are ms since the epoch, read from the store's injected `Clock` (tests pass a `FakeClock`). In a
 * distributed deployment every process must keep its clock in sync (NTP); lease lengths should be far
 * larger than any skew.
 */

/**
 * `pending` (waiting for `runAt`), `in_progress` (leased by a worker), `input_required` (its handler asked a
 * question and no worker holds it until the answer, see {@link JobStore.askInput}), and the three terminal
 * states.
 */
export type JobStatus = 'pending' | 'in_progress' | 'input_required' | 'completed' | 'failed' | 'canceled';

/** Every {@link JobStatus}, in lifecycle order (for filters, schemas and per-status counts). */
export const JOB_STATUSES: readonly JobStatus[] = [
  'pending',
  'in_progress',
  'input_required',
  'completed',
  'failed',
  'canceled',
];

/** Terminal states: a job in one of them never changes again, except `failed` → `pending` by {@link JobStore.retryFailed}. */
export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'canceled']);

/**
 * Default age (ms) past which {@link JobStore.pruneWatches} removes the watch of an ended job: a follower that
 * attaches to a job that just ended reads its events and removes its watch well within a minute.
 */
export const WATCH_PRUNE_AFTER_MS = 60_000;

/**
 * Longest job or operation `owner`, in UTF-16 code units: a principal id (`key:<id>`, `oauth:<issuer>
 * <subject>`, `webhook:<source>`, …; core's `Principal.id`) fits, and an index entry stays far below
 * PostgreSQL's B-tree row limit.
 */
export const MAX_OWNER_LENGTH = 512;

/** Why the last attempt failed, as stored (JSON): a BreakwaterError's code and message, or a handler's. */
export interface JobError {
  code: string;
  /** The failure's own message (may name hosts or tables: for operators, not for end users). */
  message: string;
  /** `transient` failures may be retried; `permanent` and `fatal` never. */
  kind: 'transient' | 'permanent' | 'fatal';
  /**
   * True when `message` was written for users (the failure was a `BreakwaterError`): a model may repeat it,
   * e.g. "The gift recommendation service is temporarily unavailable after repeated failures; try again in
   * about 30 seconds."
   */
  userFacing?: boolean;
  /** A dependency's own code when the failure carried one (`details.dependency_code`, e.g. `gift_service_unavailable`). */
  dependencyCode?: string;
  /** `unknown` when the failed run may have had its effect (a write cut off mid-flight). Default `failed`. */
  outcome?: 'failed' | 'unknown';
  /**
   * When the wait the failure carried ends, ms since the epoch on the job runtime's clock: the run's end plus
   * its `retryAfterMs` (an open breaker's remaining time, a dependency's `Retry-After`, a limit's reset).
   * Absent when no wait was known. Kept as a time, not a duration, so every reader says what is left of it
   * (`retry_after_ms`, see `jobs/error-view.ts`); a retry never runs before it (docs/jobs.md, "Retries").
   */
  retryAt?: number;
}

/**
 * The {@link JobError} as both backends store it (JSON): exactly its own fields, the optional ones only when
 * set, so SQLite and PostgreSQL keep the same value and an `Error` instance given by mistake does not lose
 * its `message` (an Error's own properties are not enumerable).
 */
export function storedJobError(error: JobError): JobError {
  const stored: JobError = { code: error.code, message: error.message, kind: error.kind };
  if (error.userFacing !== undefined) stored.userFacing = error.userFacing;
  if (error.dependencyCode !== undefined) stored.dependencyCode = error.dependencyCode;
  if (error.outcome !== undefined) stored.outcome = error.outcome;
  if (error.retryAt !== undefined) stored.retryAt = error.retryAt;
  return stored;
}

/** A job as stored. */
export interface JobRecord {
  /** `job_` + UUIDv7: sortable by creation time. */
  id: string;
  type: string;
  status: JobStatus;
  /** JSON value given at enqueue. */
  payload: unknown;
  /** JSON value of a completed job, else null. */
  result: unknown;
  /** The last failure (kept when a retry is scheduled), else null. */
  error: JobError | null;
  /** Runs started so far (a claim counts one; a reclaim after an expired lease counts one more). */
  attempts: number;
  /** Most runs allowed, the first included (>= 1). */
  maxAttempts: number;
  /** When it may run next (ms since the epoch). */
  runAt: number;
  /** Higher runs first among due jobs; default 0. */
  priority: number;
  /** Unique per `type` when set: enqueueing the same key again returns this job. */
  idempotencyKey: string | null;
  /**
   * Jobs sharing an ordering key run one at a time, in creation (id) order, whatever their type: see
   * {@link NewJob.orderingKey}. Null when the job has none.
   */
  orderingKey: string | null;
  /** Per-run limit in ms the worker enforces, or null for the job type's default. */
  timeoutMs: number | null;
  /** The worker holding the lease, while `in_progress`. */
  leaseOwner: string | null;
  /**
   * Fencing token: incremented by every claim of this job. A worker's heartbeat, progress and settle
   * carry the token it claimed with; a stale token is rejected and changes nothing.
   */
  leaseToken: number;
  /** When the current lease lapses (ms since the epoch), while `in_progress`. */
  leaseExpiresAt: number | null;
  /** Set by {@link JobStore.cancel} on a running job; its worker sees it on its next heartbeat. */
  cancelRequestedAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** When it reached a terminal state. */
  finishedAt: number | null;
  /**
   * The principal that started it (core's `Principal.id`: `key:…`, `oauth:…`, `local`, `webhook:<source>`),
   * or null for jobs made before owners were kept and by the gateway itself. Only that principal, or one with
   * the `admin` scope, sees the job over HTTP and MCP (docs/architecture.md#identity-and-ownership); the
   * store keeps it as given and never checks it.
   */
  owner: string | null;
}

/** What {@link JobStore.enqueue} needs; validated by the caller (jobs/), stored as given. */
export interface NewJob {
  type: string;
  payload: unknown;
  idempotencyKey?: string;
  /**
   * One entity's jobs in arrival order (e.g. an order id): a job with an ordering key is claimed only when
   * no job with the same key that was created before it (a smaller id) is `pending` or `in_progress`, and
   * no job with that key is `in_progress` at all. So a job waiting out its predecessor's retry backoff waits
   * too, while a predecessor that ended `failed` (the dead letter) or `canceled` no longer blocks: it is
   * surfaced for a retry by hand and must not stall the entity for good. Keys span job types.
   */
  orderingKey?: string;
  runAt: number;
  priority: number;
  maxAttempts: number;
  timeoutMs?: number;
  /** The principal id that owns the job ({@link JobRecord.owner}); absent or null: none. */
  owner?: string | null;
}

/** Event types (docs/jobs.md#events). Exactly one of the last three is written per job. */
export type JobEventType =
  | 'job.started'
  | 'job.progress'
  | 'job.partial'
  | 'job.retrying'
  | 'job.input_required'
  | 'job.input_received'
  | 'job.completed'
  | 'job.failed'
  | 'job.canceled';

/**
 * A stored job event. `seq` starts at 1 and grows by one per event of the same job, so an SSE client
 * resumes with `Last-Event-ID`; `eventId` is `${jobId}:${seq}`.
 */
export interface JobEvent {
  eventId: string;
  seq: number;
  type: JobEventType;
  jobId: string;
  timestamp: number;
  payload: unknown;
}

/** A claimed run: the job (now `in_progress`, `attempts` already counting this run) and its lease. */
export interface Claim {
  job: JobRecord;
  /** The fencing token to present on heartbeat, progress and settle. */
  token: number;
}

/** Identifies a lease holder's run of a job. */
export interface LeaseRef {
  id: string;
  token: number;
}

/** Filter for {@link JobStore.list}; results are newest first (by id), at most `limit` (default 100, max 1000). */
export interface JobFilter {
  status?: JobStatus | JobStatus[];
  type?: string;
  /** Only jobs created at or before this time (ms since the epoch): "pending for more than N minutes". */
  createdBefore?: number;
  /**
   * Only jobs of this owner (exact match; a principal id). Served by the `(owner, id)` index, newest first,
   * so "my jobs" costs the principal's jobs, not the table.
   */
  owner?: string;
  /** Keyset pagination: only jobs with an id smaller than this one. */
  beforeId?: string;
  limit?: number;
}

/** Counts by status and the age of the oldest due pending job (ms, null when none): a stuck-queue signal. */
export interface JobStats {
  /** Jobs per status, every {@link JOB_STATUSES} entry present. */
  counts: Record<JobStatus, number>;
  oldestPendingAgeMs: number | null;
}

/**
 * A push from the store: after a commit in this process and, on PostgreSQL, from other processes through
 * LISTEN/NOTIFY. `job_available` is sent when a job is enqueued or put back to `pending`, and for the next
 * pending job of an ordering key when the job ahead of it finishes (it may now be claimable). Delivery is
 * best effort (a dropped connection loses some, then says so with `external_change` once back): consumers
 * treat it as a hint to look at the store, never as the data itself.
 */
export type StoreNotification =
  | { kind: 'job_available'; type: string; runAt: number }
  | { kind: 'job_event'; jobId: string; seq: number; eventType: JobEventType }
  | { kind: 'cancel_requested'; jobId: string }
  /**
   * Something may have been committed that this store did not announce; what is unknown, so consumers
   * re-read (a worker runs a claim round, a follower reads new events). SQLite sends it when another
   * connection (another process on the same file) committed; PostgreSQL, whose notifications travel between
   * processes already, sends it once after its LISTEN connection reconnected, for what was notified while
   * it was down (lost).
   */
  | { kind: 'external_change' };

/**
 * The job store. Operations on a lease ({@link LeaseRef}) return `false` / `undefined` and change nothing
 * when the token is stale or the job is no longer `in_progress`: a worker that lost its lease can never
 * overwrite the run that replaced it.
 */
export interface JobStore {
  /**
   * Inserts a job, or returns the existing one with the same `(type, idempotencyKey)`; atomic under any
   * number of concurrent calls (a unique constraint, never check-then-insert). Notifies `job_available`.
   * Rejects with a TypeError naming the field, nothing written, when the job cannot be stored: `type` or a
   * key empty or holding NUL, `runAt` not a safe integer, `priority` not a 32-bit integer, `maxAttempts` not
   * in 1..2^31 - 1, `timeoutMs` not an integer > 0, `owner` not null and not 1..{@link MAX_OWNER_LENGTH}
   * characters without NUL.
   */
  enqueue(job: NewJob): Promise<{ job: JobRecord; created: boolean }>;

  get(id: string): Promise<JobRecord | undefined>;

  list(filter?: JobFilter): Promise<JobRecord[]>;

  /**
   * Leases up to `limit` due jobs of `types` (all types when empty), highest priority first, then earliest
   * `runAt`, then oldest. Due means: `pending` with `runAt <= now`, or `in_progress` with an expired lease
   * (a reclaim: the lost run counts as an attempt). Concurrent claims never lease the same job (SQLite: one
   * writer; PostgreSQL: `FOR UPDATE SKIP LOCKED`). Each claimed job gets `attempts + 1`, a new token,
   * `leaseOwner`, `leaseExpiresAt = now + leaseMs`, and a `job.started` event `{ attempt }`.
   *
   * A pending job with an ordering key is not due while it is blocked ({@link NewJob.orderingKey}): a claim
   * leases at most the oldest unfinished job of a key, and skips blocked jobs without changing the order of
   * the others. A reclaim is never blocked (its job already holds its key's turn).
   *
   * An expired lease whose job had a cancel request becomes `canceled` (`job.canceled`), and one whose job
   * has no attempts left becomes `failed` with error `lease_expired` (`job.failed`); neither is returned.
   *
   * `exclude` names jobs whose runs the caller holds (a worker's running jobs, see `jobs/worker.ts`): their
   * expired leases are left exactly as they are, neither reclaimed nor ended, so a worker paused past its own
   * lease (a GC pause, a slow fsync, a busy event loop) never hands itself a second run of a job it runs, and
   * never burns an attempt doing so. Other claimers (other processes) still reclaim them: to them the lease
   * lapsed. Pending jobs are never excluded.
   */
  claim(options: {
    owner: string;
    types: readonly string[];
    limit: number;
    leaseMs: number;
    /** Ids of jobs the caller runs: their expired leases are neither reclaimed nor ended. Default none. */
    exclude?: readonly string[];
  }): Promise<Claim[]>;

  /**
   * Extends a lease to `now + leaseMs`. `ok: false` when the lease is lost; `cancelRequested` tells the
   * worker to abort the handler.
   */
  heartbeat(lease: LeaseRef, leaseMs: number): Promise<{ ok: boolean; cancelRequested: boolean }>;

  /** Appends a `job.progress` or `job.partial` event for a run that still holds its lease. */
  appendRunEvent(
    lease: LeaseRef,
    type: 'job.progress' | 'job.partial',
    payload: unknown,
  ): Promise<JobEvent | undefined>;

  /** `in_progress` → `completed` with `result`; writes `job.completed` `{ result }`. */
  complete(lease: LeaseRef, result: unknown): Promise<JobEvent | undefined>;

  /**
   * Ends a failed run. With `retryAt` (and attempts left): back to `pending` at `retryAt`, error kept,
   * `job.retrying` `{ error, nextAttempt, runAt }`. Otherwise `failed` (the dead letter), `job.failed`
   * `{ error, attempts }`. A job with a cancel request is never put back: it ends `canceled`
   * (`job.canceled`), so the cancel is not lost.
   */
  fail(lease: LeaseRef, error: JobError, retryAt?: number): Promise<JobEvent | undefined>;

  /** Ends a run that stopped because of a cancel request: `canceled`, `job.canceled` `{ attempts }`. */
  finishCanceled(lease: LeaseRef): Promise<JobEvent | undefined>;

  /**
   * Gives a lease back without counting the run (graceful shutdown): `pending`, `runAt = now`,
   * `attempts - 1`. No event. A job with a cancel request ends `canceled` instead (`job.canceled`).
   */
  release(lease: LeaseRef): Promise<boolean>;

  /**
   * Ends a run whose handler asked a question with no stored answer (docs/jobs.md, "Asking for input"):
   * `in_progress` → `input_required` with `request` (or every one of a non-empty list, all open at once)
   * stored, the lease cleared (no worker holds it, no expiry requeues it) and the run not counted
   * (`attempts - 1`, as {@link release}), `job.input_required` `{ request }` (the first; `{ request, requests }`
   * for several). Fenced like {@link complete}. A job with a cancel request ends `canceled` instead
   * (`job.canceled` `{ attempts }`).
   */
  askInput(lease: LeaseRef, request: InputRequest | readonly InputRequest[]): Promise<JobEvent | undefined>;

  /** The job's input state ({@link JobInput}: `NO_INPUT` when it never asked), or undefined when it does not exist. */
  jobInput(id: string): Promise<JobInput | undefined>;

  /**
   * Answers the open question `key` of an `input_required` job none of whose open questions has expired:
   * stores `answer` under `key`, `job.input_received` `{ key }`; when no question is left open, `pending` at
   * `runAt = now` and `job_available` notified, else it stays `input_required` (deadline: the earliest
   * `expiresAt` left). Anything else changes nothing ({@link InputAnswerOutcome}). Undefined when the job
   * does not exist.
   */
  answerInput(id: string, key: string, answer: unknown): Promise<InputAnswerOutcome | undefined>;

  /**
   * Ends up to `EXPIRE_INPUTS_BATCH` `input_required` jobs of `types` (all when empty) with an open
   * question whose `expiresAt` is not after now: `failed` with error `input_timeout` (permanent), `job.failed`
   * `{ error, attempts }`. Resolves the events written and the next `expiresAt` left (workers sweep then).
   */
  expireInputs(types: readonly string[]): Promise<InputExpiry>;

  /**
   * Cancels a job: `pending` or `input_required` → `canceled` at once (`job.canceled`); `in_progress` → `cancelRequestedAt`
   * set and `cancel_requested` notified (the worker finishes it); terminal → unchanged. Returns the job
   * after the step, or undefined when it does not exist.
   */
  cancel(id: string): Promise<JobRecord | undefined>;

  /**
   * Retries from the dead letter: a `failed` job back to `pending` with `attempts = 0` and `runAt = now`,
   * notifying `job_available` (`retried: true`). Any other status changes nothing (`retried: false`). Returns
   * the job after the step, or undefined when it does not exist.
   */
  retryFailed(id: string): Promise<{ job: JobRecord; retried: boolean } | undefined>;

  /** Events of a job with `seq > afterSeq`, in order, at most `limit` (default 1000). */
  events(jobId: string, afterSeq?: number, limit?: number): Promise<JobEvent[]>;

  stats(): Promise<JobStats>;

  /**
   * The earliest time a {@link JobStore.claim} of `types` (all when empty) could find work, or null when none could:
   * the minimum of the `runAt` of `pending` jobs and the `leaseExpiresAt` of `in_progress` ones (a lost
   * worker's job becomes reclaimable then, unless a heartbeat renews it first). When to look again; a time
   * not after now means work is due now. A job blocked by its ordering key is left out (its blocker counts
   * instead, when of the given types): the job it waits for announces its end with `job_available` for it.
   * The leases of `exclude` (jobs the caller runs, as in {@link JobStore.claim}) are left out: a claim with
   * the same `exclude` would not take them, so counting them would make the caller look again at once, forever.
   */
  nextRunAt(types: readonly string[], exclude?: readonly string[]): Promise<number | null>;

  /** Subscribes to {@link StoreNotification}s. */
  subscribe(listener: (notification: StoreNotification) => void): Disposable;

  /**
   * Asks for `job_event` notifications of `jobId` until `unwatch()` resolves. A follower calls it before it
   * reads the stored events: from its resolution on, every new event of the job is announced. On PostgreSQL
   * only watched jobs' events are notified (a NOTIFY makes its commit wait for a server-wide lock, so one
   * per event of every job would serialize all workers); SQLite announces every event anyway and this is a
   * no-op. A watch of a job that does not exist does nothing. The watch ends with the store's `close`;
   * a process that dies keeps its watches registered, which only costs notifications of those jobs, until
   * {@link pruneWatches} removes them once their job has ended.
   */
  watchEvents(jobId: string): Promise<{ unwatch(): Promise<void> }>;

  /**
   * Removes the watches (see {@link watchEvents}) of jobs that have ended (completed, failed, canceled) or no
   * longer exist, registered more than `olderThanMs` ago (default {@link WATCH_PRUNE_AFTER_MS}): a follower
   * stops at the job's terminal event and removes its own watch, so what is left is a dead process's. Live
   * watches of running jobs are never touched. Resolves with the number removed (always 0 on SQLite, which
   * keeps none). The gateway calls it with its other prunes.
   * @throws RangeError when `olderThanMs` is negative or not finite.
   */
  pruneWatches(olderThanMs?: number): Promise<number>;

  /** Closes connections and stops listening. Idempotent. */
  close(): Promise<void>;
}
