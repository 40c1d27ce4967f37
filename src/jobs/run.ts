import type { Span } from '@opentelemetry/api';
import {
  BreakwaterError,
  checkedJson,
  LogContext,
  type Clock,
  type EventSource,
  type Log,
  type TimerHandle,
} from '../core/index.js';
import { withSpan } from '../core/trace.js';
import type { Claim, InputRequest, JobEvent, JobStore, LeaseRef } from '../store/index.js';
import { withoutCarrier } from './carrier.js';
import { InputReplay } from './input.js';
import { emitRunEnded, emitStarted, endRunSpan, logRunEnd, observeRun } from './observe-run.js';
import { ProgressThrottle, progressError } from './progress.js';
import { failureOf as planFailure } from './run-failure.js';
import { endUnstarted, leaseIsLive, renewBeforeStart, type NotStartedReason } from './run-start.js';
import {
  abortOf,
  failureOf,
  RUNNING,
  stopRun,
  type BeforeLoss as Held,
  type HandlerOutcome,
  type RunState,
  type Running,
  type Stopped,
} from './run-state.js';
import type { JobContext, JobRunEndedEvent, JobRunOutcome, JobStartedEvent } from './types.js';
import type { JobType } from './validate.js';

/** What a run needs from its worker. */
export interface RunDeps {
  store: JobStore;
  clock: Clock;
  leaseMs: number;
  heartbeatMs: number;
  /** Reports a store failure that the run survives (a heartbeat or settle that threw). */
  warn(message: string, error: unknown): void;
  /** Hears every terminal event this run's settle wrote (see `Jobs.onSettled`). */
  ends: EventSource<JobEvent>;
  /** Hears the start of every run (see `Jobs.onStarted`). */
  starts: EventSource<JobStartedEvent>;
  /** Hears the end of every run (see `Jobs.onRunEnded`). */
  runEnds: EventSource<JobRunEndedEvent>;
  /** Where the run's end is logged. */
  log: Log;
  /** Told of each question a run of this worker parked its job on (the worker sweeps expiries). */
  inputAsked?(request: InputRequest): void;
}

/**
 * One run of one claimed job: calls the handler, heartbeats its lease, enforces its timeout, follows cancel
 * requests, and settles the lease in the store only after the handler has settled, so the next attempt never
 * starts while this one still runs.
 *
 * How a run ends, by what stopped it (the first that applies; `run-state.ts` holds the order):
 * - lease lost (a heartbeat answered `ok: false`: another claim took the job): the handler's signal aborts
 *   (`canceled`) and nothing is written; the run that replaced it owns the job.
 * - cancel requested (seen on a heartbeat or a `cancel_requested` notification): the signal aborts with
 *   BreakwaterError `canceled`; once the handler settles, `finishCanceled` (never retried).
 * - timeout (`job.timeoutMs` or the type's): the signal aborts with BreakwaterError `timeout`; once the
 *   handler settles, whatever it returned, the run is a transient `timeout` failure (retried if attempts are
 *   left).
 * - shutdown (the worker's grace ran out): the signal aborts with `canceled`; a handler that still returns a
 *   result completes the job, one that throws has its lease released (the run is not counted).
 * - otherwise: a result completes the job (it must be JSON-serializable, else the run fails permanently with
 *   `invalid_payload`); a failure is classified (core `classify`): transient with attempts left →
 *   `fail(lease, error, runAt)`, `runAt` the later of the type's backoff and the end of the wait the error
 *   carried (`retryAfterMs`, kept in the error as `retryAt`: `run-failure.ts`); permanent, fatal, the last
 *   attempt or a wait past `maxRetryWaitMs` → `fail(lease, error)`, the dead letter.
 *
 * Observed: the run is a `job <type>` span (CONSUMER, child of its enqueue's span when the job carries one,
 * see `carrier.ts`) active around the handler, and everything the run does runs in a `LogContext` with
 * `job_id`, `job_type` and the enqueuer's `correlation_id` and `tool`. Its end is one log line
 * (`job run ended`: `attempt`, `outcome`, `duration_ms`, and `code`/`err` for a failure; `warn` when the run
 * failed for good or was lost, else `info`).
 *
 * A handler that ignores its aborted signal: heartbeats go on for at most `leaseMs` after the abort, each one
 * extending the lease only up to `abortedAt + leaseMs`; then they stop and the run is abandoned. The lease
 * lapses at that time at the latest, another claim may take the job (counting an attempt), and this run's late
 * settle is then rejected by the fencing token. Until then no second run of the job can start anywhere.
 *
 * A run never starts its handler on a lease that has lapsed, or that would lapse before its first heartbeat
 * (`run-start.ts`): it starts at once while more than `heartbeatMs` of the claim's lease is left; otherwise
 * it first renews the lease with one fenced heartbeat and starts only if that left it a live lease. Lost,
 * failed or late, the handler is never called: the lease is left to its new owner, or released (the attempt
 * not counted), or a cancel seen there ends the job `canceled`; the run emits neither `onStarted` nor
 * `onRunEnded` and logs `job run not started`. The worker, for its part, never reclaims a job whose run it
 * holds (`worker.ts`).
 */
