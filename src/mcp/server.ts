import { randomBytes, randomUUID } from 'node:crypto';
import { Log, PrincipalContext, type Principal } from '../core/index.js';
import { callerPrincipal } from '../jobs/index.js';
import { cancelJobTool, getJobStatusTool, jobUrls, type JobToolDeps } from './job-tools.js';
import { catalogFor, createCatalog } from './catalog.js';
import type { InputRequiredAnswer } from './input.js';
import { ToolCallObserver } from './observe.js';
import { openSdkSession, type SdkHandlers, type SdkSession, type SdkToolCall } from './sdk.js';
import { createModernEndpoint, type ModernHandlers } from './sdk-v2.js';
import { respondToJobTool } from './respond-tool.js';
import { isTerminalTask, JobTaskStore } from './task-store.js';
import { JobTasksExtension, type CreateTaskResult } from './tasks-ext.js';
import { TaskListeners } from './tasks-listen.js';
import { ResourceListeners } from './resource-listen.js';
import { ResourceUpdateFeed } from './resource-feed.js';
import { createToolCaller } from './tool-calls.js';
import { widgetAccessible, withUiResources } from './ui.js';
import type { JobTool, McpTool, SyncTool } from './tool.js';
import { McpProtocolError, RPC, type CreateTaskAnswer, type ToolResult } from './types.js';
import { SessionTable, type Session } from './sessions.js';
import { ResourceSubscriptions } from './subscriptions.js';
import {
  JOB_STATUS_TOOL_NAMES,
  parseMcpServerOptions,
  type BreakwaterMcpServer,
  type McpServerOptions,
} from './options.js';

export type { BreakwaterMcpServer, McpServerOptions };

/**
 * Creates the gateway's MCP server: tools that never fail with a protocol error (see `resilientTool`), job
 * tools with `get_job_status`, `cancel_job` and `respond_to_job`, MCP tasks on the durable job store (see `task-store.ts`), and
 * Streamable HTTP sessions (one SDK server and transport per `mcp-session-id`) for the 2025 revisions, and the
 * stateless 2026-07-28 revision for tools (see `sdk-v2.ts`). Mount it with `mcpRoutes`.
 *
 * Every tool call runs in a `tool <name>` span (child of the active span, else of the `traceparent` the
 * client sent) and a `LogContext` with its `correlation_id` and `tool`, logged when it starts and ends
 * (see `observe.ts`).
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createMcpServer`) naming every bad option: a
 *   bad option, a thing that is not a tool, a duplicate tool name, a job tool without `jobs`, `store` or an
 *   http(s) `publicUrl`.
 */
