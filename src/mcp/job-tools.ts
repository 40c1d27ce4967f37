import { z } from 'zod';
import { BreakwaterError, defineOptions, invalidOption, o, type Clock } from '../core/index.js';
import { callerPrincipal, jobPaths, jobVisibleTo, type EnqueueOptions, type Jobs } from '../jobs/index.js';
import type { InputRequest, JobEvent, JobRecord, JobStore } from '../store/index.js';
import { inputContext, type InputContext } from './input.js';
import { jobErrorInfo, jobErrorResult, successResult } from './results.js';
import {
  resilientTool,
  TOOL_BASE_SHAPE,
  toolBase,
  type JobTool,
  type SyncTool,
  type ToolArgs,
  type ToolBaseDefinition,
  type ToolInput,
} from './tool.js';
import type { ToolErrorInfo, ToolResult } from './types.js';

/** The definition of {@link jobTool}. */
export interface JobToolDefinition<I extends ToolInput> extends ToolBaseDefinition {
  inputSchema: I;
  /** The job type to enqueue; it must be defined (`jobs.defineJob`) in the serving process. */
  jobType: string;
  /**
   * The job's payload from the parsed arguments (default: the arguments). It may ask the user first
   * (`ctx.requestInput`, as a `resilientTool` handler does; docs/mcp.md "Asking the user during a call"): on
   * 2026-07-28 the call answers `input_required` and runs `toPayload` again with the answers, and the job is
   * enqueued (and its task made) only once every answer is in; on a 2025 session the question goes to the
   * client while the call waits. Where no one can be asked (a 2025-11-25 task-augmented call), a question
   * fails the call with `input_unavailable`.
   */
  toPayload?(args: ToolArgs<I>, ctx: InputContext): unknown;
  /** Enqueue options (an idempotency key, a priority, …), fixed or from the arguments. */
  enqueueOptions?: EnqueueOptions | ((args: ToolArgs<I>) => EnqueueOptions);
  /** The tool result's value from the job's result, for `tasks/result` and `get_job_status` (default: as is). */
  toResult?(result: unknown): unknown;
  /** The text the model reads for the finished job's result (default: the value as JSON). */
  toText?(result: unknown): string;
  /**
   * `'optional'` (default): a call without a task answers with the job's handle (or waits, see below).
   * `'required'`: the tool runs only as a task; on 2026-07-28 a request that does not declare the tasks
   * extension gets -32021 (Missing Required Client Capability), on 2025-11-25 a call that is not
   * task-augmented gets -32601 (the spec's answer for a tool whose task support is required).
   */
  taskSupport?: 'optional' | 'required';
}

/**
 * Defines a tool whose work runs as a job (see docs/jobs.md). A call enqueues the job and answers at once
 * with the job's handle `{ job_id, status, status_url, events_url, message }` (URLs under the server's
 * `publicUrl`: `/jobs/:id` and `/jobs/:id/events`); the model follows it with `get_job_status` and
 * `cancel_job`. The enqueue runs under the tool's deadline (default 10 s) like any resilient tool.
 *
 * A plain call (no task) that carries `_meta.progressToken` waits instead: the job's progress is forwarded
 * as `notifications/progress` on the call's own stream, and the call answers at the first of
 * - the job's end: its result as a tool result (`toResult`, `toText`: what `tasks/result` gives), or, failed
 *   or canceled, the error result `get_job_status` shows;
 * - the call's deadline (the tool's `deadlineMs` from the start of the call, or the request's deadline when
 *   sooner): the handle, whose `message` says the job is still running and how to follow it. The job goes
 *   on; its progress is no longer forwarded (a progress token is bound to its request).
 * A cancel of the call (`notifications/cancelled`, the session closing) ends the wait, never the job. The
 * wait is not an option: the token is the client's request for progress, which MCP lets a server send only
 * while the request is open, and a client that wants the handle at once sends no token.
 *
 * The tool is listed with `execution.taskSupport: 'optional'` (or `taskSupport`): a 2025-11-25 client may
 * also call it as an MCP task, whose id is the job id and whose result (`tasks/result`) is the job's result as
 * a tool result; a task's progress is forwarded until the job ends. On 2026-07-28, a request that declares
 * the tasks extension (`io.modelcontextprotocol/tasks`) gets a task instead of the handle (see `tasks-ext.ts`).
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `jobTool`) at definition, naming every bad
 *   option: name, description, deadline, schema, `jobType`, `enqueueOptions` or a callback.
 */
