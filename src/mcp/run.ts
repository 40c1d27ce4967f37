import {
  BreakwaterError,
  Deadline,
  isBreakwaterError,
  LinkedAbort,
  newId,
  type Clock,
} from '../core/index.js';
import { inputContext, type InputChannel } from './input.js';
import { LOG_LEVELS, type LogLevel, type McpTool, type ToolContext } from './tool.js';

/** `notifications/progress` parameters, without the token (the call scope adds it). */
export interface ProgressParams {
  progress: number;
  total?: number;
  message?: string;
}

/** What the server knows about one `tools/call` request. */
export interface CallScope {
  /** Aborts when the client cancels the request or the session closes. */
  signal: AbortSignal;
  correlationId: string;
  /** The caller's `_meta.progressToken`, if any. */
  progressToken: string | number | undefined;
  /** Sends one `notifications/progress` for this request (on its own stream while it is open). */
  sendProgress(params: ProgressParams): Promise<void>;
  /** How the call asks the user (see `input.ts`); none: `ctx.requestInput` fails `input_unavailable`. */
  input?: InputChannel;
  /**
   * Sends one `notifications/message` for this request when the client asked for `level` (the adapter knows
   * the session's or the request's threshold); absent: logs go nowhere.
   */
  sendLog?(level: LogLevel, data: unknown): Promise<void>;
  /** Ends the request's resumable stream (see `SdkToolCall.closeStream`); absent: nothing to end. */
  closeStream?(): void;
}

/** Most log messages one call sends (later ones are dropped). */
export const MAX_LOGS_PER_CALL = 100;
/** Most bytes of one log message's `data` as JSON; a larger one is sent as its first this many characters. */
export const MAX_LOG_DATA_CHARS = 16_384;

/** What {@link runUnderDeadline} needs of what it runs: a tool, or a resource read or prompt get. */
export type DeadlineOwner = Pick<McpTool, 'name' | 'deadlineMs' | 'annotations'>;

/** How a run under the deadline ended. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Runs `work` under the tool's deadline: a core `Deadline` of `tool.deadlineMs` (so every policy inside fits
 * its waits to it) and a signal that aborts at the deadline or when the caller's `scope.signal` aborts.
 * Settles at the first of: the work settling, the deadline (BreakwaterError `deadline_exceeded`), the
 * caller's abort (the abort reason when it is a BreakwaterError, else `canceled`). It never waits for work
 * that ignores its signal; a late settle of that work is ignored. Never rejects.
 */
export function runUnderDeadline<T>(
  tool: DeadlineOwner,
  scope: CallScope,
  clock: Clock,
  work: (ctx: ToolContext) => T | Promise<T>,
): Promise<Settled<T>> {
  const link = new LinkedAbort(scope.signal);
  const deadline = clock.now() + tool.deadlineMs;
  return new Promise<Settled<T>>((resolve) => {
    let done = false;
    const finish = (settled: Settled<T>): void => {
      if (done) return;
      done = true;
      clock.clearTimeout(timer);
      link.signal.removeEventListener('abort', onAbort);
      link.dispose();
      resolve(settled);
    };
    let operation: { id: string; reconcile: { method: string; path: string } | null } | undefined;
    const onAbort = (): void => {
      const error = abortError(link.signal.reason);
      finish({ ok: false, error: operation === undefined ? error : withOperation(error, operation) });
    };
    const timer = clock.setTimeout(() => link.abort(deadlineError(tool)), tool.deadlineMs);
    if (link.signal.aborted) return onAbort();
    link.signal.addEventListener('abort', onAbort);

    let last = -Infinity;
    let logs = 0;
    const ctx: ToolContext = {
      ...inputContext(scope.input, link.signal),
      log(level, data) {
        if (done || scope.sendLog === undefined || logs >= MAX_LOGS_PER_CALL) return;
        if (!LOG_LEVELS.includes(level)) return;
        logs++;
        scope.sendLog(level, boundedLogData(data)).catch(() => {
          // Logging is best effort: a closed stream must not fail the work.
        });
      },
      closeStream() {
        if (!done) scope.closeStream?.();
      },
      operation(id, reconcile) {
        operation = { id, reconcile: reconcile ?? null };
      },
      signal: link.signal,
      deadline,
      correlationId: scope.correlationId,
      async progress(progress, total, message) {
        // After the answer the request is over: its token is no longer valid (MCP: progress tokens are
        // bound to an active request).
        if (done || scope.progressToken === undefined) return;
        if (typeof progress !== 'number' || !Number.isFinite(progress) || progress <= last) return;
        last = progress;
        const params: ProgressParams = { progress };
        if (typeof total === 'number' && Number.isFinite(total)) params.total = total;
        if (message !== undefined) params.message = String(message);
        try {
          await scope.sendProgress(params);
        } catch {
          // Progress is best effort: a closed stream must not fail the work.
        }
      },
    };

    let running: Promise<T>;
    try {
      running = Promise.resolve(Deadline.runAt(deadline, () => work(ctx), clock));
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (value) => finish({ ok: true, value }),
      (error: unknown) => finish({ ok: false, error }),
    );
  });
}

