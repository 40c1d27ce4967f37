/**
 * The adapter to the official MCP TypeScript SDK (`@modelcontextprotocol/sdk` 1.x): the only file of mcp/
 * that imports it. The rest of mcp/ speaks the small types of `types.ts`; moving to another SDK line means
 * rewriting this file alone.
 *
 * It uses the SDK's low-level `Server` rather than `McpServer`: `McpServer` runs a tool with
 * `taskSupport: 'optional'` called without a task by polling the task to its end inside the call, while a
 * Breakwater job tool answers such a call at once with the job's handle. The SDK still serves `tasks/get`,
 * `tasks/list` and `tasks/cancel` over our task store; `tasks/result` is answered here so it waits for the
 * job's terminal event instead of polling the store.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  StreamableHTTPServerTransport,
  type EventStore,
} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  GetPromptRequestSchema,
  GetTaskPayloadRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type CreateTaskResult,
  type GetPromptResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { BreakwaterError } from '../core/index.js';
import type { Catalog, CompletionRef } from './catalog.js';
import { inputSupportOf, isInputRequiredAnswer, type InputChannel, type WireInputRequest } from './input.js';
import type { ElicitQuestion } from './task-elicit.js';
import { LOG_LEVELS, type LogLevel } from './tool.js';
import {
  McpProtocolError,
  RELATED_TASK_META,
  type CreateTaskAnswer,
  type RequestId,
  type TaskStoreLike,
  type ToolListing,
  type ToolResult,
} from './types.js';

/** The SDK's Streamable HTTP `EventStore` (resumable streams); any implementation is accepted. */
export type McpEventStore = EventStore;

// Our copy of the related-task key must be the SDK's (a compile error here means the spec key moved).
const _sameKey: typeof RELATED_TASK_META_KEY = RELATED_TASK_META;

/** One `tools/call` request as the session hands it to mcp/. */
export interface SdkToolCall {
  name: string;
  arguments: unknown;
  requestId: RequestId;
  progressToken: string | number | undefined;
  /** The task augmentation (`params.task`), when the client asked for a task. */
  task: { ttl?: number } | undefined;
  /**
   * 2026-07-28 only: the request's `_meta` client capabilities declare the tasks extension
   * (`io.modelcontextprotocol/tasks`), so a job tool may answer with a task. Undefined on the 2025 path.
   */
  tasksExtension?: boolean;
  /** Aborts when the client cancels the request or the session closes. */
  signal: AbortSignal;
  /** The HTTP headers of the POST that carried the request. */
  headers: Record<string, string | string[] | undefined>;
  /** Sends a notification tied to this request (on its stream while the request is open). */
  notify(method: string, params: Record<string, unknown>): Promise<void>;
  /** Sends `notifications/message` for this request when the client asked for `level` (else absent). */
  log?(level: LogLevel, data: unknown): Promise<void>;
  /** How the call asks the user: the session's requests (2025), the request's round (2026-07-28). */
  input?: InputChannel;
  /**
   * 2025 sessions with an event store: ends this request's SSE stream now (SEP-1699 polling); the client
   * reconnects after the priming event's `retry` interval with `Last-Event-ID` and receives the rest, the
   * result included, from the event store. Absent where the answer has no stream to resume.
   */
  closeStream?(): void;
}

/**
 * The `retry` field of a stream's priming event, ms (sent with an event store, to clients of 2025-11-25 and
 * later): how long a client waits before it reconnects to a stream the server ended (SSE, SEP-1699).
 */
export const SSE_RETRY_MS = 1_000;

/** What a session asks mcp/ for. */
export interface SdkHandlers {
  listTools(): readonly ToolListing[];
  callTool(call: SdkToolCall): Promise<ToolResult | CreateTaskAnswer>;
  /** Resources and prompts; each capability is declared only when the catalog has it. */
  catalog: Catalog;
  /** `resources/subscribe` and `resources/unsubscribe`; present when there are resources. */
  subscriptions?: { subscribe(uri: string): void; unsubscribe(uri: string): void };
  /** Present when the server offers tasks. */
  tasks?: {
    store: TaskStoreLike;
    /**
     * `tasks/result`: the finished task's tool result, waiting for the end when needed; `elicit`, present
     * when the client declared elicitation, asks it the job's questions meanwhile.
     */
    result(taskId: string, signal: AbortSignal, elicit?: ElicitQuestion): Promise<ToolResult>;
  };
}

