import { SpanKind } from '@opentelemetry/api';
import {
  BreakwaterError,
  EventSource,
  finite,
  NON_NEGATIVE,
  OptionsError,
  PrincipalContext,
} from '../core/index.js';
import { failSpan, tracer } from '../core/trace.js';
import type { JobEvent } from '../store/index.js';
import { publicRecord, withCarrier } from './carrier.js';
import { followJob, jobEvents, type FollowDeps } from './follow.js';
import { type JobRunEndedEvent, type JobStartedEvent, type Jobs, type JobsOptions } from './types.js';
import { respondToJob } from './respond.js';
import { parseStopOptions, resolveJobsOptions, resolveJobType, toNewJob, type JobType } from './validate.js';
import { Worker } from './worker.js';

/**
 * Creates the jobs runtime (docs/jobs.md) over a job store: the queue API (`enqueue`, `get`, `list`,
 * `cancel`, `retry`, `respond`, `stats`, `subscribe`/`events`) and a worker for the types defined with `defineJob`,
 * which runs only after `start()`. Several runtimes (processes) may share one store; each job runs in one
 * of them at a time (leases with fencing tokens, see `run.ts` for how a run ends).
 *
 * Store failures the runtime survives (a heartbeat or claim that threw) are reported as process warnings
 * named `BreakwaterJobsWarning` (the error as `cause`); the safety-net poll retries them.
 *
 * Ownership (docs/architecture.md#identity-and-ownership): a job belongs to the principal that enqueued it,
 * the `owner` enqueue option or, by default, the current principal (`PrincipalContext`), so a tool that
 * enqueues inside a tool call gives the job to its caller. This API itself checks no access (it is the
 * application's); the HTTP and MCP fronts do.
 *
 * Observed: an enqueue is traced as `enqueue <type>` (PRODUCER) and each run as `job <type>` (CONSUMER), a
 * child of the enqueue's span in the same trace; the trace context and the enqueuer's `correlation_id` and
 * `tool` travel with the job (see `carrier.ts`: a reserved `$breakwater` key of object payloads, never shown
 * to handlers nor returned by this API). A run's log lines carry `job_id`, `job_type` and the carried fields;
 * its end is logged through the `logger` option or the process logger.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createJobs`) naming every bad option
 *   (`createJobs: leaseMs must be ...`).
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
        throw new OptionsError('defineJob', [
          { option: 'type', rule: 'a type not defined yet', value: type },
        ]);
      }
      types.set(type, jobType);
      worker.wake();
    },

    async enqueue(type, payload, enqueueOptions) {
      const jobType = types.get(type);
      const owner = PrincipalContext.get()?.id ?? null;
      const job = toNewJob(type, jobType, payload, enqueueOptions, clock.now(), owner);
      const span = tracer().startSpan(jobType!.spanNames.enqueue, PRODUCER);
      job.payload = withCarrier(job.payload, span);
      try {
        const { job: stored, created } = await store.enqueue(job);
        if (span.isRecording()) {
          span.setAttributes({
            'messaging.system': 'breakwater',
            'messaging.operation.type': 'send',
            'messaging.destination.name': type,
            'messaging.message.id': stored.id,
            'breakwater.job.created': created,
          });
        }
        span.end();
        return stored.id;
      } catch (error) {
        failSpan(span, error);
        throw error;
      }
    },

    get: async (id) => publicRecord(await store.get(id)),
    list: async (filter) => (await store.list(filter)).map((record) => publicRecord(record)),
    stats: () => store.stats(),

    async cancel(id) {
      return publicRecord(mustExist(id, await store.cancel(id)));
    },

    async retry(id) {
      // One atomic store step decides: `retried: false` means the job was not failed (a concurrent retry
      // that won makes it pending), and the job it answers with is the state that decision saw.
      const { job: stored, retried } = mustExist(id, await store.retryFailed(id));
      const job = publicRecord(stored);
      if (!retried) {
        throw new BreakwaterError('invalid_payload', {
          message: `Only a failed job can be retried; job ${id} is ${job.status}.`,
          details: { status: job.status },
        });
      }
      return job;
    },

    respond: (id, key, answer, respondOptions) => respondToJob(store, id, key, answer, respondOptions),

    async inputRequest(id) {
      const input = await store.jobInput(id);
      if (input === undefined) return undefined;
      const job = await store.get(id);
      return job?.status === 'input_required' ? input.request : null;
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

    stop(stopOptions) {
      return worker.stop(parseStopOptions(stopOptions).graceMs);
    },
  };
}

const PRODUCER = { kind: SpanKind.PRODUCER } as const;

function warn(message: string, error: unknown): void {
  const warning = new Error(`jobs: ${message}: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
  });
  warning.name = 'BreakwaterJobsWarning';
  process.emitWarning(warning);
}