/** `data` as a JSON value of at most {@link MAX_LOG_DATA_CHARS} characters (else the cut JSON text). */
function boundedLogData(data: unknown): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    return String(data).slice(0, MAX_LOG_DATA_CHARS); // a cycle, a BigInt: its text
  }
  if (json === undefined) return null;
  return json.length <= MAX_LOG_DATA_CHARS ? data : json.slice(0, MAX_LOG_DATA_CHARS);
}

/**
 * The error of a call cut off by its deadline. A tool not declared read-only may have changed something
 * before it was cut off, so the outcome is `unknown` and the sentence says to check first.
 */
export function deadlineError(tool: DeadlineOwner): BreakwaterError {
  const readOnly = tool.annotations?.readOnlyHint === true;
  return new BreakwaterError('deadline_exceeded', {
    message: readOnly
      ? undefined
      : 'The request ran out of time before it finished, so it may or may not have taken effect; check before trying again.',
    outcome: readOnly ? 'failed' : 'unknown',
    source: `tool:${tool.name}`,
    details: { timeout_ms: tool.deadlineMs },
  });
}

/**
 * A deadline or cancel answer of a call whose operation was already persisted: it may have been sent, so the
 * outcome is `unknown`, with the operation's id and lookup.
 */
function withOperation(
  error: BreakwaterError,
  operation: { id: string; reconcile: { method: string; path: string } | null },
): BreakwaterError {
  return new BreakwaterError(error.code, {
    message:
      error.outcome === 'unknown'
        ? error.message
        : 'The request was cut off after it started an action, so the action may or may not have happened; check its status before trying again.',
    kind: error.kind,
    status: error.status,
    retryAfterMs: error.retryAfterMs,
    outcome: 'unknown',
    operationId: operation.id,
    source: error.source,
    details: { ...error.details, reconcile: operation.reconcile },
    cause: error,
  });
}

function abortError(reason: unknown): BreakwaterError {
  if (isBreakwaterError(reason)) return reason;
  return new BreakwaterError('canceled', { message: 'The call was canceled before it finished.' });
}

/** A correlation id header value we pass on as it is: 1..128 of `A-Za-z0-9._:-`. */
const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The correlation id of a request: the `x-correlation-id` header when usable (so a caller's id flows through
 * to the upstream calls and logs), else a new one. Anything else is replaced, never echoed, so a hostile
 * value cannot reach logs or headers downstream.
 */
export function correlationIdFrom(
  headers: Record<string, string | string[] | undefined> | undefined,
): string {
  const raw = headers?.['x-correlation-id'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value !== undefined && CORRELATION_ID.test(value) ? value : newId();
}
