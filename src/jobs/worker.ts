import { AsyncResource } from 'node:async_hooks';
import {
  Deadline,
  type Clock,
  type Disposable,
  type EventSource,
  type Log,
  type TimerHandle,
} from '../core/index.js';
import type { Claim, JobEvent, JobStore, StoreNotification } from '../store/index.js';
import { JobRun, type RunDeps } from './run.js';
import type { JobRunEndedEvent, JobStartedEvent } from './types.js';
import type { JobType } from './validate.js';

/** What a worker needs. */
export interface WorkerDeps {
  store: JobStore;
  clock: Clock;
  owner: string;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  /** The defined types (read on every pump, so a type defined after `start()` is picked up). */
  types: ReadonlyMap<string, JobType>;
  warn(message: string, error: unknown): void;
  /** Hears every terminal event a run of this worker wrote (see `Jobs.onSettled`). */
  ends: EventSource<JobEvent>;
  /** Hears every run this worker starts (see `Jobs.onStarted`). */
  starts: EventSource<JobStartedEvent>;
  /** Hears every run of this worker ending (see `Jobs.onRunEnded`). */
  runEnds: EventSource<JobRunEndedEvent>;
  /** Where each run's end is logged. */
  log: Log;
}

/**
 * Claims and runs jobs of the defined types, at most `concurrency` runs per type in this process.
 *
 * Wake-ups are pushed: a `job_available` notification for a defined type (due now: claim; due later: a timer
 * for its `runAt`), a run that finished (a slot is free), a timer for the store's `nextRunAt`, which counts
 * running jobs at their lease expiry, so a lost worker's job is reclaimed when its lease lapses (the store
 * announces no such event; a lease renewed meanwhile just re-arms the timer). The only fixed delay is the
 * safety-net poll every `pollMs`, for what no push covers: a lost notification, or a job claimed by another
 * worker after this one last read `nextRunAt`. Claims are serialised: a wake-up during a claim round starts
 * another round after it, so no wake-up is lost and no two rounds race for the same slots.
 *
 * A slot is freed when its handler settles (before its settle is written), not when its run gives up the lease: a handler that ignores its
 * aborted signal keeps holding its slot in this process (the job itself may be reclaimed elsewhere once the
 * lease lapses, see `run.ts`), so this process never runs more than `concurrency` handlers of a type.
 *
 * No worker reclaims a job whose run it holds. Every claim and `nextRunAt` names the jobs this worker runs
 * (from the claim until the run has told the store its end) as `exclude`, and the store leaves their leases
 * alone, even lapsed ones: a worker that stalled past its own lease (a GC pause, a slow fsync, a busy event
 * loop) would otherwise hand itself a second run of the job while the first still ran, and burn an attempt.
 * Graphile Worker has the same rule in another form (a job locked by a worker is never fetched again until
 * that lock is released or is hours old). Another process may still reclaim the job once the lease lapsed
 * (to it this worker looks dead); the run then learns it from its next heartbeat or, when the lapse came
 * before its handler started, before starting it (`run.ts`), and the fencing token refuses its writes.
 */
export class Worker {
  /** Runs per type until they have finished (told the store), for cancel requests and `stop()`. */
  private readonly running = new Map<string, Set<JobRun>>();
  /** Handlers per type that have not settled yet: what the concurrency limit counts. */
  private readonly busy = new Map<string, number>();
  private subscription: Disposable | undefined;
  private pollTimer: TimerHandle | undefined;
  private wakeTimer: TimerHandle | undefined;
  private wakeAt = Infinity;
  /** The timer of the next input expiry sweep, and when it fires (see {@link sweepInputs}). */
  private inputTimer: TimerHandle | undefined;
  private inputSweepAt = Infinity;
  private sweeping = false;
  private pumping = false;
  private pumpAgain = false;
  /** A round is queued to start on the next tick (see wake). */
  private pumpScheduled = false;
  private started = false;
  private stopping = false;
  /**
   * The async context claim rounds (and so every run, its timers and its handler) start in. A wake-up often
   * comes from inside someone else's context: the enqueue of a tool call under a 10 s deadline, whose commit
   * notifies the worker. Without this, the run would inherit that caller's Deadline (and any other
   * AsyncLocalStorage value) and a job would fail with `deadline_exceeded` once the request's time was up.
   */
  private readonly scope = Deadline.exit(() => new AsyncResource('BreakwaterWorker'));

