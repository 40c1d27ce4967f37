import type { JobError, JobEvent, JobRecord, JobStatus } from '../store/index.js';
import { jobPaths } from '../jobs/index.js';
import type { ServerStore } from './options.js';

/** Where a job can be polled and followed: absolute under `publicUrl`, else absolute paths. */
export interface JobUrls {
  status_url: string;
  events_url: string;
}

/**
 * A job as `GET /jobs/:id` answers it (snake_case, times as ISO 8601 strings in UTC). The payload is left
 * out: it is the caller's input and may hold personal data, and a status poll does not need it.
 */
export interface JobView extends JobUrls {
  id: string;
  type: string;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  priority: number;
  /** The last `job.progress` payload (`{ step, total, message? }`), or null; only on the single-job view. */
  progress?: unknown;
  /** The `seq` of the job's last event (0 before the first): `?last_event_id=` to follow only what is new. */
  last_event_seq?: number;
  /** A completed job's result, else null. */
  result: unknown;
  /** The last failure (kept while a retry is scheduled), else null. */
  error: JobError | null;
  run_at: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  cancel_requested_at: string | null;
}

/** An event as SSE `data:` carries it (DESIGN: "Jobs": `{event_id, seq, type, job_id, timestamp, payload}`). */
export interface JobEventView {
  event_id: string;
  seq: number;
  type: JobEvent['type'];
  job_id: string;
  /** ISO 8601, UTC. */
  timestamp: string;
  payload: unknown;
}

/**
 * The status and events URLs of job `id`: `${publicUrl}/jobs/<id>` and `…/events` when a public URL is
 * known (no trailing slash), else the paths alone. The id is percent-encoded.
 */
export function jobUrls(id: string, publicUrl?: string): JobUrls {
  const paths = jobPaths(id);
  const base = publicUrl ?? '';
  return { status_url: `${base}${paths.status}`, events_url: `${base}${paths.events}` };
}

/** {@link JobView} of a stored job; `extra` adds the single-job fields (progress, last event seq). */
export function toJobView(
  job: JobRecord,
  publicUrl?: string,
  extra?: { progress: unknown; lastEventSeq: number },
): JobView {
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    priority: job.priority,
    ...(extra === undefined ? {} : { progress: extra.progress, last_event_seq: extra.lastEventSeq }),
    result: job.result ?? null,
    error: job.error,
    run_at: iso(job.runAt),
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
    finished_at: job.finishedAt === null ? null : iso(job.finishedAt),
    cancel_requested_at: job.cancelRequestedAt === null ? null : iso(job.cancelRequestedAt),
    ...jobUrls(job.id, publicUrl),
  };
}

/** {@link JobEventView} of a stored event. */
export function toEventView(event: JobEvent): JobEventView {
  return {
    event_id: event.eventId,
    seq: event.seq,
    type: event.type,
    job_id: event.jobId,
    timestamp: iso(event.timestamp),
    payload: event.payload,
  };
}

/** Most events read per page while looking for the last progress (the store's own page size). */
const PAGE = 1000;

/**
 * The last `job.progress` payload of a job (null when none) and its last event's seq, read page by page: the
 * store reads events forwards only. Progress is throttled at the source, so a job has few such events; the
 * pages are for jobs with many partial results.
 */
export async function lastProgress(
  store: ServerStore,
  jobId: string,
): Promise<{ progress: unknown; lastEventSeq: number }> {
  let progress: unknown = null;
  let lastEventSeq = 0;
  for (;;) {
    const events = await store.events(jobId, lastEventSeq, PAGE);
    for (const event of events) {
      if (event.type === 'job.progress') progress = event.payload;
      lastEventSeq = event.seq;
    }
    if (events.length < PAGE) return { progress, lastEventSeq };
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