export function jobTool<I extends ToolInput>(definition: JobToolDefinition<I>): JobTool {
  const parsed = parseJobTool(definition as unknown as JobToolDefinition<ToolInput>);
  return {
    kind: 'job',
    ...toolBase(parsed, { taskSupport: parsed.taskSupport ?? 'optional' }),
    taskSupport: parsed.taskSupport ?? 'optional',
    jobType: parsed.jobType,
    toPayload: (parsed.toPayload ?? ((args: unknown) => args)) as JobTool['toPayload'],
    enqueueOptions: parsed.enqueueOptions as JobTool['enqueueOptions'],
    toResult: parsed.toResult as JobTool['toResult'],
    toText: parsed.toText as JobTool['toText'],
  };
}

type AnyFn = (...args: never[]) => unknown;

/** Checks a {@link JobToolDefinition}, every bad option at once. */
const parseJobTool = defineOptions<JobToolDefinition<ToolInput>>()('jobTool', {
  ...TOOL_BASE_SHAPE,
  jobType: o.string().min(1),
  toPayload: o.fn<AnyFn>().optional(),
  enqueueOptions: o
    .custom<EnqueueOptions | AnyFn>(
      (v) => typeof v === 'function' || (typeof v === 'object' && v !== null && !Array.isArray(v)),
      'EnqueueOptions or a function (args) => EnqueueOptions',
    )
    .optional(),
  toResult: o.fn<AnyFn>().optional(),
  toText: o.fn<AnyFn>().optional(),
  taskSupport: o.enum(['optional', 'required'] as const).optional(),
});

/** Where the job endpoints are: `${publicUrl}/jobs/:id` and `${publicUrl}/jobs/:id/events`. */
export interface JobUrls {
  status(id: string): string;
  events(id: string): string;
}

/** True for an absolute `http:` or `https:` URL. */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value === '') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * The job URLs under `publicUrl` (an absolute http(s) URL, see {@link isHttpUrl}; a path prefix is kept, a
 * trailing slash dropped).
 * @throws OptionsError naming `owner` and `publicUrl` when it is not an absolute http(s) URL.
 */
export function jobUrls(owner: string, publicUrl: unknown): JobUrls {
  if (!isHttpUrl(publicUrl)) throw invalidOption(owner, 'publicUrl', 'an absolute http(s) URL', publicUrl);
  const base = new URL(publicUrl).href.replace(/\/+$/, '');
  return {
    status: (id) => `${base}${jobPaths(id).status}`,
    events: (id) => `${base}${jobPaths(id).events}`,
  };
}

/** What the job tools need at call time. */
export interface JobToolDeps {
  jobs: Jobs;
  store: JobStore;
  urls: JobUrls;
  /** Job tools by job type: only these jobs are visible through MCP. */
  byType: ReadonlyMap<string, JobTool>;
  /** The server's clock: a job's error tells what is left of its wait as of this clock's now. */
  clock: Clock;
}

/**
 * Enqueues the job of a job tool for already parsed arguments and returns the job as stored. The job belongs
 * to the current principal (the caller of the tool call; `jobs.enqueue`'s default) unless the tool's
 * `enqueueOptions` name another owner. `input` is how the tool's `toPayload` may ask the user (the call's
 * context; default: no one to ask, a question fails `input_unavailable`).
 * @throws BreakwaterError from `jobs.enqueue` (`invalid_payload` for a type this process does not define);
 *   whatever `toPayload` throws, its input signal included (the caller answers `input_required`).
 */
export async function enqueueFor(
  deps: JobToolDeps,
  tool: JobTool,
  args: unknown,
  input: InputContext = inputContext(undefined, new AbortController().signal),
): Promise<JobRecord> {
  const options =
    typeof tool.enqueueOptions === 'function' ? tool.enqueueOptions(args as never) : tool.enqueueOptions;
  const payload: unknown = await tool.toPayload(args as never, input);
  const id = await deps.jobs.enqueue(tool.jobType, payload, options);
  const job = await deps.jobs.get(id);
  if (job === undefined)
    throw new BreakwaterError('internal_error', { message: `Job ${id} vanished after enqueue.` });
  return job;
}

/**
 * The answer of a job tool call: the job's handle. `waited`: the call waited for the job until its deadline
 * (see {@link jobTool}), so the message says the job is still running.
 */