export class JobRun {
  readonly jobId: string;
  readonly lease: LeaseRef;
  /** Resolves once the handler has settled and the store was told (or told nothing, the lease being lost). */
  readonly finished: Promise<void>;
  /** Resolves when {@link finished} does, or earlier when the run is abandoned (lease lost or given up). */
  readonly released: Promise<void>;
  /**
   * Resolves as soon as the handler has settled, before the store is told: the worker's concurrency limit
   * counts handlers, so the slot can be claimed again in the same group commit as this run's settle.
   */
  readonly handlerSettled: Promise<void>;

  /**
   * The handler's signal, made when first read ({@link signal}): an AbortController costs more to make than
   * the rest of a no-op run's bookkeeping (docs/performance.md#core-policies-and-the-http-edge), and many
   * handlers never read their signal.
   */
  private controller: AbortController | undefined;
  /** What stopped the run, or is stopping it, and whether its handler settled (`run-state.ts`). */
  private state: RunState = RUNNING;
  private readonly throttle = new ProgressThrottle();
  /** When the handler started, on the runtime's clock (one clock read per run, for the run events). */
  private startedAt = 0;
  /** The run's span (the API's no-op span when no SDK records). */
  private readonly span: Span;
  private heartbeatTimer: TimerHandle | undefined;
  private timeoutTimer: TimerHandle | undefined;
  /** The run's questions (`ctx.requestInput`), made at the first call. */
  private input: InputReplay | undefined;
  /** Event writes of this run, chained so their seq follows the handler's call order. */
  private writes: Promise<unknown> = Promise.resolve();
  private resolveReleased!: () => void;
  private resolveHandlerSettled!: () => void;

  constructor(
    private readonly claim: Claim,
    private readonly jobType: JobType,
    private readonly deps: RunDeps,
  ) {
    this.jobId = claim.job.id;
    this.lease = { id: claim.job.id, token: claim.token };
    this.released = new Promise<void>((resolve) => (this.resolveReleased = resolve));
    this.handlerSettled = new Promise<void>((resolve) => (this.resolveHandlerSettled = resolve));
    const now = deps.clock.now();
    const run = leaseIsLive(claim.job, now, deps.heartbeatMs)
      ? () => {
          this.begin(now);
          return this.execute();
        }
      : () => this.renewThenExecute();
    const observed = observeRun(claim.job, jobType);
    this.span = observed.span;
    // Detached: a run must not carry the fields of the request whose enqueue woke the worker.
    this.finished = LogContext.runDetached(observed.fields, () =>
      withSpan(this.span, run, observed.parent),
    ).then(() => this.resolveReleased());
  }

  /** Starts the run's clocks (timeout, heartbeats) and announces it; the handler is called right after. */
  private begin(now: number): void {
    const { clock, starts } = this.deps;
    const job = this.claim.job;
    const timeoutMs = job.timeoutMs ?? this.jobType.timeoutMs;
    if (timeoutMs !== undefined) {
      this.timeoutTimer = clock.setTimeout(() => this.onTimeout(timeoutMs), timeoutMs);
    }
    this.scheduleHeartbeat();
    this.startedAt = now;
    if (starts.hasListeners) emitStarted(starts, job, now);
  }

  /**
   * The lease lapsed, or would before the first heartbeat, by the time the run got to start: renew it and
   * start the handler only on a lease that is again this run's, live; otherwise end without calling it
   * (`run-start.ts`).
   */
  private async renewThenExecute(): Promise<void> {
    const renewal = await renewBeforeStart(this.deps, this.lease, this.deps.warn);
    if (renewal.kind === 'lost') this.loseLease();
    else if (renewal.cancelRequested) this.requestCancel();
    if (renewal.kind === 'renewed' && this.state === RUNNING) {
      this.begin(this.deps.clock.now());
      return this.execute();
    }
    const stop = this.settle();
    this.resolveHandlerSettled();
    const reason: NotStartedReason =
      renewal.kind !== 'renewed'
        ? NOT_RENEWED[renewal.kind]
        : stop.kind === 'canceled'
          ? 'canceled'
          : 'shutdown';
    const outcome = await endUnstarted(this.deps, this.claim.job, this.lease, stop, reason);
    endRunSpan(this.span, outcome, undefined);
  }