export function createMcpServer(options: McpServerOptions): BreakwaterMcpServer {
  const owner = 'createMcpServer';
  const config = parseMcpServerOptions(options);
  const { name, version, clock, taskPollIntervalMs: pollIntervalMs, taskPageSize: pageSize } = config;
  const observer = new ToolCallObserver(new Log(config.logger), clock);
  const sessionOptions = {
    maxSessions: config.maxSessions,
    maxSessionsPerPrincipal: config.maxSessionsPerPrincipal,
    sessionIdleMs: config.sessionIdleMs,
    unusedSessionMs: config.unusedSessionMs,
  };

  const jobTools = config.tools.filter((tool): tool is JobTool => tool.kind === 'job');
  let deps: JobToolDeps | undefined;
  const tools: McpTool[] = [...config.tools];
  // The parser checked the tools (kinds, unique names) and, with job tools, jobs, store and publicUrl.
  if (jobTools.length > 0) {
    const byType = new Map<string, JobTool>();
    for (const tool of jobTools) if (!byType.has(tool.jobType)) byType.set(tool.jobType, tool);
    deps = {
      jobs: config.jobs!,
      store: config.store!,
      urls: jobUrls(owner, config.publicUrl),
      byType,
      clock,
    };
    if (config.jobStatusTools) {
      const [status, cancel, respond] = JOB_STATUS_TOOL_NAMES;
      // A job tool's UI follows its job with these: ChatGPT lets a component call only tools that say so.
      const fromUi = jobTools.some((tool) => tool.ui !== undefined) ? widgetAccessible : (t: SyncTool) => t;
      tools.push(
        fromUi(getJobStatusTool(deps, status)),
        fromUi(cancelJobTool(deps, cancel)),
        fromUi(respondToJobTool(deps, respond)),
      );
    }
  }
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const listings = tools.map((tool) => tool.listing);
  const taskStore =
    deps === undefined
      ? undefined
      : new JobTaskStore({
          ...deps,
          byName: new Map(jobTools.map((tool) => [tool.name, tool])),
          pollIntervalMs,
          pageSize,
        });
  // The 2026-07-28 tasks extension, on the same store (see `tasks-ext.ts`, `tasks-listen.ts`).
  const tasksExt = deps && new JobTasksExtension({ ...deps, ttlMs: config.taskTtlMs, pollIntervalMs });
  const listeners =
    tasksExt &&
    new TaskListeners({
      ...{ jobs: deps!.jobs, tasks: tasksExt, clock },
      ...{ maxPerPrincipal: config.maxTaskListensPerPrincipal, maxListens: config.maxTaskListens },
    });

  const report = (
    error: unknown,
    context: { tool?: string; correlationId?: string; sessionId?: string },
  ): void => {
    if (config.onError !== undefined) {
      try {
        config.onError(error, context);
      } catch {
        // A failing logger must not break a tool call.
      }
      return;
    }
    const detail = error instanceof Error ? error.message : String(error);
    const warning = new Error(`mcp: ${context.tool ?? 'transport'}: ${detail}`, { cause: error });
    warning.name = 'BreakwaterMcpWarning';
    process.emitWarning(warning);
  };

  const hints: NonNullable<McpServerOptions['cacheHints']> = config.cacheHints ?? {};
  const catalog = createCatalog({
    resources: withUiResources(owner, config.resources, tools),
    prompts: config.prompts,
    pageSize: config.listPageSize,
    cacheHints: {
      ...(hints.tools === undefined ? {} : { 'tools/list': hints.tools }),
      ...(hints.resources === undefined ? {} : { 'resources/list': hints.resources }),
      ...(hints.resourceTemplates === undefined
        ? {}
        : { 'resources/templates/list': hints.resourceTemplates }),
      ...(hints.prompts === undefined ? {} : { 'prompts/list': hints.prompts }),
    },
    clock,
    report,
  });

  // Resource updates reach 2025 sessions and 2026-07-28 listens on every gateway of the store (see
  // `resource-feed.ts`): this process's sessions are told at once, other gateways' through the feed.
  const feed = new ResourceUpdateFeed({ store: config.store, clock, onError: (error) => report(error, {}) });
  const subscriptions = new ResourceSubscriptions(feed);
  const resourceListeners =
    catalog.resources &&
    new ResourceListeners({
      ...{ feed, clock },
      ...{ maxPerPrincipal: config.maxResourceListensPerPrincipal, maxListens: config.maxResourceListens },
    });

  const callTool = createToolCaller({ clock, deps, taskStore, tasksExt, byName, observer, report });

  /**
   * What one session's SDK server calls. Everything runs for the principal that initialized the session (a
   * request of anyone else never reaches it: see `sessions.ts`): a tool call under `PrincipalContext`, so the
   * job tools see only that principal's jobs and anything the tool enqueues belongs to it; the task store
   * through a view bound to it.
   */
  const handlersFor = (session: Session): SdkHandlers => {
    const tasks = taskStore?.forPrincipal(session.principal);
    const sessionCatalog = catalogFor(catalog, session.principal);
    return {
      listTools: () => listings,
      catalog: sessionCatalog,
      subscriptions: subscriptions.forSession(session, sessionCatalog),
      // A session's input channel waits for answers: its calls never leave questions pending.
      callTool: (call) =>
        PrincipalContext.run(
          session.principal,
          () => callTool(session, call) as Promise<ToolResult | CreateTaskAnswer>,
        ),
      tasks:
        tasks === undefined
          ? undefined
          : {
              store: tasks,
              async result(taskId, signal, elicit) {
                const task = await tasks.getTask(taskId);
                if (task === null) throw new McpProtocolError(RPC.invalidParams, `Task not found: ${taskId}`);
                // A client that answers elicitation gets the job's questions on this stream as they come.
                if (!isTerminalTask(task.status)) {
                  await (elicit === undefined
                    ? tasks.waitUntilFinished(taskId, signal)
                    : tasks.waitAnswering(taskId, signal, elicit));
                }
                return tasks.getTaskResult(taskId);
              },
            },
    };
  };

  /**
   * The handlers of one 2026-07-28 request (stateless: no session, no tasks), bound to the principal the HTTP
   * edge admitted for it, exactly as a session's are bound to the principal that initialized it.
   */
  const modernHandlersFor = (principal: Principal): ModernHandlers => {
    const as =
      <A extends unknown[], R>(fn: (...args: A) => R) =>
      (...args: A): R =>
        PrincipalContext.run(principal, () => fn(...args));
    return {
      listTools: () => listings,
      catalog: catalogFor(catalog, principal),
      callTool: as(
        (call: SdkToolCall) =>
          callTool(undefined, call) as Promise<ToolResult | CreateTaskResult | InputRequiredAnswer>,
      ),
      callerId: principal.id,
      tasks:
        tasksExt === undefined
          ? undefined
          : {
              get: as((taskId: string) => tasksExt.get(taskId)),
              cancel: as((taskId: string) => tasksExt.cancel(taskId)),
              update: as((taskId: string, responses: unknown) => tasksExt.update(taskId, responses)),
            },
    };
  };

  const table = new SessionTable({
    clock,
    ...sessionOptions,
    open: (session, onInitialized, onClosed) => {
      const sessionId = randomUUID();
      const eventStore =
        typeof config.eventStore === 'function' ? config.eventStore(sessionId) : config.eventStore;
      return openSdkSession({
        sessionId,
        name,
        version,
        instructions: config.instructions,
        handlers: handlersFor(session),
        eventStore,
        onInitialized,
        onClosed: (sdkSession) => {
          subscriptions.closed(session);
          onClosed(sdkSession);
        },
        // Transport errors are mostly clients' bad requests (already answered): only a given hook hears them.
        onError: (error) => config.onError?.(error, { sessionId }),
      });
    },
  });

  const modern = createModernEndpoint({
    name,
    version,
    instructions: config.instructions,
    requestStateKey: config.requestStateKey ?? randomBytes(32),
    requestStateTtlMs: config.requestStateTtlMs,
    clock,
    onError: (error) => config.onError?.(error, {}),
  });

  let closed = false;
  return {
    tools,
    taskStore,
    get sessionCount() {
      return table.size;
    },
    notifyResourceUpdated(uri, options) {
      const principalId = options?.principalId;
      feed.publish(principalId === undefined ? { uri } : { uri, principalId });
      return subscriptions.notify(uri, principalId);
    },
    async handle(req, res, body) {
      // After close, the session table answers every request (503), whatever its revision.
      if (closed) return table.handle(req, res, body);
      let isModern: boolean;
      try {
        isModern = await modern.accepts(req, body);
      } catch {
        isModern = false; // not classifiable as 2026-07-28: the session table answers it
      }
      if (!isModern) return table.handle(req, res, body);
      // A listen for task notifications is served from the job store, not by the SDK (see `tasks-listen.ts`).
      if (listeners !== undefined && TaskListeners.claims(body))
        return listeners.serve(req, res, body, callerPrincipal());
      // So is a listen for resource updates, from the feed every gateway of the store writes (`resource-listen.ts`).
      if (resourceListeners !== undefined && ResourceListeners.claims(body)) {
        const principal = callerPrincipal();
        return resourceListeners.serve(req, res, body, principal, catalogFor(catalog, principal));
      }
      try {
        await modern.handle(req, res, body, modernHandlersFor(callerPrincipal()));
      } catch {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }),
          );
        } else res.destroy();
      }
    },
    async close() {
      closed = true;
      listeners?.closeAll();
      resourceListeners?.closeAll();
      feed.close();
      await Promise.all([table.close(), modern.close()]);
    },
  };
}

export type { SdkSession };