export function jobHandle(deps: JobToolDeps, job: JobRecord, waited = false): Record<string, unknown> {
  const finished = job.status === 'completed' || job.status === 'failed' || job.status === 'canceled';
  return {
    job_id: job.id,
    status: job.status,
    status_url: deps.urls.status(job.id),
    events_url: deps.urls.events(job.id),
    message:
      job.status === 'input_required'
        ? `Job ${job.id} waits for the user's answer to a question. Call get_job_status with its job_id to read it, then respond_to_job with the answer.`
        : waited && !finished
          ? stillRunningMessage(job.id)
          : jobMessage(job.id, finished),
  };
}

/**
 * The sentence a model reads about a job it just asked for. `finished`: the enqueue returned an existing
 * job (same idempotency key) that already ended.
 */
export function jobMessage(id: string, finished: boolean): string {
  return finished
    ? `This work was already done as job ${id}; call get_job_status with its job_id for the outcome.`
    : `Started job ${id}; it runs in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`;
}

/** The sentence of a handle given after the call waited for the job until its deadline. */
export function stillRunningMessage(id: string): string {
  return `Job ${id} is still running; it goes on in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`;
}

/**
 * A job that MCP may show the current principal (`PrincipalContext`; see jobs' `callerPrincipal`): it exists,
 * belongs to a job tool, and the principal owns it or holds `admin`. Undefined otherwise, whichever the
 * reason, so a stranger's job reads exactly as one that does not exist.
 */
export async function visibleJob(deps: JobToolDeps, id: string): Promise<JobRecord | undefined> {
  const job = jobVisibleTo(callerPrincipal(), await deps.jobs.get(id));
  return job !== undefined && deps.byType.has(job.type) ? job : undefined;
}

/** A completed job's result as its tool shows it (through the job tool's `toResult`). */
export function jobResultValue(deps: JobToolDeps, job: JobRecord): unknown {
  const tool = deps.byType.get(job.type);
  return tool?.toResult !== undefined ? tool.toResult(job.result as never) : job.result;
}

/** The tool result of a completed job (through the job tool's `toResult` and `toText`). */
export function completedResult(deps: JobToolDeps, job: JobRecord): ToolResult {
  const value = jobResultValue(deps, job);
  return successResult(value, deps.byType.get(job.type)?.toText?.(value as never));
}

/**
 * The tool result of a finished job: {@link completedResult} when completed, the error result `get_job_status`
 * shows when failed or canceled (`jobErrorResult`, read at the deps' clock's now); undefined while it runs.
 */
export function finishedResult(deps: JobToolDeps, job: JobRecord): ToolResult | undefined {
  if (job.status === 'completed') return completedResult(deps, job);
  if (job.status === 'failed' || job.status === 'canceled')
    return jobErrorResult(job.error, job.status, deps.clock.now());
  return undefined;
}

/** Most partial results `get_job_status` returns (the latest ones). */
export const MAX_PARTIALS = 20;
/** Most events `get_job_status` reads for one job. */
const MAX_EVENTS_READ = 10_000;

const JOB_ID = { job_id: z.string().min(1).max(200).describe('The job_id a job tool returned.') };

/**
 * The `get_job_status` tool: a job's status, latest progress (`{ step, total, message? }` or null), its
 * partial results so far (the latest {@link MAX_PARTIALS}, oldest first, with `partial_count`), and the
 * result (completed) or `error` (failed, canceled), or `last_error` while a retry is scheduled; while the job
 * waits for input (`input_required`), the question as `input_request` `{ key, message, schema, asked_at,
 * expires_at }` and a `message` saying to answer it with `respond_to_job`; an error's
 * `retry_after_ms` and message tell what is left of the wait its failure carried at the time of the call. Only jobs of job tools that the caller owns (or any, for
 * `admin`) are visible; others are `not_found`, as an id that does not exist.
 */
export function getJobStatusTool(deps: JobToolDeps, name = 'get_job_status'): SyncTool {
  return resilientTool({
    name,
    description:
      'Returns the status, progress, partial results and final result or error of a background job started by another tool.',
    inputSchema: JOB_ID,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async handler({ job_id }) {
      const job = await visibleJob(deps, job_id);
      if (job === undefined) throw notFound(job_id);
      const view = jobStatus(deps, job, await readEvents(deps.store, job.id));
      const request = job.status === 'input_required' ? await deps.jobs.inputRequest(job.id) : null;
      if (request) {
        view['input_request'] = inputRequestInfo(request);
        view['message'] =
          `The job waits for the user's answer: ask them "${request.message}", then call respond_to_job with this job_id, key ${JSON.stringify(request.key)} and the answer.`;
      }
      return view;
    },
  });
}