/** Options of {@link openSdkSession}. */
export interface SdkSessionOptions {
  /** The id the session will get at `initialize` (made by the caller, so per-session parts can use it). */
  sessionId: string;
  name: string;
  version: string;
  instructions?: string;
  handlers: SdkHandlers;
  eventStore?: McpEventStore;
  /** Called when the client's `initialize` gave the session its id. */
  onInitialized(session: SdkSession): void;
  /** Called once when the session closed (DELETE, `close()`, or the transport failed). */
  onClosed(session: SdkSession): void;
  /** Transport and protocol errors the SDK reports (bad requests included). */
  onError?(error: Error): void;
}

/** One MCP session: an SDK `Server` on its own Streamable HTTP transport. */
export interface SdkSession {
  /** Set once the session was initialized. */
  readonly sessionId: string | undefined;
  /** Answers one HTTP request of this session (POST, GET or DELETE) on the raw Node objects. */
  handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
  /**
   * Sends a server notification on the session's standalone stream (the client's GET). Dropped when no such
   * stream is open, unless an event store keeps it for a resuming client.
   */
  notify(method: string, params: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

/** True when a POST body is an `initialize` request (which opens a session). */
export function isInitialize(body: unknown): boolean {
  return isInitializeRequest(body);
}

/** Opens a session: a `Server` with our handlers, connected to a new stateful transport. */
export async function openSdkSession(options: SdkSessionOptions): Promise<SdkSession> {
  const { handlers } = options;
  const tasks = handlers.tasks;
  // Compile-time check that our store still fits the SDK's TaskStore interface.
  const taskStore: TaskStore | undefined = tasks?.store;
  const { resources, prompts, completions } = handlers.catalog;
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: {
        tools: { listChanged: false },
        logging: {},
        ...(resources === undefined
          ? {}
          : { resources: { listChanged: false, subscribe: handlers.subscriptions !== undefined } }),
        ...(prompts === undefined ? {} : { prompts: { listChanged: false } }),
        ...(completions === undefined ? {} : { completions: {} }),
        ...(tasks === undefined
          ? {}
          : { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }),
      },
      instructions: options.instructions,
      taskStore,
    },
  );

  // The session's log level (MCP "Logging"): none until the client sets one, and then nothing is sent below it.
  let logLevel: number | undefined;
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    logLevel = LOG_LEVELS.indexOf(request.params.level);
    return {};
  });
  type Extra = { sendNotification(notification: ServerNotification): Promise<void> };
  const logFor =
    (extra: Extra) =>
    (level: LogLevel, data: unknown): Promise<void> =>
      logLevel === undefined || LOG_LEVELS.indexOf(level) < logLevel
        ? Promise.resolve()
        : extra.sendNotification({ method: 'notifications/message', params: { level, data } });
  const catalogRequest = (
    extra: {
      signal: AbortSignal;
      requestInfo?: { headers: Record<string, string | string[] | undefined> };
    } & Extra,
  ) => ({
    signal: extra.signal,
    headers: extra.requestInfo?.headers ?? {},
    log: logFor(extra),
  });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...handlers.listTools()] }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const params = request.params;
    const call: SdkToolCall = {
      name: params.name,
      arguments: params.arguments,
      requestId: extra.requestId,
      progressToken: params._meta?.progressToken,
      task: params.task === undefined ? undefined : { ttl: params.task.ttl },
      signal: extra.signal,
      headers: extra.requestInfo?.headers ?? {},
      notify: (method, notificationParams) =>
        extra.sendNotification({ method, params: notificationParams } as ServerNotification),
      log: logFor(extra),
      input: sessionInput(server, extra),
      closeStream: extra.closeSSEStream,
    };
    const answer = await protocolErrors(() => handlers.callTool(call));
    return answer as CallToolResult | CreateTaskResult;
  });

  if (resources !== undefined) {
    server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
      protocolErrors(() => resources.list(request.params?.cursor, catalogRequest(extra))),
    );
    const templates = resources.templates;
    if (templates !== undefined)
      server.setRequestHandler(ListResourceTemplatesRequestSchema, (request) =>
        protocolErrors(async () => templates(request.params?.cursor)),
      );
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      protocolErrors(async () => {
        // Cache hints are 2026-07-28 fields: a 2025 result has none.
        const read = await resources.read(request.params.uri, {
          ...catalogRequest(extra),
          input: sessionInput(server, extra),
        });
        // A session's input channel waits for answers: a read never leaves questions pending.
        if (isInputRequiredAnswer(read)) throw new Error('mcp: a session read asked for input_required');
        return { contents: read.contents };
      }),
    );
  }
  const subscriptions = handlers.subscriptions;
  if (subscriptions !== undefined) {
    server.setRequestHandler(SubscribeRequestSchema, (request) =>
      protocolErrors(async () => {
        subscriptions.subscribe(request.params.uri);
        return {};
      }),
    );
    server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
      subscriptions.unsubscribe(request.params.uri);
      return {};
    });
  }
  if (prompts !== undefined) {
    server.setRequestHandler(ListPromptsRequestSchema, (request) =>
      protocolErrors(async () => prompts.list(request.params?.cursor)),
    );
    server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
      const result = await protocolErrors(() =>
        prompts.get(request.params.name, request.params.arguments, {
          ...catalogRequest(extra),
          input: sessionInput(server, extra),
        }),
      );
      return result as GetPromptResult;
    });
  }
  if (completions !== undefined) {
    server.setRequestHandler(CompleteRequestSchema, (request, extra) =>
      protocolErrors(() =>
        completions.complete(
          request.params.ref as CompletionRef,
          request.params.argument,
          request.params.context?.arguments,
          catalogRequest(extra),
        ),
      ),
    );
  }

  if (tasks !== undefined) {
    server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
      const taskId = request.params.taskId;
      const elicit = inputSupportOf(server.getClientCapabilities()).elicitation
        ? taskElicitation(extra, taskId)
        : undefined;
      const result = await protocolErrors(() => tasks.result(taskId, extra.signal, elicit));
      // tasks/result carries the related-task metadata (spec 2025-11-25, "Tasks").
      return {
        ...result,
        _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: request.params.taskId } },
      } as CallToolResult;
    });
  }

  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => options.sessionId,
    eventStore: options.eventStore,
    retryInterval: SSE_RETRY_MS,
    onsessioninitialized: () => options.onInitialized(session),
  });

  let closed = false;
  const session: SdkSession = {
    get sessionId() {
      return transport.sessionId;
    },
    handle: (req, res, body) => transport.handleRequest(req, res, body),
    notify: (method, params) => server.notification({ method, params } as ServerNotification),
    close: () => server.close(),
  };
  server.onclose = () => {
    if (closed) return;
    closed = true;
    options.onClosed(session);
  };
  server.onerror = (error) => options.onError?.(error);
  await server.connect(transport);
  return session;
}

