import type { Clock, Disposable, Listener, Logger } from '../core/index.js';
import type { Backoff } from '../policy/index.js';
import type { InputRequest, JobEvent, JobFilter, JobRecord, JobStats, JobStore } from '../store/index.js';
import type { InputAnswer, RequestInputOptions, RequestInputsQuestion } from './input.js';
import type { RespondOptions } from './respond.js';

/**
 * Options of {@link createJobs}; validated at construction (an `OptionsError`, a RangeError with code
 * `invalid_options` and owner `createJobs`, names every bad option).
 */
export interface JobsOptions {
  /** Where jobs and their events live (SQLite or PostgreSQL, see `store/`). Required. */
  store: JobStore;
  /** Source of time and timers (default the system clock; tests pass a `FakeClock`). */
  clock?: Clock;
  /** This worker's name on its leases (default `${hostname}:${pid}:${random}`). Non-empty string. */
  owner?: string;
  /** Lease length in ms (integer > 0, default 30 000): how long a silent worker keeps a job. */
  leaseMs?: number;
  /** Heartbeat interval in ms (integer > 0 and < `leaseMs`, default `leaseMs / 3` rounded down). */
  heartbeatMs?: number;
  /**
   * Safety-net poll in ms (integer > 0, default 5 000): wake-ups are pushed by the store, and a timer for the
   * store's `nextRunAt` covers delayed jobs and the lease expiry of a lost worker's job; this only covers what
   * nothing announces: lost notifications (PostgreSQL reconnects, another SQLite process) and a lease taken by
   * another worker after this one last read `nextRunAt`.
   */
  pollMs?: number;
  /**
   * Where each run's end is logged (`job run ended`: `job_id`, `job_type`, `attempt`, `outcome`,
   * `duration_ms`, and `code`/`err` for a failure; pino-compatible, `app.log` fits). Default: the process
   * logger (`setLogger`), and none until one is set.
   */
  logger?: Logger;
}

/**
 * Defaults of {@link JobsOptions} and {@link DefineJobOptions} (docs/architecture.md#defaults: 5 attempts,
 * base 1 s, ×2).
 */
export const JOBS_DEFAULTS = {
  leaseMs: 30_000,
  pollMs: 5_000,
  concurrency: 1,
  maxAttempts: 5,
  backoff: { baseMs: 1_000, factor: 2, maxMs: 300_000, jitter: 'full' },
  maxRetryWaitMs: 3_600_000,
  graceMs: 10_000,
} as const;

/** What a handler gets for one run of a job. */
export interface JobContext<P = unknown> {
  /** The JSON payload given at enqueue (as read back from the store). */
  payload: P;
  jobId: string;
  /** This run's number, 1 for the first (a reclaim after a lost worker counts one more). */
  attempt: number;
  /**
   * Aborts when the run must stop; its reason is a BreakwaterError: `canceled` (a cancel request, or the
   * worker's shutdown grace ran out, or the lease was lost) or `timeout` (the job's `timeoutMs`).
   */
  signal: AbortSignal;
  /**
   * Reports progress as `job.progress` `{ step, total, message? }`, throttled: written when `step` differs
   * from the last written one, when `step / total` moved by >= 0.1 since it, or for the final step
   * (`step >= total`) once. Resolves when written or skipped; never rejects (a write error becomes a warning).
   * @throws BreakwaterError `invalid_payload` (as a rejection) unless `step` >= 0 and `total` > 0 are finite.
   */
  progress(step: number, total: number, message?: string): Promise<void>;
  /**
   * Publishes a partial result as `job.partial` `{ data }` (not throttled).
   * @throws BreakwaterError `invalid_payload` (as a rejection) when `data` is not JSON-serializable.
   */
  partial(data: unknown): Promise<void>;
  /**
   * Asks the user a form question and resolves with the answer, `{ action: 'accept', content }` (content
   * fits `options.schema`; `{}` or absent without one) or `{ action: 'decline' | 'cancel' }`: the same
   * question and answer as a synchronous call's `ctx.requestInput` (MCP `ElicitResult`). By durable
   * replay: with no stored answer for the question's key, the run ends here, the job waits in
   * `input_required` (no worker holds it) and this promise never settles; once answered (`Jobs.respond`, the
   * MCP tool `respond_to_job`), the job runs again FROM THE START and this call resolves with the stored
   * answer at once. So the code before a question runs again on every answer: it must be idempotent, or
   * guarded (an idempotency key, the operation ledger). Do not catch what it throws. Answers are replayed by
   * key: the call's ordinal in the run (`'0'`, `'1'`, …) or `options.key`.
   * @throws BreakwaterError `invalid_payload` (as a rejection; the run fails for good) for bad options, a job
   *   with an ordering key, or more questions than the type's `maxInputRounds`.
   */
  requestInput(options: RequestInputOptions): Promise<InputAnswer>;
  /**
   * Asks several form questions at once, keyed by the map's keys (each 1..64 of `A-Za-z0-9_.:-`, the
   * question's replay key): `{ size: { message, schema }, note: { message, timeoutMs } }` resolves with
   * `{ size: answer, note: answer }`, the same shape as a synchronous call's `ctx.requestInputs` of form
   * questions. Every question without a stored answer is open at once: the job stays `input_required` until
   * each one is answered (`Jobs.respond` per key, in any order), then reruns from the start as with
   * {@link requestInput}. It counts as one question against `maxInputRounds`; with several `timeoutMs`, the
   * job times out at the earliest.
   * @throws BreakwaterError `invalid_payload` (as a rejection; the run fails for good) as {@link requestInput},
   *   and for an empty map, more than 16 questions, or a key that breaks the key rule.
   */
  requestInputs<K extends string>(
    questions: Record<K, RequestInputsQuestion>,
  ): Promise<Record<K, InputAnswer>>;
}

