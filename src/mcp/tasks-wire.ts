/**
 * The wire of the official tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`, SEP-2663): its
 * identifier, shapes and negotiation, with no dependency on the job store, so the SDK adapter (`sdk-v2.ts`)
 * reads them without importing the extension's runtime (`tasks-ext.ts`).
 */
import { McpProtocolError, RPC, type ToolResult } from './types.js';

/** The extension's identifier, the key under `capabilities.extensions` on both sides. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** A task as the extension shows it (SEP-2663 `Task`). Times are ISO 8601. */
export interface ExtTask {
  taskId: string;
  status: 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs: number;
}

/** The JSON-RPC error of a `failed` task. */
export interface TaskError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/**
 * One outstanding input request of an `input_required` task (SEP-2663 "Input Requests", the request shape of
 * SEP-2322): a form question, as the `elicitation/create` request the client would have got.
 */
export interface TaskInputRequest {
  method: 'elicitation/create';
  params: { mode: 'form'; message: string; requestedSchema: Record<string, unknown> };
}

/** What `tasks/get` and `notifications/tasks` carry (SEP-2663 `DetailedTask`). */
export interface DetailedTask extends ExtTask {
  /** The outstanding input requests by key, when `input_required`; answered with `tasks/update`. */
  inputRequests?: Record<string, TaskInputRequest>;
  /** The tool result, when `completed`. */
  result?: ToolResult;
  /** The JSON-RPC error, when `failed`. */
  error?: TaskError;
}

/** The answer of a `tools/call` that became a task (SEP-2663 `CreateTaskResult`: flat `Result & Task`). */
export interface CreateTaskResult extends ExtTask {
  resultType: 'task';
}

/** True when a request's client capabilities (its `_meta` envelope) name the tasks extension. */
export function negotiatesTasks(clientCapabilities: unknown): boolean {
  const extensions = (clientCapabilities as { extensions?: unknown } | null | undefined)?.extensions;
  return (
    typeof extensions === 'object' &&
    extensions !== null &&
    (extensions as Record<string, unknown>)[TASKS_EXTENSION] !== undefined
  );
}

/** The -32021 error of a request that needs the extension and did not declare it (SEP-2663, SEP-2575). */
export function tasksCapabilityMissing(what: string): McpProtocolError {
  return new McpProtocolError(
    RPC.missingClientCapability,
    `Missing required client capability: ${what} needs the ${TASKS_EXTENSION} extension.`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}
