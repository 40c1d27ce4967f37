import { PrincipalContext, humanDuration, type Principal } from '../core/index.js';
import { callerPrincipal, listOwner } from '../jobs/index.js';
import type { JobRecord } from '../store/index.js';
import { completedResult, enqueueFor, visibleJob, type JobToolDeps } from './job-tools.js';
import { jobErrorInfo, jobErrorResult } from './results.js';
import { waitAnswering, type ElicitQuestion } from './task-elicit.js';
import { parseArgs, type JobTool } from './tool.js';
import {
  McpProtocolError,
  RPC,
  type RequestId,
  type TaskInfo,
  type TaskStatus,
  type TaskStoreLike,
  type ToolResult,
} from './types.js';

/** Defaults of {@link JobTaskStoreOptions}. */
export const TASK_STORE_DEFAULTS = { pollIntervalMs: 2_000, pageSize: 50 } as const;

/** Options of {@link JobTaskStore}. */
export interface JobTaskStoreOptions extends JobToolDeps {
  /** Job tools by name (a task is created from a `tools/call` request naming one). */
  byName: ReadonlyMap<string, JobTool>;
  /** `pollInterval` suggested to clients, ms (default 2 000). */
  pollIntervalMs?: number;
  /** Tasks per `tasks/list` page (default 50). */
  pageSize?: number;
}

/**
 * The SDK's task store (MCP 2025-11-25 "Tasks") on Breakwater's durable job store: a task is a job of a job
 * tool, and its id is the job id. Nothing about a task lives in memory, so `tasks/get`, `tasks/result`,
 * `tasks/list` and `tasks/cancel` answer the same after a restart, and from any gateway process sharing the
 * store.
 *
 * Status: `pending` and `in_progress` → `working`; `input_required` → `input_required` (the job's handler
 * asked a question, docs/jobs.md "Asking for input": its `statusMessage` is the question, answered with the
 * `respond_to_job` tool, or by the client's elicitation handler while it waits on `tasks/result`, see
 * {@link JobTaskStore.waitAnswering}); `completed` → `completed`;
 * `failed` → `failed`; `canceled` → `cancelled`. A job with a cancel request is `cancelled` at once, even while its handler is
 * still stopping and even if it then completes (the spec: a cancelled task stays cancelled).
 *
 * Tasks belong to the principal that created them (its job's owner;
 * docs/architecture.md#identity-and-ownership), not to the MCP session (the `sessionId` arguments are
 * ignored): sessions are in-memory and end with the process, and a task must be readable from the new session
 * its client opens after a restart. Every method acts for the current principal (`PrincipalContext`; outside
 * any, jobs' `callerPrincipal` rule: every task; see {@link JobTaskStore.forPrincipal} for a view bound to
 * one): `tasks/get`, `tasks/result` and `tasks/cancel` of another principal's task answer as for an unknown
 * id, and `tasks/list` lists only the principal's own tasks (the owner filter is in the store query, so pages
 * stay keyset pages); a principal with the `admin` scope sees every task.
 *
 * The job worker writes results, so {@link JobTaskStore.storeTaskResult} is refused, and
 * {@link JobTaskStore.updateTaskStatus} accepts only `cancelled` (see their docs).
 */
export class JobTaskStore implements TaskStoreLike {
  private readonly pollIntervalMs: number;
  private readonly pageSize: number;

  constructor(private readonly deps: JobTaskStoreOptions) {
    this.pollIntervalMs = deps.pollIntervalMs ?? TASK_STORE_DEFAULTS.pollIntervalMs;
    this.pageSize = deps.pageSize ?? TASK_STORE_DEFAULTS.pageSize;
  }

  /**
   * This store acting for `principal` on every call, whatever the context it is called from: what one MCP
   * session (bound to the principal that initialized it) hands the SDK.
   */
  forPrincipal(
    principal: Principal,
  ): TaskStoreLike & Pick<JobTaskStore, 'waitUntilFinished' | 'waitAnswering'> {
    const as =
      <A extends unknown[], R>(method: (...args: A) => R) =>
      (...args: A): R =>
        PrincipalContext.run(principal, () => method.apply(this, args));
    return {
      createTask: as(this.createTask),
      getTask: as(this.getTask),
      storeTaskResult: as(this.storeTaskResult),
      getTaskResult: as(this.getTaskResult),
      updateTaskStatus: as(this.updateTaskStatus),
      listTasks: as(this.listTasks),
      waitUntilFinished: as(this.waitUntilFinished),
      waitAnswering: as(this.waitAnswering),
    };
  }

