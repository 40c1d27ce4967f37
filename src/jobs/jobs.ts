import { BreakwaterError, EventSource, finite, NON_NEGATIVE } from '../core/index.js';
import type { JobEvent } from '../store/index.js';
import { followJob, jobEvents, type FollowDeps } from './follow.js';
import {
  JOBS_DEFAULTS,
  type JobRunEndedEvent,
  type JobStartedEvent,
  type Jobs,
  type JobsOptions,
} from './types.js';
import { resolveJobsOptions, resolveJobType, toNewJob, type JobType } from './validate.js';
import { Worker } from './worker.js';

/**
 * Creates the jobs runtime (DESIGN: "Jobs") over a job store: the queue API (`enqueue`, `get`, `list`,
 * `cancel`, `retry`, `stats`, `subscribe`/`events`) and a worker for the types defined with `defineJob`,
 * which runs only after `start()`. Several runtimes (processes) may share one store; each job runs in one
 * of them at a time (leases with fencing tokens, see `run.ts` for how a run ends).
 *
 * Store failures the runtime survives (a heartbeat or claim that threw) are reported as process warnings
 * named `BreakwaterJobsWarning` (the error as `cause`); the safety-net poll retries them.
 *
 * @throws RangeError naming the option when an option is invalid (`createJobs: leaseMs must be ...`).
 */
export function createJobs(options: JobsOptions): Jobs {
  const resolved = resolveJobsOptions(options);
  const { store, clock } = resolved;
  const types = new Map<string, JobType>();
  const ends = new EventSource<JobEvent>();
  const starts = new EventSource<JobStartedEvent>();
  const runEnds = new EventSource<JobRunEndedEvent>();
  const worker = new Worker({ ...resolved, types, warn, ends, starts, runEnds });
  const follow: FollowDeps = { store, clock, pollMs: resolved.pollMs, warn };

  function mustExist<T>(id: string, found: T | undefined): T {
    if (found === undefined) throw new BreakwaterError('not_found', { message: `There is no job ${id}.` });
    return found;
  }

  return {
    defineJob(type, handler, jobOptions) {
      const jobType = resolveJobType(type, handler as never, jobOptions);
      if (types.has(type)) {
        throw new RangeError(
          `defineJob: type must be a type not defined yet, got '${type}' (defined already)`,
        );
      }
      types.set(type, jobType);
      worker.wake();
    },

    async enqueue(type, payload, enqueueOptions) {
      const job = toNewJob(type, types.get(type), payload, enqueueOptions, clock.now());
      return (await store.enqueue(job)).job.id;
    },

    get: (id) => store.get(id),
    list: (filter) => store.list(filter),
    stats: () => store.stats(),

    async cancel(id) {
      return mustExist(id, await store.cancel(id));
    },

    async retry(id) {
      // One atomic store step decides: `retried: false` means the job was not failed (a concurrent retry
      // that won makes it pending), and the job it answers with is the state that decision saw.
      const { job, retried } = mustExist(id, await store.retryFailed(id));
      if (!retried) {
        throw new BreakwaterError('invalid_payload', {
          message: `Only a failed job can be retried; job ${id} is ${job.status}.`,
          details: { status: job.status },
        });
      }
      return job;
    },

    subscribe(jobId, fromSeq, listener, subscribeOptions = {}) {
      finite('subscribe', 'fromSeq', fromSeq, { ...NON_NEGATIVE, integer: true });
      return followJob(follow, jobId, fromSeq, { onEvent: listener, onEnd: subscribeOptions.onEnd });
    },

    events(jobId, fromSeq = 0) {
      finite('events', 'fromSeq', fromSeq, { ...NON_NEGATIVE, integer: true });
      return jobEvents(follow, jobId, fromSeq);
    },

    onSettled: (listener) => ends.on(listener),
    onStarted: (listener) => starts.on(listener),
    onRunEnded: (listener) => runEnds.on(listener),

    start: () => worker.start(),

    stop(stopOptions = {}) {
      const graceMs = finite('stop', 'graceMs', stopOptions.graceMs ?? JOBS_DEFAULTS.graceMs, NON_NEGATIVE);
      return worker.stop(graceMs);
    },
  };
}

function warn(message: string, error: unknown): void {
  const warning = new Error(`jobs: ${message}: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
  });
  warning.name = 'BreakwaterJobsWarning';
  process.emitWarning(warning);
}
