/**
 * Tool calls, observed: each runs in a `tool <name>` span and a `LogContext` with its `correlation_id` and
 * `tool`, between a `tool call started` and a `tool call ended` log line. The scope is what lets every line
 * and span below it (an upstream's failure, a ledger's transition, a job enqueued by the call) name the call
 * without being told.
 */
import { context, propagation, trace, type Attributes, type Span } from '@opentelemetry/api';
import { LogContext, toBreakwaterError, type Clock, type Log, type LogLevel } from '../core/index.js';
import { errorType, failSpan, tracer, withSpan } from '../core/trace.js';
import type { CallScope } from './run.js';
import type { McpTool } from './tool.js';
import { McpProtocolError, type CreateTaskAnswer, type ToolErrorInfo, type ToolResult } from './types.js';

/** How a tool call ended, as its span and its last log line tell it. */
export interface ToolCallSummary {
  outcome: 'succeeded' | 'failed' | 'unknown';
  /** The generic code of a failure (`circuit_open`, `deadline_exceeded`, `internal_error`, …). */
  code?: string;
  /** The dependency's own code, when it differs (`gift_service_busy`). */
  dependency_code?: string;
  operation_id?: string;
  job_id?: string;
}

export class ToolCallObserver {
  private readonly spanNames = new Map<string, string>();

  constructor(
    private readonly log: Log,
    private readonly clock: Clock,
  ) {}

  /**
   * Runs `work` as the call of `tool`. The span's parent is the active span (an HTTP server span of an
   * instrumented app) or, when there is none, the trace context the client sent in the request's headers
   * (`traceparent`, through the registered propagator). `summarize` reads the outcome off the answer; a
   * rejection of `work` is summarized here and rethrown.
   */
  async observe<R>(
    tool: McpTool,
    scope: CallScope,
    headers: Record<string, string | string[] | undefined>,
    work: () => Promise<R>,
    summarize: (answer: R) => ToolCallSummary,
  ): Promise<R> {
    let parent = context.active();
    if (trace.getSpan(parent) === undefined) parent = propagation.extract(parent, headers);
    const span = tracer().startSpan(this.spanName(tool.name), undefined, parent);
    if (span.isRecording()) {
      span.setAttributes({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.name,
        'mcp.method.name': 'tools/call',
        'breakwater.correlation_id': scope.correlationId,
      });
    }
    const fields = { correlation_id: scope.correlationId, tool: tool.name };
    return LogContext.run(fields, () =>
      withSpan(
        span,
        async () => {
          const logged = this.log.enabled('info');
          const startedAt = logged ? this.clock.now() : 0;
          if (logged) this.log.info({}, 'tool call started');
          let summary: ToolCallSummary;
          let thrown: unknown;
          try {
            const answer = await work();
            summary = summarize(answer);
            return answer;
          } catch (error) {
            thrown = error;
            summary = thrownSummary(error);
            throw error;
          } finally {
            endSpan(span, summary!, thrown);
            if (logged) this.logEnd(summary!, this.clock.now() - startedAt);
          }
        },
        parent,
      ),
    );
  }

  private spanName(name: string): string {
    let spanName = this.spanNames.get(name);
    if (spanName === undefined) this.spanNames.set(name, (spanName = `tool ${name}`));
    return spanName;
  }

  private logEnd(summary: ToolCallSummary, durationMs: number): void {
    const fields: Record<string, unknown> = { outcome: summary.outcome };
    if (summary.code !== undefined) fields['code'] = summary.code;
    if (summary.dependency_code !== undefined) fields['dependency_code'] = summary.dependency_code;
    if (summary.operation_id !== undefined) fields['operation_id'] = summary.operation_id;
    if (summary.job_id !== undefined) fields['job_id'] = summary.job_id;
    fields['duration_ms'] = durationMs;
    this.log.write(levelOf(summary), fields, 'tool call ended');
  }
}

/**
 * The summary of a tool result: a failure's `structuredContent.error` ({@link ToolErrorInfo}); a success's
 * `outcome`, `operation_id` and `job_id` members when it has them (an operation's result, a job's handle).
 */
export function summarizeResult(result: ToolResult): ToolCallSummary {
  const structured = result.structuredContent;
  if (result.isError === true) {
    const info = structured?.['error'] as Partial<ToolErrorInfo> | undefined;
    const summary: ToolCallSummary = { outcome: info?.outcome === 'unknown' ? 'unknown' : 'failed' };
    if (typeof info?.category === 'string') summary.code = info.category;
    if (typeof info?.code === 'string' && info.code !== info.category) summary.dependency_code = info.code;
    if (typeof info?.operation_id === 'string') summary.operation_id = info.operation_id;
    return summary;
  }
  const outcome = structured?.['outcome'];
  const summary: ToolCallSummary = {
    outcome: outcome === 'failed' || outcome === 'unknown' ? outcome : 'succeeded',
  };
  const operationId = structured?.['operation_id'];
  if (typeof operationId === 'string') summary.operation_id = operationId;
  const jobId = structured?.['job_id'];
  if (typeof jobId === 'string') summary.job_id = jobId;
  return summary;
}

/** The summary of a task created for a call: its id is the job's. */
export function summarizeTask(answer: CreateTaskAnswer): ToolCallSummary {
  return { outcome: 'succeeded', job_id: answer.task.taskId };
}

/** The summary of a 2026-07-28 job tool call: a task (`resultType: "task"`) or a plain tool result. */
export function summarizeTaskOrResult(
  answer: ToolResult | { resultType: 'task'; taskId: string },
): ToolCallSummary {
  const task = answer as { resultType?: unknown; taskId: string };
  return task.resultType === 'task'
    ? { outcome: 'succeeded', job_id: task.taskId }
    : summarizeResult(answer as ToolResult);
}

function thrownSummary(error: unknown): ToolCallSummary {
  if (error instanceof McpProtocolError) {
    const info = (error.data as { error?: Partial<ToolErrorInfo> } | undefined)?.error;
    return { outcome: 'failed', code: typeof info?.category === 'string' ? info.category : 'protocol_error' };
  }
  const err = toBreakwaterError(error);
  return { outcome: err.outcome === 'unknown' ? 'unknown' : 'failed', code: err.code };
}

function endSpan(span: Span, summary: ToolCallSummary, thrown: unknown): void {
  if (!span.isRecording()) return span.end();
  const attributes: Attributes = { 'breakwater.outcome': summary.outcome };
  if (summary.dependency_code !== undefined)
    attributes['breakwater.dependency_code'] = summary.dependency_code;
  if (summary.operation_id !== undefined) attributes['breakwater.operation_id'] = summary.operation_id;
  if (summary.job_id !== undefined) attributes['breakwater.job_id'] = summary.job_id;
  span.setAttributes(attributes);
  if (summary.outcome === 'succeeded') return span.end();
  const code = summary.code ?? (thrown === undefined ? summary.outcome : errorType(thrown));
  failSpan(span, thrown ?? code, code);
}

function levelOf(summary: ToolCallSummary): LogLevel {
  if (summary.outcome === 'succeeded') return 'info';
  return summary.code === 'internal_error' ? 'error' : 'warn';
}