  /**
   * Creates the task of a `tools/call` request naming a job tool: parses its arguments and enqueues the job.
   * The requested `ttl` is not applied: jobs are kept until an operator removes them, so `ttl` is null.
   * @throws McpProtocolError -32602 for a tool that is not a job tool or arguments that do not parse;
   *   BreakwaterError from the enqueue.
   */
  async createTask(
    _taskParams: { ttl?: number | null; pollInterval?: number },
    _requestId: RequestId,
    request: { method: string; params?: Record<string, unknown> },
  ): Promise<TaskInfo> {
    const name = request.params?.['name'];
    const tool = typeof name === 'string' ? this.deps.byName.get(name) : undefined;
    if (request.method !== 'tools/call' || tool === undefined) {
      throw new McpProtocolError(RPC.invalidParams, `Tool ${String(name)} cannot run as a task.`);
    }
    const parsed = await parseArgs(tool, request.params?.['arguments']);
    if (!parsed.ok) {
      throw new McpProtocolError(RPC.invalidParams, `The arguments are not valid: ${parsed.problems}.`);
    }
    return this.toTask(await enqueueFor(this.deps, tool, parsed.value));
  }

  async getTask(taskId: string): Promise<TaskInfo | null> {
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) return null;
    const task = this.toTask(job);
    if (task.status === 'input_required') {
      const request = await this.deps.jobs.inputRequest(job.id);
      if (request) task.statusMessage = inputRequiredMessage(job.id, request.key, request.message);
    }
    return task;
  }

  /** Refused: a job's result is written by the worker that ran it, under its lease. */
  async storeTaskResult(taskId: string): Promise<void> {
    throw new Error(
      `Task ${taskId} is a job: its result is written by the job worker, not through the task store.`,
    );
  }

  /**
   * The tool result of a finished task: the job's result through its tool (`toResult`, `toText`), or an
   * error result (`isError`) for a failed or cancelled one; a failed one's `retry_after_ms` and message tell
   * what is left of the wait its failure carried, now (`jobErrorInfo`).
   * @throws McpProtocolError -32602 for an unknown task or one still working.
   */
  async getTaskResult(taskId: string): Promise<ToolResult> {
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) throw taskNotFound(taskId);
    switch (taskStatus(job)) {
      case 'completed':
        return completedResult(this.deps, job);
      case 'failed':
        return jobErrorResult(job.error, 'failed', this.deps.clock.now());
      case 'cancelled':
        return jobErrorResult(null, 'canceled', this.deps.clock.now());
      default:
        throw new McpProtocolError(RPC.invalidParams, `Task ${taskId} has not finished yet.`);
    }
  }

  /**
   * Only `cancelled` is accepted (what `tasks/cancel` asks): it cancels the job (at once when pending; a
   * running one is asked to stop and shows `cancelled` from now on). Other transitions belong to the worker.
   * @throws McpProtocolError -32602 for an unknown task; Error for any other status.
   */
  async updateTaskStatus(taskId: string, status: TaskStatus): Promise<void> {
    if (status !== 'cancelled') {
      throw new Error(`Task ${taskId} is a job: only the job worker changes its status (asked: ${status}).`);
    }
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) throw taskNotFound(taskId);
    await this.deps.jobs.cancel(taskId);
  }

  /**
   * The current principal's tasks (every task, for `admin`), newest first, {@link JobTaskStoreOptions.pageSize}
   * per page. The cursor is the id of the last task of the previous page (keyset pagination, so a page never
   * repeats or skips a task when new ones arrive).
   * @throws Error for a cursor that is not a job id.
   */
  async listTasks(cursor?: string): Promise<{ tasks: TaskInfo[]; nextCursor?: string }> {
    if (cursor !== undefined && !/^job_[0-9a-f-]{36}$/.test(cursor)) throw new Error('Invalid cursor.');
    const limit = this.pageSize + 1;
    const owner = listOwner(callerPrincipal()) ?? undefined;
    // One keyset query per job type, merged: each served by an index in id order ((owner, id) for a
    // principal's own tasks, (type, id) for admin's).
    const pages = await Promise.all(
      [...this.deps.byType.keys()].map((type) =>
        this.deps.jobs.list({ type, beforeId: cursor, limit, ...(owner === undefined ? {} : { owner }) }),
      ),
    );
    const jobs = pages.flat().sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const page = jobs.slice(0, this.pageSize);
    const tasks = page.map((job) => this.toTask(job));
    return jobs.length > this.pageSize ? { tasks, nextCursor: page[page.length - 1]!.id } : { tasks };
  }

  /**
   * Resolves when the job behind `taskId` has ended (its terminal event is stored), or at once when its task
   * status is already terminal. Rejects with `signal`'s reason when it aborts first. The subscription is
   * removed on every path.
   */
  waitUntilFinished(taskId: string, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        subscription.dispose();
        reject(signal.reason);
      };
      // Ends are delivered asynchronously, so the abort listener is in place before any end can arrive.
      const subscription = this.deps.jobs.subscribe(taskId, 0, () => undefined, {
        onEnd: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * As {@link waitUntilFinished}, and meanwhile sends each question the job waits on to the client with
   * `elicit` and stores its answer for the current principal (see `task-elicit.ts`).
   */
  waitAnswering(taskId: string, signal: AbortSignal, elicit: ElicitQuestion): Promise<void> {
    return waitAnswering(this.deps, taskId, signal, elicit);
  }

  /** The task view of a job. */
  toTask(job: JobRecord): TaskInfo {
    const status = taskStatus(job);
    const task: TaskInfo = {
      taskId: job.id,
      status,
      ttl: null,
      createdAt: new Date(job.createdAt).toISOString(),
      lastUpdatedAt: new Date(job.updatedAt).toISOString(),
      pollInterval: this.pollIntervalMs,
    };
    if (status === 'cancelled') task.statusMessage = 'The task was cancelled.';
    else if (status === 'input_required') task.statusMessage = inputRequiredMessage(job.id);
    else if (status === 'failed') {
      task.statusMessage = jobErrorInfo(job.error, 'failed', this.deps.clock.now()).message;
    } else if (status === 'working' && job.error !== null && job.status === 'pending') {
      // The wait comes from the job's own schedule (`runAt` is already the larger of its backoff and the wait
      // the failure carried), read at the time of the request like every other reader's wait.
      const waitMs = job.runAt - this.deps.clock.now();
      const next = waitMs > 0 ? `in about ${humanDuration(waitMs)}` : 'shortly';
      task.statusMessage = `Retrying after a failure (attempt ${job.attempts} of ${job.maxAttempts} failed); the next attempt starts ${next}.`;
    }
    return task;
  }
}

/** A job's task status (see {@link JobTaskStore}). */
export function taskStatus(job: JobRecord): TaskStatus {
  if (job.status === 'canceled' || job.cancelRequestedAt !== null) return 'cancelled';
  if (job.status === 'completed') return 'completed';
  if (job.status === 'failed') return 'failed';
  if (job.status === 'input_required') return 'input_required';
  return 'working';
}

/** What an `input_required` task tells its client: the question when known, and how to answer it. */
function inputRequiredMessage(jobId: string, key?: string, question?: string): string {
  const asked =
    question === undefined ? 'The task waits for an answer from the user.' : `The task asks: ${question}`;
  const how = key === undefined ? `job_id ${jobId}` : `job_id ${jobId} and key ${JSON.stringify(key)}`;
  return `${asked} Answer it with the respond_to_job tool (${how}); get_job_status shows the question's schema.`;
}

/** True for the statuses a task never leaves. */
export function isTerminalTask(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** The answer to a task id that is unknown or not the caller's (the two are not told apart): -32602. */
export function taskNotFound(taskId: string): McpProtocolError {
  return new McpProtocolError(RPC.invalidParams, `Task not found: ${taskId}`);
}
