import type { InputRequest, JobError, JobEvent, JobRecord, JobStatus } from '../store/index.js';
import { jobErrorMessage, jobPaths, retryAfterMsOf } from '../jobs/index.js';
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
  error: JobErrorView | null;
  run_at: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  cancel_requested_at: string | null;
  /**
   * The question an `input_required` job waits on (answer it with `POST /jobs/:id/input`); only on the
   * single-job view, and only while the job waits.
   */
  input_request?: InputRequestView;
}

/** A job's open question (docs/jobs.md, "Asking for input"), snake_case, times as ISO 8601 strings in UTC. */
export interface InputRequestView {
  key: string;
  message: string;
  /** The answer's flat JSON schema (MCP elicitation's `requestedSchema` shape), or null for any JSON value. */
  schema: InputRequest['schema'];
  asked_at: string;
  /** When the job fails with `input_timeout` unless answered, or null. */
  expires_at: string | null;
}

/** {@link InputRequestView} of a stored question. */
export function toInputRequestView(request: InputRequest): InputRequestView {
  return {
    key: request.key,
    message: request.message,
    schema: request.schema,
    asked_at: iso(request.askedAt),
    expires_at: request.expiresAt === null ? null : iso(request.expiresAt),
  };
}

/**
 * A job's stored error as read at a given time: the stored fields (`code`, `message`, `kind`, and `userFacing`,
 * `dependencyCode`, `outcome` when set), with the wait the failure carried said as of that time. `message`
 * says what is left of the wait ("try again in about 12 seconds", see jobs' `jobErrorMessage`).
 */
export interface JobErrorView extends Omit<JobError, 'retryAt'> {
  /** When the wait the failure carried ends (ISO 8601, UTC), or null when no wait was known. */
  retry_at: string | null;
  /** What is left of that wait at the time of reading, whole ms (0 once over), or null when none was known. */
  retry_after_ms: number | null;
}

/**
 * An event as SSE `data:` carries it (docs/jobs.md#events: `{event_id, seq, type, job_id, timestamp,
 * payload}`).
 */
export interface JobEventView {
  event_id: string;
  seq: number;
  type: JobEvent['type'];
  job_id: string;
  /** ISO 8601, UTC. */
  timestamp: string;
  /**
   * The stored payload; its `error` (`job.retrying`, `job.failed`) as a {@link JobErrorView} read when the
   * event is sent, so a replayed event tells what is left of the wait then, not when it was written.
   */
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

/**
 * {@link JobView} of a stored job read at `now` (ms since the epoch, the server's clock: the wait of its error
 * is told as of then); `extra` adds the single-job fields (progress, last event seq).
 */
export function toJobView(
  job: JobRecord,
  now: number,
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
    error: job.error === null ? null : toJobErrorView(job.error, now),
    run_at: iso(job.runAt),
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
    finished_at: job.finishedAt === null ? null : iso(job.finishedAt),
    cancel_requested_at: job.cancelRequestedAt === null ? null : iso(job.cancelRequestedAt),
    ...jobUrls(job.id, publicUrl),
  };
}

/** {@link JobErrorView} of a stored error read at `now` (ms since the epoch). */
export function toJobErrorView(error: JobError, now: number): JobErrorView {
  const { retryAt, ...stored } = error;
  return {
    ...stored,
    message: jobErrorMessage(error, now),
    retry_at: typeof retryAt === 'number' && Number.isFinite(retryAt) ? iso(retryAt) : null,
    retry_after_ms: retryAfterMsOf(error, now),
  };
}

/** {@link JobEventView} of a stored event sent at `now` (ms since the epoch; see its `payload`). */
export function toEventView(event: JobEvent, now: number): JobEventView {
  return {
    event_id: event.eventId,
    seq: event.seq,
    type: event.type,
    job_id: event.jobId,
    timestamp: iso(event.timestamp),
    payload: withErrorView(event.payload, now),
  };
}

/** A payload whose `error` is a stored job error, with it as a {@link JobErrorView}; any other as it is. */
function withErrorView(payload: unknown, now: number): unknown {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  const error = (payload as { error?: unknown }).error;
  if (!isJobError(error)) return payload;
  return { ...payload, error: toJobErrorView(error, now) };
}

function isJobError(value: unknown): value is JobError {
  if (typeof value !== 'object' || value === null) return false;
  const { code, message } = value as { code?: unknown; message?: unknown };
  return typeof code === 'string' && typeof message === 'string';
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
