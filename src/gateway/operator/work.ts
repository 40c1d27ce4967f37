/**
 * Notices about the work a process takes in and runs: a job dead-lettered, a webhook source whose deliveries
 * are being rejected.
 */
import { redactText, type Clock, type Disposable } from '../../core/index.js';
import type { Jobs } from '../../jobs/index.js';
import type { WebhookIngress } from '../../webhooks/index.js';
import { clip, duration, type NoticeSink } from './lines.js';
import { Pacer, TrailingCount } from './pace.js';

/** The limits of the work notices. */
export const WORK_NOTICES = {
  /** Dead-letter lines per job type per interval; more are summed up at its end. */
  deadLetterBurst: 3,
  /** Rejected deliveries of one source within `intervalMs` that make it "rejecting deliveries". */
  repeatedRejections: 5,
  /** The interval of both: at most one rejection line per source in it (ms). */
  intervalMs: 60_000,
  /** Longest error message quoted in a dead-letter line, characters. */
  maxMessage: 160,
} as const;

/** What the dead-letter notices read of a jobs runtime. */
export type WatchedJobs = Pick<Jobs, 'onSettled' | 'onRunEnded'>;

/**
 * Prints each job this process's worker dead-lettered (`job.failed`: a permanent error, or its last attempt),
 * at most {@link WORK_NOTICES.deadLetterBurst} per job type per minute; the rest are counted in one line at
 * the end of the minute. Jobs failed by another process, or by a claim that found a lapsed lease on the last
 * attempt, are that process's to report.
 */
export function watchDeadLetters(jobs: WatchedJobs, sink: NoticeSink, clock: Clock): Disposable {
  const { intervalMs } = WORK_NOTICES;
  const pacer = new Pacer({
    clock,
    burst: WORK_NOTICES.deadLetterBurst,
    intervalMs,
    summary: (type, held) =>
      sink({
        event: 'jobs_dead_lettered_held',
        level: 'warn',
        text: `${held} more ${type} ${held === 1 ? 'job' : 'jobs'} dead-lettered within ${duration(intervalMs)} not shown; list them: breakwater jobs list --status failed --type ${type}`,
        fields: { job_type: type, held },
      }),
  });
  // The terminal event (with the error) comes just before the run's end (with the type): joined by job id.
  const errors = new Map<string, { code?: unknown; message?: unknown }>();
  const settled = jobs.onSettled((event) => {
    if (event.type !== 'job.failed') return;
    const error = (event.payload as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    errors.set(event.jobId, error ?? {});
  });
  const ended = jobs.onRunEnded((run) => {
    if (run.outcome !== 'failed') return;
    const error = errors.get(run.jobId) ?? {};
    errors.delete(run.jobId);
    if (!pacer.allow(run.type)) return;
    const code = typeof error.code === 'string' ? error.code : 'unknown';
    const message =
      typeof error.message === 'string' ? clip(redactText(error.message), WORK_NOTICES.maxMessage) : '';
    sink({
      event: 'job_dead_lettered',
      level: 'warn',
      text:
        `job ${run.jobId} (${run.type}) dead-lettered after ${run.attempt} ${run.attempt === 1 ? 'attempt' : 'attempts'}: ` +
        `${code}${message === '' ? '' : ` (${message})`}; retry it: breakwater jobs retry ${run.jobId}`,
      fields: { job_id: run.jobId, job_type: run.type, attempts: run.attempt, code },
    });
  });
  return {
    dispose() {
      settled.dispose();
      ended.dispose();
      pacer.dispose();
      errors.clear();
    },
  };
}

/** What the rejection notices read of a webhook ingress. */
export type WatchedIngress = Pick<WebhookIngress, 'onRejected'>;

/** What a rejection code suggests looking at. */
const REJECTION_HINTS: Readonly<Record<string, string>> = {
  invalid_signature: 'check its signing secrets',
  stale_timestamp: "check the sender's clock",
  rate_limited: 'over its rate limit',
  overloaded: 'its backlog is full',
  payload_too_large: 'bodies over its size limit',
  invalid_payload: 'bodies its schema refuses',
  upstream_unavailable: 'the store failed',
};

/**
 * Prints a declared webhook source "rejecting deliveries" when {@link WORK_NOTICES.repeatedRejections} of its
 * deliveries were refused within a minute (a run of signature failures after a secret was rotated, a
 * sender over its rate limit, a full backlog), then at most once a minute while it goes on. Deliveries to
 * paths naming no declared source are not counted: their names come from the caller.
 */
export function watchWebhookRejections(ingress: WatchedIngress, sink: NoticeSink, clock: Clock): Disposable {
  const { intervalMs, repeatedRejections } = WORK_NOTICES;
  const pacer = new Pacer({ clock, burst: 1, intervalMs });
  const recent = new Map<string, TrailingCount>();
  const subscription = ingress.onRejected((rejection) => {
    const source = rejection.source;
    if (source === undefined) return;
    let count = recent.get(source);
    if (count === undefined) recent.set(source, (count = new TrailingCount(intervalMs)));
    const now = clock.now();
    count.add(now);
    const rejected = count.count(now);
    if (rejected < repeatedRejections || !pacer.allow(source)) return;
    const hint = REJECTION_HINTS[rejection.code];
    sink({
      event: 'webhook_rejections',
      level: 'warn',
      text:
        `webhook source ${source} rejecting deliveries: ${rejected} within ${duration(intervalMs)}, ` +
        `the last ${rejection.status} ${rejection.code}${hint === undefined ? '' : ` (${hint})`}; ` +
        'nothing of them is stored, the sender decides whether to retry',
      fields: { source, rejected, window_ms: intervalMs, code: rejection.code, status: rejection.status },
    });
  });
  return {
    dispose() {
      subscription.dispose();
      pacer.dispose();
    },
  };
}