  /** What each run gets: the worker's deps, and its ear for questions with a timeout. */
  private readonly runDeps: RunDeps;

  constructor(private readonly deps: WorkerDeps) {
    this.runDeps = {
      ...deps,
      inputAsked: (request) => {
        if (request.expiresAt !== null) this.sweepInputsAt(request.expiresAt);
      },
    };
  }

  /** Starts claiming. Idempotent while running. @throws Error after {@link stop}. */
  start(): void {
    if (this.stopping) throw new Error('jobs: start() after stop(): create a new runtime instead');
    if (this.started) return;
    this.started = true;
    this.subscription = this.deps.store.subscribe((n) => this.onNotification(n));
    this.schedulePoll();
    this.wake();
    void this.sweepInputs();
  }

  /** Asks for a claim round (a type was defined, a slot freed). No-op unless started. */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    if (this.pumpScheduled) return;
    // The round starts on the next tick. A wake from a promise callback (a handler settling) queues it while
    // the microtask queue drains, and Node runs it once the queue is empty: handlers that settle together have
    // all freed their slots by then, so one claim takes them all and shares the store's next group commit
    // with those runs' settles. (Started at the first wake, the claim saw one free slot and the rest waited
    // for another round and another commit.) A wake from elsewhere (a store notification, a timer) only
    // starts its round a tick later.
    this.pumpScheduled = true;
    process.nextTick(this.startPump);
  }

  private readonly startPump = (): void => {
    this.pumpScheduled = false;
    if (!this.stopping) this.scope.runInAsyncScope(() => void this.pump());
  };

  /**
   * Stops claiming, waits up to `graceMs` for running handlers, then aborts the rest and releases their
   * leases. Resolves when every run has settled or was abandoned.
   */
  async stop(graceMs: number): Promise<void> {
    const { clock } = this.deps;
    this.stopping = true;
    if (this.pollTimer !== undefined) clock.clearTimeout(this.pollTimer);
    if (this.wakeTimer !== undefined) clock.clearTimeout(this.wakeTimer);
    if (this.inputTimer !== undefined) clock.clearTimeout(this.inputTimer);
    this.pollTimer = this.wakeTimer = this.inputTimer = undefined;
    // Let a claim round in flight finish, so its runs are counted below.
    while (this.pumping) await new Promise<void>((resolve) => setImmediate(resolve));
    const runs = [...this.running.values()].flatMap((set) => [...set]);
    if (runs.length > 0) {
      let graceTimer: TimerHandle | undefined;
      const graceOver = new Promise<void>((resolve) => (graceTimer = clock.setTimeout(resolve, graceMs)));
      const allFinished = Promise.all(runs.map((run) => run.finished));
      await Promise.race([allFinished, graceOver]);
      clock.clearTimeout(graceTimer);
      for (const run of runs) run.abortForShutdown();
      await Promise.all(runs.map((run) => run.released));
    }
    this.subscription?.dispose();
    this.subscription = undefined;
  }

  private onNotification(n: StoreNotification): void {
    if (n.kind === 'cancel_requested') {
      for (const set of this.running.values()) {
        for (const run of set) if (run.jobId === n.jobId) run.requestCancel();
      }
      return;
    }
    if (n.kind === 'external_change') {
      // Another process wrote to the store (SQLite), or notifications were lost while PostgreSQL's LISTEN
      // connection was down: a job may be due (a running one's cancel is seen by its next heartbeat).
      this.wake();
      return;
    }
    if (n.kind !== 'job_available' || !this.deps.types.has(n.type)) return;
    if (n.runAt <= this.deps.clock.now()) this.wake();
    else this.wakeAtTime(n.runAt);
  }

  private schedulePoll(): void {
    this.pollTimer = this.deps.clock.setTimeout(() => {
      this.schedulePoll();
      this.wake();
      void this.sweepInputs();
    }, this.deps.pollMs);
  }

  /**
   * Ends the questions of this worker's types that expired unanswered (`JobStore.expireInputs`: `failed`,
   * `input_timeout`), telling `ends` of each, then arms a timer for the next expiry left. Runs when the worker
   * starts, on each safety-net poll (questions other processes asked), when a run of this worker parked a job
   * on a question with a timeout, and at the expiry it last read. Not part of a claim round: a sweep is a
   * write, and rounds are the hot path. One sweep at a time; a full batch sweeps again at once.
   */
  private async sweepInputs(): Promise<void> {
    const { store, types, ends } = this.deps;
    if (this.sweeping || this.stopping || types.size === 0) return;
    this.sweeping = true;
    try {
      const { ended, nextExpiresAt } = await store.expireInputs([...types.keys()]);
      if (ends.hasListeners) for (const event of ended) ends.emit(event);
      if (nextExpiresAt !== null) this.sweepInputsAt(nextExpiresAt);
    } catch (error) {
      this.deps.warn('ending expired input requests failed', error);
    } finally {
      this.sweeping = false;
    }
  }

  /** Arms the sweep timer for `at` unless it is already armed earlier. */
  private sweepInputsAt(at: number): void {
    if (this.stopping || !this.started || at >= this.inputSweepAt) return;
    const { clock } = this.deps;
    if (this.inputTimer !== undefined) clock.clearTimeout(this.inputTimer);
    this.inputSweepAt = at;
    this.inputTimer = clock.setTimeout(
      () => {
        this.inputTimer = undefined;
        this.inputSweepAt = Infinity;
        void this.sweepInputs();
      },
      Math.max(0, at - clock.now()),
    );
  }

  /** Arms the wake timer for `at` unless it is already armed earlier. */
  private wakeAtTime(at: number): void {
    if (this.stopping || at >= this.wakeAt) return;
    const { clock } = this.deps;
    if (this.wakeTimer !== undefined) clock.clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = clock.setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeAt = Infinity;
      this.wake();
    }, at - clock.now());
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.claimRound();
      } while (this.pumpAgain && !this.stopping);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * One claim per type with free slots; then, for the types that got fewer jobs than they had room for, a
   * timer for the store's `nextRunAt` (a pending job's `runAt` or a running job's lease expiry), or another
   * round at once when that time has already come.
   */
  private async claimRound(): Promise<void> {
    const { store, owner, leaseMs, types } = this.deps;
    const hungry: string[] = [];
    for (const jobType of types.values()) {
      if (this.stopping) return;
      const free = jobType.concurrency - (this.busy.get(jobType.type) ?? 0);
      if (free <= 0) continue;
      try {
        const exclude = this.held([jobType.type]);
        const claims = await store.claim({ owner, types: [jobType.type], limit: free, leaseMs, exclude });
        for (const claim of claims) this.startRun(claim, jobType);
        if (claims.length < free) hungry.push(jobType.type);
      } catch (error) {
        this.deps.warn(`claiming ${jobType.type} jobs failed`, error);
      }
    }
    if (hungry.length === 0 || this.stopping) return;
    try {
      const next = await store.nextRunAt(hungry, this.held(hungry));
      if (next !== null) {
        if (next <= this.deps.clock.now()) this.pumpAgain = true;
        else this.wakeAtTime(next);
      }
    } catch (error) {
      this.deps.warn('reading the next run time failed', error);
    }
  }

  /** Ids of the jobs of `types` this worker runs (claimed, end not yet written): what its claims exclude. */
  private held(types: readonly string[]): string[] | undefined {
    let ids: string[] | undefined;
    for (const type of types) {
      const set = this.running.get(type);
      if (set !== undefined) for (const run of set) (ids ??= []).push(run.jobId);
    }
    return ids;
  }

  private startRun(claim: Claim, jobType: JobType): void {
    let set = this.running.get(jobType.type);
    if (set === undefined) this.running.set(jobType.type, (set = new Set()));
    const run = new JobRun(claim, jobType, this.runDeps);
    set.add(run);
    const { type } = jobType;
    this.busy.set(type, (this.busy.get(type) ?? 0) + 1);
    // The slot frees when the handler settles, so the next claim can share a commit with this run's settle.
    void run.handlerSettled.then(() => {
      this.busy.set(type, this.busy.get(type)! - 1);
      this.wake();
    });
    void run.finished.then(() => set.delete(run));
  }
}
