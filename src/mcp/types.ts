/**
 * The small MCP shapes the rest of mcp/ works with. They mirror the wire format of the MCP specification
 * (2025-11-25) field for field, so `sdk.ts` can hand them to the SDK as they are; nothing here imports the
 * SDK, which keeps a later SDK line a one-file change.
 */

import type { ContentBlock } from './content.js';

export type {
  AudioContent,
  ContentAnnotations,
  ContentBlock,
  EmbeddedResource,
  EmbeddedResourceContents,
  ImageContent,
  ResourceLink,
  TextContent,
} from './content.js';

/**
 * A tool result (`CallToolResult`). Failures are results too, with `isError: true`, so the model can read
 * and explain them (MCP: tool execution errors are reported in the result, not as protocol errors).
 */
export interface ToolResult {
  content: ContentBlock[];
  /** Always an object (the spec requires one); a non-object value is wrapped as `{ result }`. */
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * `structuredContent.error` of a failed tool result, snake_case as on the wire.
 * - `code`: the dependency's own code when the error carries one (`details.dependency_code`, e.g.
 *   `gift_service_unavailable`), else the Breakwater code;
 * - `category`: always the stable Breakwater code (`timeout`, `circuit_open`, …);
 * - `retry_after_ms`: ms to wait before trying again, or null when unknown;
 * - `outcome`: `unknown` when the effect may have happened (check before retrying).
 */
export interface ToolErrorInfo {
  code: string;
  category: string;
  message: string;
  retryable: boolean;
  retry_after_ms: number | null;
  outcome: 'failed' | 'unknown';
  operation_id?: string;
  /**
   * For an operation (docs/operations.md#the-result-contract): how its outcome can be looked up, from the
   * error's `details.reconcile` (`{ method, path }`), and what the transport saw last
   * (`details.transport_observation`: `ECONNRESET`, `lookup_not_found`, …).
   */
  reconcile?: { method: string; path: string };
  transport_observation?: string;
}

/** MCP task statuses (spec 2025-11-25, "Tasks"). */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A task as the protocol shows it (`tasks/get`, `tasks/list`, `CreateTaskResult.task`). */
export interface TaskInfo {
  taskId: string;
  status: TaskStatus;
  /** ms the task is kept after creation, or null for no limit. */
  ttl: number | null;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601. */
  lastUpdatedAt: string;
  /** Suggested ms between `tasks/get` polls. */
  pollInterval?: number;
  statusMessage?: string;
}

/** The answer to a task-augmented `tools/call` (`CreateTaskResult`). */
export interface CreateTaskAnswer {
  task: TaskInfo;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A JSON-RPC request id. */
export type RequestId = string | number;

/** Tool annotations (MCP `ToolAnnotations`): hints for clients, never enforced. */
export interface ToolAnnotations {
  title?: string;
  /** The tool does not change its environment (default false). */
  readOnlyHint?: boolean;
  /** A changing tool may destroy or overwrite (default true; meaningful only when not read-only). */
  destructiveHint?: boolean;
  /** Repeating a call with the same arguments has no further effect (default false). */
  idempotentHint?: boolean;
  /** The tool talks to an open world of external entities (default true). */
  openWorldHint?: boolean;
}

/** One entry of `tools/list`. */
export interface ToolListing {
  name: string;
  title?: string;
  description: string;
  /** JSON Schema (2020-12) of the arguments; `type: 'object'` at the root. */
  inputSchema: { type: 'object'; [key: string]: unknown };
  annotations?: ToolAnnotations;
  /** Present on job tools: `{ taskSupport: 'optional' }` (callable as an MCP task). */
  execution?: { taskSupport: 'optional' | 'required' | 'forbidden' };
  /** Present on a tool with a UI: the keys of MCP Apps and the Apps SDK (see `ui-meta.ts`). */
  _meta?: Record<string, unknown>;
}

/**
 * A failure to answer as a JSON-RPC error rather than a tool result: an unknown tool, arguments that cannot
 * become a task, a task that does not exist. `rpcCode` is a JSON-RPC error code (-32602 invalid params,
 * -32601 method not found, -32603 internal error).
 */
export class McpProtocolError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'McpProtocolError';
  }
}

/** The `_meta` key that ties a message to a task (spec 2025-11-25, "Tasks": related-task metadata). */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/** The `_meta` key of a `CreateTaskResult` with a sentence for the model to read while the task runs. */
export const MODEL_IMMEDIATE_RESPONSE_META = 'io.modelcontextprotocol/model-immediate-response';

/** JSON-RPC 2.0 error codes used by mcp/ (JSON-RPC 2.0, section 5.1). */
export const RPC = {
  invalidParams: -32602,
  methodNotFound: -32601,
  internalError: -32603,
} as const;

/**
 * The task store mcp/ gives the SDK: the SDK's experimental `TaskStore` interface, written out with our own
 * types (the adapter checks at compile time that it still fits the SDK's). `sessionId` is accepted and
 * ignored on purpose: tasks outlive the in-memory MCP session (see `task-store.ts`).
 */
export interface TaskStoreLike {
  createTask(
    taskParams: { ttl?: number | null; pollInterval?: number; context?: Record<string, unknown> },
    requestId: RequestId,
    request: { method: string; params?: Record<string, unknown> },
    sessionId?: string,
  ): Promise<TaskInfo>;
  getTask(taskId: string, sessionId?: string): Promise<TaskInfo | null>;
  storeTaskResult(
    taskId: string,
    status: 'completed' | 'failed',
    result: Record<string, unknown>,
    sessionId?: string,
  ): Promise<void>;
  getTaskResult(taskId: string, sessionId?: string): Promise<ToolResult>;
  updateTaskStatus(
    taskId: string,
    status: TaskStatus,
    statusMessage?: string,
    sessionId?: string,
  ): Promise<void>;
  listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: TaskInfo[]; nextCursor?: string }>;
}