/** Runs one job; its resolved value (JSON, `undefined` stored as null) becomes the result. */
export type JobHandler<P = unknown> = (context: JobContext<P>) => unknown;

/** Options of {@link Jobs.defineJob}; validated (an `OptionsError`, owner `defineJob`, names every bad option). */
export interface DefineJobOptions {
  /** Most runs of this type at once in this process (integer >= 1, default 1). */
  concurrency?: number;
  /** Per-run limit in ms (integer > 0), unless the job sets its own; default none. */
  timeoutMs?: number;
  /** Most runs per job, the first included (integer >= 1, default 5); a job's own value wins. */
  maxAttempts?: number;
  /**
   * Delay before each retry of a transient failure (`next(retry, 0)`, retry = the attempt that failed).
   * Default: exponential, base 1 s, ×2, full jitter, capped at 5 min. The wait the failure carried wins when
   * it ends later: the next attempt runs at `max(now + delay, now + retryAfterMs)` (docs/jobs.md, "Retries").
   */
  backoff?: Backoff;
  /**
   * Longest wait carried by a failure (its `retryAfterMs`: an open breaker's remaining time, a dependency's
   * `Retry-After`, a limit's reset) that a retry waits out, in ms (integer >= 0, default 3 600 000, one hour).
   * A failure that asks for longer is not retried: the job ends `failed` (the dead letter) at once, its error
   * keeping the wait (`retryAt`), rather than parked past this bound or retried inside the wait.
   */
  maxRetryWaitMs?: number;
  /** Most questions (`ctx.requestInput` that waited) one job of this type may ask (integer in 1..100, default 10). */
  maxInputRounds?: number;
}

/** Options of {@link Jobs.enqueue}; invalid values reject with BreakwaterError `invalid_payload` (400). */
export interface EnqueueOptions {
  /** Same `(type, key)` returns the existing job (1..255 characters). */
  idempotencyKey?: string;
  /**
   * One entity's jobs one at a time, in enqueue order (1..255 characters, e.g. an order id; any job type):
   * the job waits while an earlier job with the same key is pending (its retry backoff included) or any job
   * with the key runs. An earlier job that ended `failed` (dead letter) or `canceled` no longer holds it up.
   */
  orderingKey?: string;
  /** Run no earlier than this many ms from now (finite >= 0, default 0). */
  delayMs?: number;
  /** Higher runs first among due jobs (32-bit integer, default 0). */
  priority?: number;
  /** Overrides the type's `maxAttempts` (integer in [1, 2^31 - 1]). */
  maxAttempts?: number;
  /** Overrides the type's `timeoutMs` (integer > 0). */
  timeoutMs?: number;
  /**
   * The principal id that owns the job (core's `Principal.id`, 1..512 characters without NUL), or null for
   * none; only the owner and `admin` see and cancel the job over HTTP and MCP
   * (docs/architecture.md#identity-and-ownership). Default: the current principal,
   * `PrincipalContext.get()?.id`, so a tool or route that enqueues while serving a request gives the job to
   * its caller; null outside any (a job the gateway makes for itself: only `admin` sees it). An enqueue that
   * returns an existing job (same idempotency key) leaves that job's owner as it is.
   */
  owner?: string | null;
}