  /** A cancel request reached this process: abort the handler (it ends `canceled`). */
  requestCancel(): void {
    this.stop('canceled', new BreakwaterError('canceled', { message: 'The job was canceled.' }));
  }

  /** The worker's grace period ran out: abort the handler, then release the lease. */
  abortForShutdown(): void {
    this.stop('shutdown', new BreakwaterError('canceled', { message: 'The worker is shutting down.' }));
  }

  private onTimeout(timeoutMs: number): void {
    this.timeoutTimer = undefined;
    const error = new BreakwaterError('timeout', {
      message: `The job ran longer than its timeout of ${timeoutMs} ms.`,
      details: { timeout_ms: timeoutMs },
    });
    this.stop('timeout', error);
  }

  /** Another claim holds the job now: abort the handler; nothing of this run is written any more. */
  private loseLease(): void {
    this.stop(
      'lost',
      new BreakwaterError('canceled', { message: "The job's lease was lost to another run." }),
    );
  }

  /** `kind` stopped the run (`run-state.ts` says whether it counts); the first stop aborts the signal. */
  private stop(kind: Stopped['kind'], reason: BreakwaterError): void {
    const before = this.state;
    if (before.kind === 'settled') return;
    this.state = stopRun(before, kind, reason, this.deps.clock.now());
    if (before === RUNNING && this.state !== RUNNING) this.controller?.abort(reason);
  }

  /** Fixes the run's end: later stops change nothing. Resolves the stop it ends with. */
  private settle(): Running | Stopped {
    const stop = this.state;
    if (stop.kind === 'settled') return stop.stop;
    this.state = stop === RUNNING ? SETTLED_RUNNING : { kind: 'settled', stop };
    return stop;
  }

  private scheduleHeartbeat(): void {
    this.heartbeatTimer = this.deps.clock.setTimeout(() => void this.beat(), this.deps.heartbeatMs);
  }

  private async beat(): Promise<void> {
    this.heartbeatTimer = undefined;
    const state = this.state;
    if (state.kind === 'settled' || state.kind === 'lost') return;
    const { store, clock, leaseMs } = this.deps;
    let extendMs = leaseMs;
    if (state.kind !== 'running') {
      // The handler ignores its signal: hold the lease at most leaseMs past the abort, then give it up.
      extendMs = state.abort.at + leaseMs - clock.now();
      if (extendMs <= 0) {
        this.resolveReleased();
        return;
      }
    }
    try {
      const answer = await store.heartbeat(this.lease, extendMs);
      if (this.state.kind === 'settled') return;
      if (!answer.ok) {
        this.loseLease();
        this.resolveReleased();
        return;
      }
      if (answer.cancelRequested) this.requestCancel();
    } catch (error) {
      // The fencing token protects the job; keep trying until the lease is given up.
      this.deps.warn(`heartbeat of job ${this.jobId} failed`, error);
    }
    if (this.state.kind !== 'settled') this.scheduleHeartbeat();
  }

