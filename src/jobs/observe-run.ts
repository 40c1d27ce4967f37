/**
 * What a job's run shows of itself: its `job <type>` span (CONSUMER, child of the enqueue's span carried in
 * the job), the log fields of its scope, and the one line that ends it. Kept apart from `run.ts`, which is
 * about the run's lifecycle.
 */
import { SpanKind, SpanStatusCode, type Context, type Span } from '@opentelemetry/api';
import { errorFields, isBreakwaterError, type EventSource, type Log, type LogFields } from '../core/index.js';
import { tracer } from '../core/trace.js';
import { classifyRunFailure } from './run-failure.js';
import type { JobRecord } from '../store/index.js';
import { readCarrier, runParent } from './carrier.js';
import type { JobRunEndedEvent, JobRunOutcome, JobStartedEvent } from './types.js';
import type { JobType } from './validate.js';

const CONSUMER = { kind: SpanKind.CONSUMER } as const;

/** The span, its parent context and the log fields of a run that starts. */
export function observeRun(
  job: JobRecord,
  jobType: JobType,
): { span: Span; parent: Context; fields: LogFields } {
  const carrier = readCarrier(job.payload);
  const parent = runParent(carrier);
  const span = tracer().startSpan(jobType.spanNames.run, CONSUMER, parent);
  if (span.isRecording()) {
    span.setAttributes({
      'messaging.system': 'breakwater',
      'messaging.operation.type': 'process',
      'messaging.destination.name': job.type,
      'messaging.message.id': job.id,
      'breakwater.job.attempt': job.attempts,
    });
  }
  const fields = {
    job_id: job.id,
    job_type: job.type,
    correlation_id: carrier?.correlation_id,
    tool: carrier?.tool,
  };
  return { span, parent, fields };
}

/** Tells `Jobs.onStarted` listeners that a run of `job` started at `startedAt` (ms, the runtime's clock). */
export function emitStarted(starts: EventSource<JobStartedEvent>, job: JobRecord, startedAt: number): void {
  starts.emit({
    jobId: job.id,
    type: job.type,
    attempt: job.attempts,
    runAt: job.runAt,
    createdAt: job.createdAt,
    startedAt,
  });
}

/** Tells `Jobs.onRunEnded` listeners how a run of `job` ended (`durationMs`: the handler's run time). */
export function emitRunEnded(
  runEnds: EventSource<JobRunEndedEvent>,
  job: JobRecord,
  outcome: JobRunOutcome,
  startedAt: number,
  durationMs: number,
): void {
  runEnds.emit({ jobId: job.id, type: job.type, attempt: job.attempts, outcome, startedAt, durationMs });
}

/** Ends the run's span: its outcome, and an error status for a failure that failed or will retry. */
export function endRunSpan(span: Span, ended: JobRunOutcome, failure: unknown): void {
  if (span.isRecording()) {
    span.setAttribute('breakwater.job.outcome', ended);
    if (failure !== undefined && (ended === 'failed' || ended === 'retrying')) {
      const code = codeOf(failure);
      span.setAttribute('error.type', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    }
  }
  span.end();
}

/**
 * `job run ended` with `job_id`, `job_type`, `attempt`, `outcome`, `duration_ms`, and `code` and `err`
 * (free text masked) for a failure; `warn` when the run failed for good or was lost, else `info`.
 */
export function logRunEnd(
  log: Log,
  job: JobRecord,
  ended: JobRunOutcome,
  durationMs: number,
  failure: unknown,
): void {
  const fields: Record<string, unknown> = {
    job_id: job.id,
    job_type: job.type,
    attempt: job.attempts,
    outcome: ended,
    duration_ms: durationMs,
  };
  if (failure !== undefined && ended !== 'completed') {
    fields['code'] = codeOf(failure);
    fields['err'] = errorFields(failure);
  }
  log.write(ended === 'failed' || ended === 'lost' ? 'warn' : 'info', fields, 'job run ended');
}

/** A failure's code, as the job's stored error has it. */
function codeOf(error: unknown): string {
  return isBreakwaterError(error) ? error.code : classifyRunFailure(error).code;
}
