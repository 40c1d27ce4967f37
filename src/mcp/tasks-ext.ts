import {
  humanDuration,
  isBreakwaterError,
  isErrorCode,
  PrincipalContext,
  type Principal,
} from '../core/index.js';
import { callerPrincipal } from '../jobs/index.js';
import type { InputRequest, JobRecord } from '../store/index.js';
import { completedResult, enqueueFor, latestProgress, visibleJob, type JobToolDeps } from './job-tools.js';
import type { InputContext } from './input.js';
import { jobErrorInfo, jobErrorResult } from './results.js';
import { taskNotFound, taskStatus } from './task-store.js';
import type { JobTool } from './tool.js';
import type { CreateTaskResult, DetailedTask, TaskInputRequest } from './tasks-wire.js';
import { McpProtocolError, RPC } from './types.js';

export {
  negotiatesTasks,
  tasksCapabilityMissing,
  TASKS_EXTENSION,
  type CreateTaskResult,
  type DetailedTask,
  type ExtTask,
  type TaskError,
  type TaskInputRequest,
} from './tasks-wire.js';

/**
 * The official tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`, SEP-2663) on Breakwater's
 * durable job store: a task is a job of a job tool, its id is the job id, and nothing about it lives in
 * memory, so `tasks/get`, `tasks/update` and `tasks/cancel` answer the same from any gateway process sharing
 * the store, and after a restart.
 *
 * Negotiation (SEP-2663 "Capability Negotiation"): the server declares the extension under
 * `capabilities.extensions` in `server/discover` (when it has job tools); a request takes part only when its
 * own `_meta` client capabilities name the extension under `extensions`. A job tool called so answers with a
 * {@link CreateTaskResult} (`resultType: "task"`), and only after the job's row is committed (a `tasks/get` for
 * the id resolves at once); called without it, it answers as before (the job's handle, or its result when the
 * call waits). The `tasks/*` methods of a request without the extension are refused with -32021.
 *
 * Status (as the 2025-11-25 task store's, see `task-store.ts`): `pending` and `in_progress` → `working` (its
 * `statusMessage` is the job's latest progress message, or why it waits to retry); a job with a cancel request
 * or `canceled` → `cancelled`; `input_required` (its handler called `ctx.requestInput`) → `input_required` with
 * the question as `inputRequests` (`{ <key>: { method: 'elicitation/create', params: { mode: 'form', message,
 * requestedSchema } } }`, SEP-2663 "Input Requests"; one key per open question: `ctx.requestInputs` opens
 * several at once), answered with `tasks/update` (a partial update leaves the others open); `completed` → `completed` with the tool result inline. A `failed` job is split as
 * SEP-2663 "Task Execution Errors" requires: a failure the tool itself would answer as a result with `isError`
 * (a classified Breakwater error: an upstream down, bad input, …) is `completed` with that result inline;
 * only an internal failure (`internal_error`: a bug, a crash; or a worker lost with the job out of attempts)
 * is `failed`, with the JSON-RPC error `-32603` inline (its message is the generic sentence; no stack or
 * internal detail leaves the server).
 *
 * Ownership (docs/architecture.md#identity-and-ownership, the rule of the job tools and `task-store.ts`):
 * every method acts for the current principal (`PrincipalContext`); a task of another principal answers as an
 * unknown id (-32602), and a principal with the `admin` scope sees every task.
 */

/** Defaults of {@link TasksExtensionOptions}. */
export const TASKS_EXTENSION_DEFAULTS = { ttlMs: null, pollIntervalMs: 2_000 } as const;

/** Options of {@link JobTasksExtension}. */
export interface TasksExtensionOptions extends JobToolDeps {
  /**
   * `ttlMs` told to clients, ms, or null (default): no limit. Tasks are never expired by the gateway (a job
   * stays until the store's retention removes it once finished), so set it to at most that retention.
   */
  ttlMs?: number | null;
  /** `pollIntervalMs` suggested to clients, ms (default 2 000). */
  pollIntervalMs?: number;
}

/** The extension's methods over the job store (see the file's doc). */
export class JobTasksExtension {
  readonly ttlMs: number | null;
  readonly pollIntervalMs: number;