  /** The handler's signal: aborted at once when made after the abort. */
  private get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      const abort = abortOf(this.state);
      if (abort !== undefined) this.controller.abort(abort.reason);
    }
    return this.controller.signal;
  }

  private context(): JobContext {
    const job = this.claim.job;
    const signal = (): AbortSignal => this.signal;
    return {
      payload: withoutCarrier(job.payload),
      jobId: job.id,
      attempt: job.attempts,
      get signal() {
        return signal();
      },
      progress: (step, total, message) => this.progress(step, total, message),
      partial: (data) => this.partial(data),
      requestInput: (options) => this.replay().request(options),
      requestInputs: (questions) => this.replay().requestMany(questions) as never,
    };
  }

  /** The run's questions, made at the first `requestInput(s)` call. */
  private replay(): InputReplay {
    return (this.input ??= new InputReplay(this.deps, this.claim.job, this.jobType.maxInputRounds));
  }

  private progress(step: number, total: number, message?: string): Promise<void> {
    const refused = progressError(step, total, message);
    if (refused !== undefined) return Promise.reject(refused);
    const payload = this.throttle.next(step, total, message);
    return payload === undefined ? Promise.resolve() : this.write('job.progress', payload);
  }

  private partial(data: unknown): Promise<void> {
    try {
      checkedJson(data);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.write('job.partial', { data });
  }

  private write(type: 'job.progress' | 'job.partial', payload: unknown): Promise<void> {
    const write = this.writes.then(async () => {
      if (this.state.kind === 'settled' || this.state.kind === 'lost') return;
      try {
        await this.deps.store.appendRunEvent(this.lease, type, payload);
      } catch (error) {
        this.deps.warn(`writing ${type} of job ${this.jobId} failed`, error);
      }
    });
    this.writes = write;
    return write;
  }

  private async execute(): Promise<void> {
    let outcome: HandlerOutcome;
    try {
      outcome = { ok: true, value: await this.jobType.handler(this.context()) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    this.resolveHandlerSettled();
    const { clock, runEnds, log } = this.deps;
    const logged = log.enabled('info');
    // Read only when someone listens: the hot path reads no clock here.
    const durationMs = runEnds.hasListeners || logged ? clock.now() - this.startedAt : 0;
    await this.writes;
    const stop = this.settle();
    if (this.timeoutTimer !== undefined) clock.clearTimeout(this.timeoutTimer);
    if (this.heartbeatTimer !== undefined) clock.clearTimeout(this.heartbeatTimer);
    let ended: JobRunOutcome = 'lost';
    if (stop.kind !== 'lost') {
      try {
        ended = await this.writeEnd(stop, outcome);
      } catch (error) {
        // The job stays leased until its lease lapses; a reclaim then runs it again.
        this.deps.warn(`settling job ${this.jobId} failed`, error);
      }
    }
    if (runEnds.hasListeners) emitRunEnded(runEnds, this.claim.job, ended, this.startedAt, durationMs);
    const failure = ended === 'input_required' ? undefined : failureOf(stop, outcome);
    endRunSpan(this.span, ended, failure);
    if (logged) logRunEnd(log, this.claim.job, ended, durationMs, failure);
  }

  /** Writes the run's end and tells `Jobs.onSettled` listeners; resolves what the run ended with. */
  private async writeEnd(stop: Held, outcome: HandlerOutcome): Promise<JobRunOutcome> {
    const event = await this.endEvent(stop, outcome);
    if (event === 'released') return event;
    const ends = this.deps.ends;
    if (event !== undefined && ends.hasListeners && TERMINAL_EVENTS.has(event.type)) ends.emit(event);
    return event === undefined ? 'lost' : (RUN_OUTCOMES[event.type] ?? 'lost');
  }

  /**
   * Writes the run's end by what stopped it (the order in the class docstring); resolves the event written,
   * `released` for a lease given back, undefined for a stale lease.
   */
  private async endEvent(stop: Held, outcome: HandlerOutcome): Promise<JobEvent | 'released' | undefined> {
    const { store } = this.deps;
    if (stop.kind === 'canceled') return store.finishCanceled(this.lease);
    if (stop.kind === 'timeout') return this.fail(stop.error);
    // A question without an answer parks the job, whatever the handler did after it (input.ts).
    const asked = this.input?.asked;
    if (asked !== undefined) {
      const event = await store.askInput(this.lease, asked);
      if (event?.type === 'job.input_required') for (const request of asked) this.deps.inputAsked?.(request);
      return event;
    }
    if (outcome.ok) {
      const result = outcome.value === undefined ? null : outcome.value;
      try {
        checkedJson(result);
      } catch (error) {
        const message = `The result of the job is not JSON-serializable: ${(error as Error).message}`;
        return this.fail(new BreakwaterError('invalid_payload', { message, cause: error }));
      }
      return store.complete(this.lease, result);
    }
    if (stop.kind === 'shutdown') return (await store.release(this.lease)) ? 'released' : undefined;
    return this.fail(outcome.error);
  }

  private async fail(cause: unknown): Promise<JobEvent | undefined> {
    const { store, clock } = this.deps;
    const { attempts, maxAttempts } = this.claim.job;
    const { error, runAt } = planFailure(cause, attempts, maxAttempts, this.jobType, clock.now());
    return runAt === undefined ? store.fail(this.lease, error) : store.fail(this.lease, error, runAt);
  }
}

/** The end of a run that nothing stopped. */
const SETTLED_RUNNING: RunState = Object.freeze({ kind: 'settled', stop: RUNNING });

/** Why a renewal before the start did not start the handler. */
const NOT_RENEWED = { lost: 'lease_lost', failed: 'renewal_failed', late: 'renewal_late' } as const;

const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['job.completed', 'job.failed', 'job.canceled']);

/** The run outcome of each end event a settle writes. */
const RUN_OUTCOMES: Readonly<Partial<Record<string, JobRunOutcome>>> = {
  'job.completed': 'completed',
  'job.failed': 'failed',
  'job.retrying': 'retrying',
  'job.canceled': 'canceled',
  'job.input_required': 'input_required',
};