/** The result schema of each server-to-client request a call may send. */
const INPUT_RESULT_SCHEMAS = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;

/**
 * How a session's call asks the user: real `elicitation/create`, `sampling/createMessage` and `roots/list`
 * requests to the client (on the call's stream), all of one `requestInputs` at once, while the call waits;
 * `signal` (the call's deadline or cancel) aborts them. The kinds are those the client declared at
 * `initialize`. A request the client answers with an error fails the question with `input_unavailable`.
 * A session's call never answers `input_required`: the 2025 revisions have no such result.
 */
function sessionInput(
  server: Server,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
): InputChannel {
  return {
    support: inputSupportOf(server.getClientCapabilities()),
    async fulfil(requests, signal) {
      const ask = async ([key, request]: [string, WireInputRequest]): Promise<[string, unknown]> => {
        try {
          const sent = { method: request.method, params: request.params } as ServerRequest;
          return [key, await extra.sendRequest(sent, INPUT_RESULT_SCHEMAS[request.method], { signal })];
        } catch (error) {
          if (signal.aborted) throw error; // the deadline or the cancel answers the call
          throw new BreakwaterError('input_unavailable', {
            message: `The client could not answer the request's question (${request.method}).`,
            details: { method: request.method },
            cause: error,
          });
        }
      };
      return new Map(await Promise.all([...requests].map(ask)));
    },
  };
}

/**
 * Sends a job's question to the client waiting on `tasks/result` as a form `elicitation/create` on that
 * request's stream, with the related-task metadata (MCP 2025-11-25, "Tasks": requests of a task in
 * `input_required` carry `io.modelcontextprotocol/related-task`), and resolves with the client's answer.
 */
function taskElicitation(
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  taskId: string,
): ElicitQuestion {
  return (question, signal) => {
    const params = {
      mode: 'form',
      message: question.message,
      requestedSchema: question.schema ?? { type: 'object', properties: {} },
      _meta: { [RELATED_TASK_META_KEY]: { taskId } },
    };
    return extra.sendRequest({ method: 'elicitation/create', params } as ServerRequest, ElicitResultSchema, {
      signal,
    });
  };
}

/** Runs `fn`, turning our {@link McpProtocolError} into the SDK's JSON-RPC error. */
async function protocolErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof McpProtocolError) throw new McpError(error.rpcCode, error.message, error.data);
    throw error;
  }
}