  constructor(private readonly deps: TasksExtensionOptions) {
    this.ttlMs = deps.ttlMs ?? TASKS_EXTENSION_DEFAULTS.ttlMs;
    this.pollIntervalMs = deps.pollIntervalMs ?? TASKS_EXTENSION_DEFAULTS.pollIntervalMs;
  }

  /** This extension's `tasks/*` methods acting for `principal`, whatever the context they are called from. */
  forPrincipal(principal: Principal): Pick<JobTasksExtension, 'get' | 'cancel' | 'update'> {
    const as =
      <A extends unknown[], R>(method: (...args: A) => R) =>
      (...args: A): R =>
        PrincipalContext.run(principal, () => method.apply(this, args));
    return { get: as(this.get), cancel: as(this.cancel), update: as(this.update) };
  }

  /**
   * Enqueues the job of `tool` with the parsed `args` for the current principal and answers its task once the
   * job row is committed and read back (SEP-2663 "Task Creation": durable before the answer).
   * @throws BreakwaterError from the enqueue (the caller turns it into a tool error or a protocol error).
   */
  async create(tool: JobTool, args: unknown, input?: InputContext): Promise<CreateTaskResult> {
    const job = await enqueueFor(this.deps, tool, args, input);
    const { taskId, status, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs } = this.detailed(job, null);
    return { resultType: 'task', taskId, status, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs };
  }

