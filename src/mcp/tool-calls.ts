/**
 * One `tools/call` of the MCP server (`server.ts`), for both protocol eras: a `resilientTool`'s call (on
 * 2026-07-28 it may answer `input_required`), a job tool's plain call (its handle, or its outcome when the call
 * waits), a 2025-11-25 task (task store, progress forwarded to the session) and a 2026-07-28 tasks-extension
 * task; every call observed (span, logs) by the server's {@link ToolCallObserver}.
 */
import { BreakwaterError, Deadline, PrincipalContext, type Clock, type Disposable } from '../core/index.js';
import type { JobRecord } from '../store/index.js';
import { enqueueFor, finishedResult, jobHandle, jobMessage, type JobToolDeps } from './job-tools.js';
import { inputRequiredOf, isInputRequiredAnswer, type InputRequiredAnswer } from './input.js';
import {
  summarizeResult,
  summarizeTask,
  summarizeTaskOrResult,
  type ToolCallObserver,
  type ToolCallSummary,
} from './observe.js';
import { forwardJobProgress, waitForJob } from './progress.js';
import { errorResult, successResult, toolErrorInfo } from './results.js';
import { correlationIdFrom, runUnderDeadline, type CallScope } from './run.js';
import type { SdkToolCall } from './sdk.js';
import type { Session } from './sessions.js';
import type { JobTaskStore } from './task-store.js';
import { tasksCapabilityMissing, type CreateTaskResult, type JobTasksExtension } from './tasks-ext.js';
import { parseArgs, type JobTool, type McpTool, type SyncTool } from './tool.js';
import {
  McpProtocolError,
  MODEL_IMMEDIATE_RESPONSE_META,
  RPC,
  type CreateTaskAnswer,
  type ToolResult,
} from './types.js';

/** What the calls need of the server: its clock, job deps, task runtimes, tools by name, observer, reporter. */
export interface ToolCallContext {
  clock: Clock;
  /** Undefined when the server has no job tools. */
  deps: JobToolDeps | undefined;
  taskStore: JobTaskStore | undefined;
  tasksExt: JobTasksExtension | undefined;
  byName: ReadonlyMap<string, McpTool>;
  observer: ToolCallObserver;
  /** Hands an internal error to the server's `onError` (or a process warning). */
  report(error: unknown, context: { tool?: string; correlationId?: string; sessionId?: string }): void;
}

/** What one `tools/call` answers, by era and path. */
export type ToolCallAnswer = ToolResult | CreateTaskAnswer | CreateTaskResult | InputRequiredAnswer;

/**
 * The server's `tools/call`: `(session, call)`, `session` undefined on the stateless 2026-07-28 path.
 * @throws McpProtocolError -32602 for an unknown tool, -32601 for a 2025-11-25 task of a tool without task
 *   support or a plain call of a task-required tool, -32021 for such a call on 2026-07-28 without the tasks
 *   extension, -32603 when a 2025-11-25 task cannot be created.
 */