/** Options of {@link Jobs.stop}. */
export interface StopOptions {
  /**
   * How long running handlers may finish before they are aborted and their leases released (ms, finite >= 0,
   * default 10 000).
   */
  graceMs?: number;
}

/** Options of {@link Jobs.subscribe}. */
export interface SubscribeOptions {
  /**
   * Called once when the subscription ends by itself: after the terminal event (no argument), or with a
   * BreakwaterError `not_found` when the job does not exist. Not called after `dispose()`.
   */
  onEnd?: (error?: Error) => void;
}

/** The jobs runtime: a queue over a {@link JobStore} and a worker running this process's job types. */
export interface Jobs {
  /**
   * Registers the handler of `type` (once per type).
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `defineJob`) naming every bad option, and
   *   `type` when it is empty or already defined.
   */
  defineJob<P = unknown>(type: string, handler: JobHandler<P>, options?: DefineJobOptions): void;
  /**
   * Adds a job (or returns the existing one for its idempotency key) and resolves with its id.
   * @throws BreakwaterError `invalid_payload` (status 400, nothing written) for a type not defined in this
   *   process, a payload with no JSON form (top-level undefined or function, BigInt, NaN, a cycle) or a bad
   *   option; members that are undefined or functions are dropped, as `JSON.stringify` does.
   */
  enqueue(type: string, payload: unknown, options?: EnqueueOptions): Promise<string>;
  get(id: string): Promise<JobRecord | undefined>;
  /**
   * The store's filter: status, type, `owner`, `createdBefore`, keyset `beforeId`, `limit`; newest first. Not
   * checked against the current principal: this is the application's own view (the HTTP and MCP fronts pass
   * the caller's `owner` themselves).
   */
  list(filter?: JobFilter): Promise<JobRecord[]>;
  /**
   * Cancels a pending job at once, or asks a running one to stop (its handler's signal aborts within one
   * heartbeat); a finished job is returned unchanged.
   * @throws BreakwaterError `not_found` (404) when the job does not exist.
   */
  cancel(id: string): Promise<JobRecord>;
  /**
   * Puts a dead-lettered (`failed`) job back to `pending` with its attempts reset.
   * @throws BreakwaterError `not_found` (404) when it does not exist; `invalid_payload` (400, details
   *   `{ status }`) when it is not `failed`.
   */
  retry(id: string): Promise<JobRecord>;
  /** Counts by status and the age of the oldest due pending job. */
  stats(): Promise<JobStats>;
  /**
   * Answers a question a job waits on (docs/jobs.md, "Asking for input"): stores `answer` under `key` and,
   * once no question of the job is left open (`ctx.requestInputs` opens several), puts it back to `pending`;
   * its handler reruns and `ctx.requestInput(s)` returns the answers. Resolves the job after the step. The
   * MCP tool `respond_to_job`, `POST /jobs/:id/input` and the tasks extension's `tasks/update` call it.
   * Nothing is stored when it throws.
   * @param key the key of the question (`inputRequest(id).key`).
   * @param answer the user's answer, `{ action: 'accept', content? }` (content: an object of the question
   *   schema's fields) or `{ action: 'decline' | 'cancel' }` (MCP `ElicitResult`).
   * @throws BreakwaterError `not_found` (404) when the job does not exist or `options.principal` may not see
   *   it (not its owner, not `admin`); `input_not_awaited` (409, details `{ status, key?, keys? }`) when the
   *   job is not waiting for input, or `key` is not open (`details.key` the first open, `keys` all when
   *   several); `invalid_payload` (400) for a bad key, an answer that is not `{ action, content? }` or whose
   *   content does not fit the schema (details `{ problems }`);
   *   `payload_too_large` (413) past 64 KiB of JSON; `input_timeout` (408) when the question expired.
   */
  respond(id: string, key: string, answer: unknown, options?: RespondOptions): Promise<JobRecord>;
  /**
   * The (first) question a job waits on (`key`, `message`, `schema`, `askedAt`, `expiresAt`), null when it waits on
   * none, undefined when it does not exist. Not checked against the current principal (as `get`).
   */
  inputRequest(id: string): Promise<InputRequest | null | undefined>;
  /**
   * Replays the job's stored events with `seq > fromSeq`, then follows new ones, in seq order, each once,
   * until the terminal event (`job.completed`, `job.failed`, `job.canceled`), after which it ends itself.
   */
  /**
   * Hears each terminal event (`job.completed`, `job.failed`, `job.canceled`) that this runtime's worker
   * wrote, right after its commit: one call per job end, in the process that ran it (never for a pending job
   * canceled by `cancel`, nor for runs of other processes). For audit logs and metrics; a listener that
   * throws breaks nothing.
   */
  onSettled(listener: (event: JobEvent) => void): Disposable;
  /**
   * Hears each run this runtime's worker starts, right after its claim and before its handler is called
   * (every attempt; a reclaim of a lost worker's job too). For metrics and dashboards; a listener that throws
   * breaks nothing. With no listener the worker builds no event.
   */
  onStarted(listener: Listener<JobStartedEvent>): Disposable;
  /**
   * Hears each run of this runtime's worker ending, once what it ended with is written (or known not to be):
   * one call per {@link Jobs.onStarted} call. For metrics; a listener that throws breaks nothing.
   */
  onRunEnded(listener: Listener<JobRunEndedEvent>): Disposable;
  subscribe(
    jobId: string,
    fromSeq: number,
    listener: (event: JobEvent) => void,
    options?: SubscribeOptions,
  ): Disposable;
  /** The same as {@link Jobs.subscribe}, as an async iterator that ends after the terminal event. */
  events(jobId: string, fromSeq?: number): AsyncIterable<JobEvent>;
  /** Starts claiming the defined types. Idempotent. @throws Error after `stop()`. */
  start(): void;
  /**
   * Stops claiming, lets running handlers finish for up to `graceMs`, then aborts the rest (signal reason
   * BreakwaterError `canceled`) and releases their leases (the run is not counted). Resolves when every run
   * has settled or was abandoned (a handler that ignores its signal, see the worker's docs).
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `stop`) for a bad `graceMs`.
   */
  stop(options?: StopOptions): Promise<void>;
}

