import {
  ERROR_CODES,
  isErrorCode,
  sentenceFor,
  toBreakwaterError,
  type BreakwaterError,
} from '../core/index.js';
import { jobErrorMessage, retryAfterMsOf } from '../jobs/index.js';
import type { JobError } from '../store/index.js';
import { checkContent } from './content.js';
import type { ToolErrorInfo, ToolResult } from './types.js';

/**
 * Tool results as the model reads them. A success carries the value twice, as text for the model and as
 * `structuredContent` for programs; a failure is a result with `isError: true`, one sentence the model can
 * say, and `structuredContent.error` ({@link ToolErrorInfo}), never a JSON-RPC error, so the model can
 * explain the failure instead of inventing an answer (MCP 2025-11-25, "Tools": error handling).
 */

/**
 * A success result: `text` (default: the value as JSON) and the value as `structuredContent` (a non-object
 * value, an array included, is wrapped as `{ result: value }` because the spec requires an object). With
 * `content` (content blocks, see `content.ts`), those blocks replace the text block.
 * @throws TypeError when `content` is given but is not a non-empty array of well-formed blocks.
 */
export function successResult(value: unknown, text?: string, content?: unknown): ToolResult {
  const structured = asObject(value);
  return {
    content:
      content === undefined
        ? [{ type: 'text', text: text ?? JSON.stringify(value ?? null) }]
        : checkContent(content),
    structuredContent: structured,
  };
}

/**
 * A failure result for anything thrown. Non-Breakwater failures go through core's `toBreakwaterError`
 * (classification); `internal_error` (a programming error: TypeError, RangeError, …) always gets the generic
 * sentence, so no message, stack or internal detail reaches the model.
 */
export function errorResult(error: unknown, options: ErrorResultOptions = {}): ToolResult {
  const info = toolErrorInfo(error, options);
  return {
    content: [{ type: 'text', text: info.message }],
    structuredContent: { error: info },
    isError: true,
  };
}

/** Options of {@link errorResult}. */
export interface ErrorResultOptions {
  /**
   * The call may be repeated safely (the tool's `idempotentHint`): a transient failure whose outcome is
   * `unknown` is then retryable too (core's classification does the same for idempotent requests).
   */
  idempotent?: boolean;
}

/** The {@link ToolErrorInfo} of anything thrown (see {@link errorResult}). */
export function toolErrorInfo(error: unknown, options: ErrorResultOptions = {}): ToolErrorInfo {
  const err: BreakwaterError = toBreakwaterError(error);
  const dependencyCode = err.details?.['dependency_code'];
  const internal = err.code === 'internal_error';
  const info: ToolErrorInfo = {
    code: typeof dependencyCode === 'string' && dependencyCode !== '' ? dependencyCode : err.code,
    category: err.code,
    message: internal ? ERROR_CODES.internal_error.sentence : err.message,
    retryable: err.retryable || (options.idempotent === true && err.kind === 'transient'),
    retry_after_ms: retryAfter(err.retryAfterMs),
    outcome: err.outcome,
  };
  if (err.operationId !== undefined) info.operation_id = err.operationId;
  const reconcile = err.details?.['reconcile'] as { method?: unknown; path?: unknown } | null | undefined;
  if (typeof reconcile?.method === 'string' && typeof reconcile.path === 'string') {
    info.reconcile = { method: reconcile.method, path: reconcile.path };
  }
  const observation = err.details?.['transport_observation'];
  if (typeof observation === 'string') info.transport_observation = observation;
  return info;
}

/**
 * The failure result of a job that ended `failed` or `canceled`, from what the job store kept, read at `now`
 * (ms since the epoch, the reader's clock). See {@link jobErrorInfo}.
 */
export function jobErrorResult(
  error: JobError | null,
  status: 'failed' | 'canceled',
  now: number,
): ToolResult {
  const info = jobErrorInfo(error, status, now);
  return {
    content: [{ type: 'text', text: info.message }],
    structuredContent: { error: info },
    isError: true,
  };
}

/**
 * The {@link ToolErrorInfo} of a job's stored error (a finished job's, or the last one of a job waiting to
 * retry), read at `now` (ms since the epoch):
 * - `code`: the dependency's code when the error carried one, else the stored code; `category`: the stored
 *   code when it is a Breakwater code, else `upstream_error`;
 * - `message`: a Breakwater error's own sentence (written for users) with what is left of its wait at `now`
 *   (jobs' `jobErrorMessage`); otherwise the code's sentence, never the raw message of another error (a
 *   driver's error may name hosts or tables, which must not reach the model);
 * - `retry_after_ms`: what is left of the wait the failure carried, `max(0, ceil(retryAt - now))`, or null
 *   when no wait was known.
 */
export function jobErrorInfo(
  error: JobError | null,
  status: 'failed' | 'canceled',
  now: number,
): ToolErrorInfo {
  if (status === 'canceled') {
    return {
      code: 'canceled',
      category: 'canceled',
      message: 'The job was canceled before it finished.',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
    };
  }
  const code = error?.code ?? 'internal_error';
  const known = isErrorCode(code);
  const retryAfterMs = retryAfterMsOf(error, now);
  return {
    code: error?.dependencyCode ?? code,
    category: known ? code : 'upstream_error',
    message:
      error?.userFacing === true
        ? jobErrorMessage(error, now)
        : known
          ? sentenceFor(code, retryAfterMs ?? undefined)
          : (JOB_ONLY_SENTENCES[code] ?? 'The job failed and will not be retried.'),
    // A dead-lettered job is not retried by itself; the caller may start the work again when the cause was
    // transient (a retry by hand from the dead letter is an operator's decision, not the model's).
    retryable: error?.kind === 'transient' && error.outcome !== 'unknown',
    retry_after_ms: retryAfterMs,
    outcome: error?.outcome ?? 'failed',
  };
}

/** Sentences for codes only the job runtime produces. */
const JOB_ONLY_SENTENCES: Record<string, string> = {
  lease_expired: 'The worker running the job stopped responding and the job ran out of attempts.',
};

function retryAfter(ms: number | undefined): number | null {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? Math.ceil(ms) : null;
}

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { result: value ?? null };
}