  /**
   * `tasks/get`: the task with its status-specific fields.
   * @throws McpProtocolError -32602 for an unknown task or one of another principal.
   */
  async get(taskId: string): Promise<DetailedTask> {
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) throw taskNotFound(taskId);
    const status = taskStatus(job);
    if (status === 'input_required') {
      const requests = (await this.deps.store.jobInput(job.id))?.requests ?? [];
      return this.detailed(job, null, requests);
    }
    const progress = status === 'working' ? await latestProgress(this.deps.store, job.id) : null;
    return this.detailed(job, progress?.message ?? null);
  }

  /**
   * `tasks/cancel`: cancels a pending job at once, asks a running one to stop (its task shows `cancelled` from
   * now on), and leaves a finished one as it is; answers nothing (the ack), as SEP-2663 "Task Cancellation".
   * @throws McpProtocolError -32602 for an unknown task or one of another principal.
   */
  async cancel(taskId: string): Promise<void> {
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) throw taskNotFound(taskId);
    if (job.status === 'pending' || job.status === 'in_progress') await this.deps.jobs.cancel(taskId);
  }

  /**
   * `tasks/update`: delivers `inputResponses` to a task waiting for input (SEP-2663 "Task Update Requests").
   * The response under the key of a question the job waits on is its answer, an elicitation result
   * (`{ action: 'accept', content }` or `{ action: 'decline' | 'cancel' }`), stored through `Jobs.respond`
   * for the current principal (so the job's owner or `admin` only), one key at a time in the order the
   * questions were asked. A job that asked several at once (`ctx.requestInputs`) keeps waiting on the ones
   * not answered yet (a partial update); once none is left, it goes back to `pending` and its handler's
   * `ctx.requestInput(s)` resolves with the answers on the rerun. Responses under keys that are not
   * outstanding are ignored, as the SEP says (also when the question was answered, canceled or expired
   * meanwhile); with none outstanding the update changes nothing. The ack is empty (`{ resultType:
   * 'complete' }` on the wire).
   * @throws McpProtocolError -32602 for an unknown task or one of another principal, for `inputResponses`
   *   that is not an object, and for an answer `Jobs.respond` refuses as malformed (not `{ action,
   *   content? }`, content not fitting the schema, past 64 KiB: `data.problems` when known); that question
   *   and the ones after it stay open then (the answers before it are stored).
   */
  async update(taskId: string, inputResponses: unknown): Promise<void> {
    if (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses)) {
      throw new McpProtocolError(RPC.invalidParams, 'inputResponses must be an object.');
    }
    const job = await visibleJob(this.deps, taskId);
    if (job === undefined) throw taskNotFound(taskId);
    if (job.status !== 'input_required') return;
    for (const request of (await this.deps.store.jobInput(job.id))?.requests ?? []) {
      if (!Object.hasOwn(inputResponses, request.key)) continue;
      const answer = (inputResponses as Record<string, unknown>)[request.key];
      if (!(await this.answer(taskId, job.id, request.key, answer))) return;
    }
  }

  /** Stores one answer; true to go on with the next key, false when the questions expired (none is left). */
  private async answer(taskId: string, jobId: string, key: string, answer: unknown): Promise<boolean> {
    try {
      await this.deps.jobs.respond(jobId, key, answer, { principal: callerPrincipal() });
      return true;
    } catch (error) {
      if (!isBreakwaterError(error)) throw error;
      // Answered, canceled or expired since the read above: the key is no longer outstanding.
      if (error.code === 'input_not_awaited') return true;
      if (error.code === 'input_timeout') return false;
      if (error.code === 'not_found') throw taskNotFound(taskId);
      if (error.code === 'invalid_payload' || error.code === 'payload_too_large') {
        const problems = (error.details as { problems?: unknown } | undefined)?.problems;
        throw new McpProtocolError(
          RPC.invalidParams,
          `inputResponses[${JSON.stringify(key)}]: ${error.message}`,
          problems === undefined ? undefined : { problems },
        );
      }
      throw error;
    }
  }

  /**
   * The detailed task of a job; `progressMessage`: its latest progress message, if any (for `working`);
   * `requests`: the questions an `input_required` job waits on (all shown in `inputRequests`; the first one's
   * message is the status message).
   */
  detailed(
    job: JobRecord,
    progressMessage: string | null,
    requests: readonly InputRequest[] = [],
  ): DetailedTask {
    const base = {
      taskId: job.id,
      createdAt: new Date(job.createdAt).toISOString(),
      lastUpdatedAt: new Date(job.updatedAt).toISOString(),
      ttlMs: this.ttlMs,
      pollIntervalMs: this.pollIntervalMs,
    };
    const now = this.deps.clock.now();
    switch (taskStatus(job)) {
      case 'cancelled':
        return { ...base, status: 'cancelled', statusMessage: 'The task was cancelled.' };
      case 'completed':
        return { ...base, status: 'completed', result: completedResult(this.deps, job) };
      case 'input_required': {
        const task: DetailedTask = { ...base, status: 'input_required' };
        if (requests.length > 0) {
          task.statusMessage = requests[0]!.message;
          task.inputRequests = Object.fromEntries(
            requests.map((request) => [request.key, taskInputRequest(request)]),
          );
        }
        return task;
      }
      case 'failed': {
        const info = jobErrorInfo(job.error, 'failed', now);
        if (!isInternalFailure(job)) {
          return { ...base, status: 'completed', result: jobErrorResult(job.error, 'failed', now) };
        }
        return {
          ...base,
          status: 'failed',
          statusMessage: info.message,
          error: { code: RPC.internalError, message: info.message, data: { error: info } },
        };
      }
      default: {
        const task: DetailedTask = { ...base, status: 'working' };
        if (job.error !== null && job.status === 'pending') {
          const waitMs = job.runAt - now;
          const next = waitMs > 0 ? `in about ${humanDuration(waitMs)}` : 'shortly';
          task.statusMessage = `Retrying after a failure (attempt ${job.attempts} of ${job.maxAttempts} failed); the next attempt starts ${next}.`;
        } else if (progressMessage !== null && progressMessage !== '') {
          task.statusMessage = progressMessage;
        }
        return task;
      }
    }
  }
}

/** The `inputRequests` entry of a job's question: a form `elicitation/create` (no schema: no fields). */
export function taskInputRequest(request: InputRequest): TaskInputRequest {
  const requestedSchema = request.schema ?? { type: 'object', properties: {} };
  return {
    method: 'elicitation/create',
    params: { mode: 'form', message: request.message, requestedSchema: { ...requestedSchema } },
  };
}

/**
 * True when a failed job's error is not one its tool would answer as a result: `internal_error` (a bug), or
 * a code only the job runtime writes (`lease_expired`: the worker was lost and the job ran out of attempts).
 */
function isInternalFailure(job: JobRecord): boolean {
  const code = job.error?.code ?? 'internal_error';
  return code === 'internal_error' || !isErrorCode(code);
}