export function createToolCaller(
  context: ToolCallContext,
): (session: Session | undefined, call: SdkToolCall) => Promise<ToolCallAnswer> {
  const { clock, deps, taskStore, tasksExt, byName, observer, report } = context;

  /** A call of a `resilientTool`; on 2026-07-28 it may answer the questions its run left unanswered. */
  async function callSync(
    tool: SyncTool,
    call: SdkToolCall,
    scope: CallScope,
  ): Promise<ToolResult | InputRequiredAnswer> {
    const parsed = await parseArgs(tool, call.arguments);
    if (!parsed.ok) return invalidArguments(parsed.problems);
    const settled = await runUnderDeadline(tool, scope, clock, (ctx) =>
      tool.handler(parsed.value as never, ctx),
    );
    const asked = pendingInput(tool, scope);
    if (asked !== undefined) return asked;
    return finish(tool, scope, settled, (value) =>
      successResult(value, tool.toText?.(value as never), tool.toContent?.(value as never)),
    );
  }

  /**
   * A plain call of a job tool: enqueues the job under the tool's deadline and answers with its handle; with a
   * progress token, first waits for the job until the call's deadline (see `jobTool`).
   */
  async function callJob(
    tool: JobTool,
    call: SdkToolCall,
    scope: CallScope,
  ): Promise<ToolResult | InputRequiredAnswer> {
    // The call's deadline: the tool's from now, or the request's when that is sooner.
    const until = clock.now() + Math.min(tool.deadlineMs, Deadline.remaining());
    const parsed = await parseArgs(tool, call.arguments);
    if (!parsed.ok) return invalidArguments(parsed.problems);
    const settled = await runUnderDeadline(tool, scope, clock, (ctx) =>
      enqueueFor(deps!, tool, parsed.value, ctx),
    );
    const asked = pendingInput(tool, scope);
    if (asked !== undefined) return asked;
    if (!settled.ok || scope.progressToken === undefined)
      return finish(tool, scope, settled, (job) => successResult(jobHandle(deps!, job)));
    const job = settled.value;
    await waitForJob({ jobs: deps!.jobs, jobId: job.id, clock, until, scope });
    let latest: JobRecord = job;
    try {
      latest = (await deps!.jobs.get(job.id)) ?? job;
    } catch (error) {
      // The job was enqueued: its handle is still the honest answer.
      report(error, { tool: tool.name, correlationId: scope.correlationId });
    }
    // A job that ended just as the deadline came still answers with its outcome.
    return finish(
      tool,
      scope,
      { ok: true, value: latest },
      (current) => finishedResult(deps!, current) ?? successResult(jobHandle(deps!, current, true)),
    );
  }

  async function startTask(
    tool: JobTool,
    call: SdkToolCall,
    scope: CallScope,
    session: Session,
  ): Promise<CreateTaskAnswer> {
    const settled = await runUnderDeadline(tool, scope, clock, () =>
      taskStore!.createTask({ ttl: call.task?.ttl }, call.requestId, {
        method: 'tools/call',
        params: { name: call.name, arguments: call.arguments },
      }),
    );
    if (!settled.ok) {
      if (settled.error instanceof McpProtocolError) throw settled.error;
      const info = toolErrorInfo(settled.error);
      if (info.category === 'internal_error')
        report(settled.error, { tool: tool.name, correlationId: scope.correlationId });
      // A task request must be answered with a task; a failure to create one is a protocol error.
      throw new McpProtocolError(RPC.internalError, info.message, { error: info });
    }
    const task = settled.value;
    follow(session, task.taskId, call);
    // Spec 2025-11-25: a host may show the model this sentence while the task runs.
    return {
      task,
      _meta: { [MODEL_IMMEDIATE_RESPONSE_META]: jobMessage(task.taskId, task.status !== 'working') },
    };
  }

  /**
   * A job tool called on 2026-07-28 by a request that declared the tasks extension: enqueues its job under the
   * tool's deadline and answers the task once the job is committed; bad arguments and a failed enqueue answer
   * as a plain call's (a tool result with `isError`), never with a task.
   */
  async function startExtTask(
    tool: JobTool,
    call: SdkToolCall,
    scope: CallScope,
  ): Promise<ToolResult | CreateTaskResult | InputRequiredAnswer> {
    const parsed = await parseArgs(tool, call.arguments);
    if (!parsed.ok) return invalidArguments(parsed.problems);
    const settled = await runUnderDeadline(tool, scope, clock, (ctx) =>
      tasksExt!.create(tool, parsed.value, ctx),
    );
    // Questions first (SEP-2663 "MRTR → Tasks"): the task is made only on the round that has every answer.
    const asked = pendingInput(tool, scope);
    if (asked !== undefined) return asked;
    if (settled.ok) return settled.value;
    return finish(tool, scope, settled, () => ({ content: [] }));
  }

  /**
   * Forwards a task's progress and final status to the session (its standalone stream) until its job ends or
   * the session closes.
   */
  function follow(session: Session, taskId: string, call: SdkToolCall): void {
    const forwarder: Disposable = forwardJobProgress({
      jobs: deps!.jobs,
      jobId: taskId,
      progressToken: call.progressToken,
      taskId,
      send: (method, params) => session.sdk.notify(method, params),
      finalTask: () => PrincipalContext.run(session.principal, () => taskStore!.getTask(taskId)),
      onEnd: () => session.forwarders.delete(forwarder),
    });
    session.forwarders.add(forwarder);
  }

  /**
   * What a run that asked the user answers instead of its result: `input_required` with the questions left
   * open (2026-07-28), or the tool error of a round that cannot go on (too many rounds, too much state); none
   * when nothing is open. A capability the client did not declare is the request's error (-32021), thrown.
   */
  function pendingInput(tool: McpTool, scope: CallScope): InputRequiredAnswer | ToolResult | undefined {
    try {
      return inputRequiredOf(scope.input);
    } catch (error) {
      if (error instanceof McpProtocolError) throw error;
      return finish(tool, scope, { ok: false, error }, () => ({ content: [] }));
    }
  }

  function finish<T>(
    tool: McpTool,
    scope: CallScope,
    settled: { ok: true; value: T } | { ok: false; error: unknown },
    toResult: (value: T) => ToolResult,
  ): ToolResult {
    let error: unknown;
    if (settled.ok) {
      try {
        return toResult(settled.value);
      } catch (thrown) {
        error = thrown; // a result with no JSON form, a throwing toText: a bug of the tool
      }
    } else {
      error = settled.error;
    }
    const result = errorResult(error, { idempotent: tool.annotations?.idempotentHint === true });
    const info = result.structuredContent?.['error'] as { category?: string } | undefined;
    if (info?.category === 'internal_error')
      report(error, { tool: tool.name, correlationId: scope.correlationId });
    return result;
  }

  /** One `tools/call`; `session` is undefined on the stateless path, where `call.task` is never set. */
  async function callTool(session: Session | undefined, call: SdkToolCall): Promise<ToolCallAnswer> {
    const tool = byName.get(call.name);
    if (tool === undefined) throw new McpProtocolError(RPC.invalidParams, `Unknown tool: ${call.name}`);
    const progressToken = call.progressToken;
    const scope: CallScope = {
      signal: call.signal,
      correlationId: correlationIdFrom(call.headers),
      progressToken,
      sendProgress: (params) => call.notify('notifications/progress', { ...params, progressToken }),
      sendLog: call.log,
      closeStream: call.closeStream,
      input: call.input,
    };
    if (call.task !== undefined && session !== undefined) {
      // Spec 2025-11-25: a task-augmented call of a tool without task support is "method not found".
      if (tool.kind !== 'job')
        throw new McpProtocolError(RPC.methodNotFound, `Tool ${tool.name} does not run as a task.`);
      return observer.observe(
        tool,
        scope,
        call.headers,
        () => startTask(tool, call, scope, session),
        summarizeTask,
      );
    }
    if (tool.kind === 'job' && session === undefined && call.tasksExtension === true) {
      const start = () => startExtTask(tool, call, scope);
      return observer.observe(tool, scope, call.headers, start, (answer) =>
        isInputRequiredAnswer(answer) ? { outcome: 'succeeded' } : summarizeTaskOrResult(answer),
      );
    }
    if (tool.kind === 'job' && tool.taskSupport === 'required') {
      // SEP-2663: a tool that cannot answer without a task needs the extension (-32021); 2025-11-25 answers
      // a plain call of a task-required tool with -32601.
      if (session === undefined) throw tasksCapabilityMissing(`tools/call of ${tool.name}`);
      throw new McpProtocolError(RPC.methodNotFound, `Tool ${tool.name} runs only as a task.`);
    }
    return observer.observe(
      tool,
      scope,
      call.headers,
      () => (tool.kind === 'job' ? callJob(tool, call, scope) : callSync(tool, call, scope)),
      summarizeAnswer,
    );
  }

  return callTool;
}

/** A call's log summary; a round that asks for input ended as designed. */
function summarizeAnswer(answer: ToolResult | InputRequiredAnswer): ToolCallSummary {
  return isInputRequiredAnswer(answer) ? { outcome: 'succeeded' } : summarizeResult(answer);
}

function invalidArguments(problems: string): ToolResult {
  return errorResult(
    new BreakwaterError('invalid_payload', { message: `The arguments are not valid: ${problems}.` }),
  );
}
