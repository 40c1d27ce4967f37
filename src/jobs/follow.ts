import { BreakwaterError, type Clock, type Disposable, type TimerHandle } from '../core/index.js';
import { TERMINAL_STATUSES, type JobEvent, type JobEventType, type JobStore } from '../store/index.js';

/** Event types after which a job's stream ends. */
const TERMINAL_EVENTS: ReadonlySet<JobEventType> = new Set(['job.completed', 'job.failed', 'job.canceled']);

/** What a follower needs. */
export interface FollowDeps {
  store: JobStore;
  clock: Clock;
  /** Safety-net re-read interval in ms, for a lost notification. */
  pollMs: number;
  warn(message: string, error: unknown): void;
}

/** Callbacks of {@link followJob}. */
export interface FollowCallbacks {
  onEvent(event: JobEvent): void;
  /** Once, when the stream ends by itself: no argument after the terminal event, `not_found` for no job. */
  onEnd?(error?: Error): void;
}

/**
 * Follows one job's events with `seq > fromSeq`: subscribes to the store's notifications and watches the job
 * ({@link JobStore.watchEvents}) first, then reads the stored events, so an event committed in between is
 * read, not missed. Every read asks for `seq > last delivered`, and only the next seq in line is delivered,
 * so an event is never duplicated nor skipped, even when notifications arrive late, twice or out of order.
 * Reads are serialised; a notification during a read triggers one more. A poll every `pollMs` covers
 * notifications that never arrive (best effort on PostgreSQL). Ends after the terminal event, or at once when
 * the job is already finished and its terminal event is at or before `fromSeq`.
 */
export function followJob(
  deps: FollowDeps,
  jobId: string,
  fromSeq: number,
  callbacks: FollowCallbacks,
): Disposable {
  const { store, clock } = deps;
  let lastSeq = fromSeq;
  let active = true;
  let reading = false;
  let readAgain = false;
  let pollTimer: TimerHandle | undefined;

  const end = (error?: Error): void => {
    if (!active) return;
    dispose();
    callbacks.onEnd?.(error);
  };

  const drain = async (): Promise<void> => {
    for (;;) {
      const events = await store.events(jobId, lastSeq);
      for (const event of events) {
        if (!active) return;
        if (event.seq !== lastSeq + 1) break; // a gap cannot happen with per-job seq; re-read to be sure
        lastSeq = event.seq;
        callbacks.onEvent(event);
        if (TERMINAL_EVENTS.has(event.type)) return end();
      }
      if (events.length < 1000) return;
    }
  };

  const read = async (first: boolean): Promise<void> => {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = true;
    try {
      do {
        readAgain = false;
        // Read the job before its events: a terminal status seen here has its event already stored.
        const job = first ? await store.get(jobId) : undefined;
        if (first && job === undefined) {
          return end(new BreakwaterError('not_found', { message: `There is no job ${jobId}.` }));
        }
        await drain();
        if (first && active && TERMINAL_STATUSES.has(job!.status)) return end();
        first = false;
      } while (readAgain && active);
    } catch (error) {
      deps.warn(`reading events of job ${jobId} failed`, error);
    } finally {
      reading = false;
    }
  };

  const subscription = store.subscribe((n) => {
    if (!active) return;
    if ((n.kind === 'job_event' && n.jobId === jobId && n.seq > lastSeq) || n.kind === 'external_change') {
      void read(false);
    }
  });
  const schedulePoll = (): void => {
    pollTimer = clock.setTimeout(() => {
      schedulePoll();
      void read(false);
    }, deps.pollMs);
  };

  function dispose(): void {
    if (!active) return;
    active = false;
    subscription.dispose();
    if (pollTimer !== undefined) clock.clearTimeout(pollTimer);
    void watching
      .then((watch) => watch?.unwatch())
      .catch((error) => deps.warn(`unwatching job ${jobId} failed`, error));
  }

  // Watch before the first read: every event from then on is either stored already or announced. A failed
  // watch leaves the safety-net poll, and is said.
  const watching = store.watchEvents(jobId).catch((error: unknown) => {
    deps.warn(`watching job ${jobId} failed; following it by polling every ${deps.pollMs} ms`, error);
    return undefined;
  });
  schedulePoll();
  void watching.then(() => (active ? read(true) : undefined));
  return { dispose };
}

/**
 * {@link followJob} as an async iterator: yields each event once, in seq order, and ends after the terminal
 * one; `return()` (a `break` in `for await`) disposes the subscription.
 * @throws BreakwaterError `not_found` (from `next()`) when the job does not exist.
 */
export function jobEvents(deps: FollowDeps, jobId: string, fromSeq: number): AsyncIterable<JobEvent> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<JobEvent> {
      const queue: JobEvent[] = [];
      let ended = false;
      let failure: Error | undefined;
      let wakeUp: (() => void) | undefined;
      const notify = (): void => {
        wakeUp?.();
        wakeUp = undefined;
      };
      const subscription = followJob(deps, jobId, fromSeq, {
        onEvent: (event) => {
          queue.push(event);
          notify();
        },
        onEnd: (error) => {
          ended = true;
          failure = error;
          notify();
        },
      });
      return {
        async next(): Promise<IteratorResult<JobEvent>> {
          while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wakeUp = resolve));
          if (queue.length > 0) return { value: queue.shift()!, done: false };
          if (failure !== undefined) throw failure;
          return { value: undefined, done: true };
        },
        async return(): Promise<IteratorResult<JobEvent>> {
          ended = true;
          subscription.dispose();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