/**
 * The `cancel_job` tool: cancels a pending job at once, asks a running one to stop (it stops within one
 * heartbeat), and leaves a finished one as it is; says which happened. A job the caller may not see (see
 * `get_job_status`) is `not_found` and left alone.
 */
export function cancelJobTool(deps: JobToolDeps, name = 'cancel_job'): SyncTool {
  return resilientTool({
    name,
    description: 'Cancels a background job started by another tool. A finished job is left as it is.',
    inputSchema: JOB_ID,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handler({ job_id }) {
      const before = await visibleJob(deps, job_id);
      if (before === undefined) throw notFound(job_id);
      const job = await deps.jobs.cancel(job_id);
      const message =
        (before.status === 'pending' || before.status === 'input_required') && job.status === 'canceled'
          ? before.status === 'pending'
            ? 'The job was canceled before it started.'
            : 'The job was canceled while it waited for an answer.'
          : job.status === 'in_progress'
            ? 'Cancellation was requested; the job stops within a few seconds.'
            : `The job had already finished (${job.status}); nothing was canceled.`;
      return {
        job_id: job.id,
        status: job.status,
        cancel_requested: job.cancelRequestedAt !== null,
        status_url: deps.urls.status(job.id),
        message,
      };
    },
  });
}

/**
 * The latest progress a job reported (`{ step, total, message? }`), or null: what `get_job_status` shows, from
 * the job's stored events (at most {@link MAX_EVENTS_READ} read).
 */
export async function latestProgress(store: JobStore, jobId: string): Promise<EventSummary['progress']> {
  return (await readEvents(store, jobId)).progress;
}

interface EventSummary {
  progress: { step: number; total: number; message?: string } | null;
  partials: unknown[];
  partialCount: number;
}

async function readEvents(store: JobStore, jobId: string): Promise<EventSummary> {
  const summary: EventSummary = { progress: null, partials: [], partialCount: 0 };
  let after = 0;
  for (let read = 0; read < MAX_EVENTS_READ;) {
    const events: JobEvent[] = await store.events(jobId, after, 1000);
    for (const event of events) {
      if (event.type === 'job.progress') summary.progress = event.payload as EventSummary['progress'];
      else if (event.type === 'job.partial') {
        summary.partialCount++;
        summary.partials.push((event.payload as { data?: unknown } | null)?.data ?? null);
        if (summary.partials.length > MAX_PARTIALS) summary.partials.shift();
      }
      after = event.seq;
    }
    read += events.length;
    if (events.length < 1000) break;
  }
  return summary;
}

function jobStatus(deps: JobToolDeps, job: JobRecord, events: EventSummary): Record<string, unknown> {
  const view: Record<string, unknown> = {
    job_id: job.id,
    status: job.status,
    cancel_requested: job.cancelRequestedAt !== null,
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    progress: events.progress,
    partial_results: events.partials,
    partial_count: events.partialCount,
    created_at: new Date(job.createdAt).toISOString(),
    updated_at: new Date(job.updatedAt).toISOString(),
    finished_at: job.finishedAt === null ? null : new Date(job.finishedAt).toISOString(),
    status_url: deps.urls.status(job.id),
    events_url: deps.urls.events(job.id),
  };
  if (job.status === 'completed') view['result'] = jobResultValue(deps, job);
  const now = deps.clock.now();
  if (job.status === 'failed' || job.status === 'canceled') {
    const error: ToolErrorInfo = jobErrorInfo(job.error, job.status, now);
    view['error'] = error;
  } else if (job.error !== null) {
    // A retry is scheduled: say why the last attempt failed, without the raw message (see results.ts).
    view['last_error'] = jobErrorInfo(job.error, 'failed', now);
  }
  return view;
}

/** The open question as `get_job_status` shows it (snake_case, times as ISO 8601 strings in UTC). */
export function inputRequestInfo(request: InputRequest): Record<string, unknown> {
  return {
    key: request.key,
    message: request.message,
    schema: request.schema,
    asked_at: new Date(request.askedAt).toISOString(),
    expires_at: request.expiresAt === null ? null : new Date(request.expiresAt).toISOString(),
  };
}

function notFound(id: string): BreakwaterError {
  return new BreakwaterError('not_found', { message: `There is no job ${id}.` });
}