/** A run that starts (see {@link Jobs.onStarted}). Times are ms since the epoch on the runtime's clock. */
export interface JobStartedEvent {
  readonly jobId: string;
  readonly type: string;
  /** This run's number: 1 for the first; a retry, or a reclaim after a lost worker, counts one more. */
  readonly attempt: number;
  /**
   * When the job became due for this run: for a first attempt its enqueue time plus any `delayMs`; for a
   * retry the end of its backoff; for a reclaim the first run's due time.
   */
  readonly runAt: number;
  /** When the job was enqueued (on the store's clock). */
  readonly createdAt: number;
  /** When the worker started this run. */
  readonly startedAt: number;
}

/**
 * How a run ended (see {@link Jobs.onRunEnded}):
 * - `completed`, `failed` (the dead letter: permanent, or the last attempt), `retrying` (a transient failure
 *   with attempts left), `canceled`: what the run wrote;
 * - `released`: the worker stopped and gave the lease back (the run is not counted);
 * - `input_required`: the handler asked a question with no stored answer; the job waits for it (the run is
 *   not counted);
 * - `lost`: nothing of this run was written: its lease went to another run, or its settle was refused (stale
 *   fencing token) or failed; the job's next owner decides its end.
 */
export type JobRunOutcome =
  'completed' | 'failed' | 'retrying' | 'canceled' | 'released' | 'input_required' | 'lost';

/** A run that ended (see {@link Jobs.onRunEnded}). */
export interface JobRunEndedEvent {
  readonly jobId: string;
  readonly type: string;
  readonly attempt: number;
  readonly outcome: JobRunOutcome;
  /** The run's start, ms since the epoch on the runtime's clock (as in {@link JobStartedEvent}). */
  readonly startedAt: number;
  /** From the start to the handler settling, ms: the handler's run time, without the settle's write. */
  readonly durationMs: number;
}
