import type { IncomingMessage, ServerResponse } from 'node:http';
import { defineOptions, o, type Clock, type Logger } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import type { JobStore } from '../store/index.js';
import type { McpEventStore } from './sdk.js';
import { isHttpUrl } from './job-tools.js';
import { SESSION_DEFAULTS } from './sessions.js';
import { TASK_STORE_DEFAULTS, type JobTaskStore } from './task-store.js';
import { TASKS_EXTENSION_DEFAULTS } from './tasks-ext.js';
import { TASK_LISTEN_DEFAULTS } from './tasks-listen.js';
import { RESOURCE_LISTEN_DEFAULTS } from './resource-listen.js';
import type { McpPrompt } from './prompt.js';
import { cacheHintOption, type CacheHint, type McpResource } from './resource.js';
import type { McpResourceTemplate } from './resource-template.js';
import type { McpTool } from './tool.js';

/** Options of {@link createMcpServer}; validated at construction (an OptionsError names every bad option). */
export interface McpServerOptions {
  /** Server name and version sent in `initialize` (non-empty). */
  name: string;
  version: string;
  /** Instructions for the model, sent in `initialize`. */
  instructions?: string;
  /** The tools (`resilientTool`, `jobTool`); names must be unique. */
  tools: readonly McpTool[];
  /**
   * The resources (`resource`) and resource templates (`resourceTemplate`), served by `resources/list`,
   * `resources/templates/list` and `resources/read` in both eras; URIs and URI templates must be unique.
   * Default none (then no `resources` capability is declared).
   */
  resources?: readonly (McpResource | McpResourceTemplate)[];
  /**
   * The prompts (`prompt`), served by `prompts/list` and `prompts/get`; names must be unique. Default none
   * (then no `prompts` capability is declared).
   */
  prompts?: readonly McpPrompt[];
  /**
   * Entries per page of `resources/list`, `resources/templates/list` and `prompts/list` (integer in
   * [1, 1000], default 100); a longer list is paged with an opaque `nextCursor` (MCP "Pagination").
   */
  listPageSize?: number;
  /**
   * Cache hints of the 2026-07-28 list results, by list: `tools`, `resources`, `resourceTemplates`,
   * `prompts`, each `{ ttlMs?, cacheScope? }` (see `CacheHint`; a resource's reads take its own
   * `cacheHint`). Default the SDK's (`ttlMs: 0`, `cacheScope: 'private'`). 2025 results never carry them.
   */
  cacheHints?: {
    tools?: CacheHint;
    resources?: CacheHint;
    resourceTemplates?: CacheHint;
    prompts?: CacheHint;
  };
  /** The jobs runtime; required when a job tool is given. Its job types must be defined in this process. */
  jobs?: Jobs;
  /** The job store behind `jobs`; required with `jobs` (`get_job_status` reads progress and partial results). */
  store?: JobStore;
  /** The gateway's public base URL (absolute http(s)); required with job tools (job URLs are built on it). */
  publicUrl?: string;
  /**
   * Makes SSE streams resumable (`Last-Event-ID`, MCP 2025-11-25 "Resumability and Redelivery"): an SDK
   * `EventStore`, or a function giving one per session from its id, e.g.
   * `(sessionId) => createDurableEventStore(store, { scope: sessionId })`. Prefer the function: the SDK
   * names every session's standalone stream alike, so one store shared by all sessions must keep them apart
   * itself. Default: none (a dropped stream loses what was sent while it was down).
   */
  eventStore?: McpEventStore | ((sessionId: string) => McpEventStore);
  /** Add the `get_job_status`, `cancel_job` and `respond_to_job` tools when there are job tools (default true). */
  jobStatusTools?: boolean;
  /**
   * The poll interval suggested on tasks, ms (integer >= 1, default 2 000): `pollInterval` of 2025-11-25
   * tasks and `pollIntervalMs` of the 2026-07-28 tasks extension.
   */
  taskPollIntervalMs?: number;
  /**
   * `ttlMs` of the 2026-07-28 tasks extension's tasks, ms (integer >= 1), or null (default): no limit. The
   * gateway never expires a task (its job stays until the store's retention removes it once finished), so
   * give at most that retention; a client may give up on a task after `createdAt + ttlMs`.
   */
  taskTtlMs?: number | null;
  /**
   * Most open `subscriptions/listen` streams of task notifications (2026-07-28 tasks extension) of one
   * principal, this process (integer >= 1, default 8); over it a listen gets -32603.
   */
  maxTaskListensPerPrincipal?: number;
  /** Most open streams of task notifications in all, this process (integer >= 1, default 256). */
  maxTaskListens?: number;
  /**
   * Most open `subscriptions/listen` streams of resource updates (2026-07-28 `resourceSubscriptions`) of one
   * principal, this process (integer >= 1, default 8); over it a listen gets -32603.
   */
  maxResourceListensPerPrincipal?: number;
  /** Most open streams of resource updates in all, this process (integer >= 1, default 256). */
  maxResourceListens?: number;
  /** Tasks per `tasks/list` page (integer in [1, 1000], default 50). */
  taskPageSize?: number;
  /**
   * Most open sessions in all (integer >= 1, default 1 000). When full, an `initialize` closes the least
   * recently used idle session of the principal holding the most sessions; none idle: 503 (see `sessions.ts`).
   */
  maxSessions?: number;
  /**
   * Most open sessions of one principal (integer >= 1, default 100; in loopback mode every local client is
   * the one `local` principal). At the cap, the principal's `initialize` closes its own least recently used
   * idle session; none idle (each has a request open): 503 with `Retry-After: 5`. One principal that opens
   * sessions without end so leaves the others theirs.
   */
  maxSessionsPerPrincipal?: number;
  /** A session with no request for this long is closed, ms (integer >= 1, default 3 600 000). */
  sessionIdleMs?: number;
  /**
   * A session never used again after its `initialize` (no second request; the SDK client sends one at once)
   * is closed this long after it, ms (integer >= 1, default 60 000): drive-by `initialize` calls do not hold
   * the table for `sessionIdleMs`.
   */
  unusedSessionMs?: number;
  /**
   * The HMAC-SHA256 key that signs `requestState` on 2026-07-28 (the answers of earlier rounds of a call that
   * asks the user, docs/mcp.md#asking-the-user-during-a-call): at least 32 bytes (a string counts its UTF-8
   * bytes). Every gateway that may serve a round of the same call needs the same key. Default: a random key
   * per process, so only this process accepts its own states (a restart or another gateway answers -32602).
   */
  requestStateKey?: string | Uint8Array;
  /** How long a `requestState` is accepted after it was minted, ms (integer in [1 000, 86 400 000], default 600 000). */
  requestStateTtlMs?: number;
  /** Source of time for deadlines, idle sessions and `requestState` expiry (default the system clock). */
  clock?: Clock;
  /**
   * Where each tool call is logged (`tool call started`, `tool call ended` with `outcome`, `code`,
   * `duration_ms`, …; every line carries `correlation_id` and `tool`). Pino-compatible (`app.log` fits).
   * Default: the process logger (`setLogger`), and none until one is set.
   */
  logger?: Logger;
  /**
   * Called with failures the model only sees as a generic sentence (tool errors classified `internal_error`:
   * bugs) and with the SDK's transport errors (mostly clients' bad requests, already answered). Default: a
   * process warning named `BreakwaterMcpWarning` for the first kind, nothing for the second.
   */
  onError?(error: unknown, context: { tool?: string; correlationId?: string; sessionId?: string }): void;
}

/** The MCP server of the gateway: its tools, task store and sessions (see {@link createMcpServer}). */
export interface BreakwaterMcpServer {
  /** Every tool served, the built-in job tools included. */
  readonly tools: readonly McpTool[];
  /** The durable task store, when there are job tools. */
  readonly taskStore: JobTaskStore | undefined;
  /** Open sessions. */
  readonly sessionCount: number;
  /**
   * Tells the sessions subscribed to `uri` (`resources/subscribe`, 2025 revisions) that it changed:
   * `notifications/resources/updated` on their standalone stream. With `principalId` (the resource's
   * owner, a `Principal.id`), only that principal's sessions and admin ones hear it. Never waits or throws;
   * returns how many sessions of this process it was sent to. 2026-07-28 listens naming `uri` in
   * `resourceSubscriptions` hear it alike (see `resource-listen.ts`); with a shared `store`, sessions and
   * listens on every gateway of the store hear it too (see `resource-feed.ts`).
   */
  notifyResourceUpdated(uri: string, options?: { principalId?: string }): number;
  /**
   * Answers one HTTP request to the MCP endpoint (Streamable HTTP, MCP 2025-11-25 "Transports") on the raw
   * Node objects, with the body already parsed (POST): a request of the 2026-07-28 revision (its `_meta`
   * envelope) statelessly, any other through the sessions. Never rejects: a failure is answered as a JSON-RPC
   * error (or, once streaming began, by closing the response).
   */
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
  /** Closes every session (their streams end) and stops the idle sweep; later requests get 503. Idempotent. */
  close(): Promise<void>;
}

/** Defaults of {@link McpServerOptions}. */
export const MCP_SERVER_DEFAULTS = {
  jobStatusTools: true,
  taskPollIntervalMs: TASK_STORE_DEFAULTS.pollIntervalMs,
  taskPageSize: TASK_STORE_DEFAULTS.pageSize,
  requestStateTtlMs: 600_000,
  listPageSize: 100,
  taskTtlMs: TASKS_EXTENSION_DEFAULTS.ttlMs,
  maxTaskListensPerPrincipal: TASK_LISTEN_DEFAULTS.maxPerPrincipal,
  maxTaskListens: TASK_LISTEN_DEFAULTS.maxListens,
  maxResourceListensPerPrincipal: RESOURCE_LISTEN_DEFAULTS.maxPerPrincipal,
  maxResourceListens: RESOURCE_LISTEN_DEFAULTS.maxListens,
  ...SESSION_DEFAULTS,
} as const;

/** Names of the tools added with job tools (`jobStatusTools`); a tool of the app may not take them. */
export const JOB_STATUS_TOOL_NAMES = ['get_job_status', 'cancel_job', 'respond_to_job'] as const;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks {@link McpServerOptions} and applies {@link MCP_SERVER_DEFAULTS}. */
export const parseMcpServerOptions = defineOptions<McpServerOptions>()(
  'createMcpServer',
  {
    name: o.string().min(1),
    version: o.string().min(1),
    instructions: o.string().optional(),
    tools: o.custom<readonly McpTool[]>(Array.isArray, 'an array of tools'),
    resources: o
      .custom<readonly (McpResource | McpResourceTemplate)[]>(Array.isArray, 'an array of resources')
      .default([]),
    prompts: o.custom<readonly McpPrompt[]>(Array.isArray, 'an array of prompts').default([]),
    // Required with job tools (the check below); they are the jobs runtime and its store, made elsewhere.
    jobs: o.any<Jobs | undefined>(),
    store: o.any<JobStore | undefined>(),
    publicUrl: o.any<string | undefined>(),
    eventStore: o
      .custom<McpServerOptions['eventStore']>(
        (v) => typeof v === 'function' || (isObject(v) && typeof v.storeEvent === 'function'),
        'an EventStore or a function (sessionId) => EventStore',
      )
      .optional(),
    jobStatusTools: o.boolean().default(MCP_SERVER_DEFAULTS.jobStatusTools),
    taskPollIntervalMs: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.taskPollIntervalMs),
    taskPageSize: o.number().int().min(1).max(1000).default(MCP_SERVER_DEFAULTS.taskPageSize),
    listPageSize: o.number().int().min(1).max(1000).default(MCP_SERVER_DEFAULTS.listPageSize),
    cacheHints: o
      .object({
        tools: cacheHintOption,
        resources: cacheHintOption,
        resourceTemplates: cacheHintOption,
        prompts: cacheHintOption,
      })
      .optional(),
    taskTtlMs: o
      .custom<number | null>(
        (v) => v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 1),
        'an integer >= 1 (ms) or null',
      )
      .default(MCP_SERVER_DEFAULTS.taskTtlMs as number | null),
    maxTaskListensPerPrincipal: o
      .number()
      .int()
      .min(1)
      .default(MCP_SERVER_DEFAULTS.maxTaskListensPerPrincipal),
    maxTaskListens: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxTaskListens),
    maxResourceListensPerPrincipal: o
      .number()
      .int()
      .min(1)
      .default(MCP_SERVER_DEFAULTS.maxResourceListensPerPrincipal),
    maxResourceListens: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxResourceListens),
    maxSessions: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxSessions),
    maxSessionsPerPrincipal: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxSessionsPerPrincipal),
    sessionIdleMs: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.sessionIdleMs),
    unusedSessionMs: o.number().int().min(1).default(MCP_SERVER_DEFAULTS.unusedSessionMs),
    requestStateKey: o
      .custom<string | Uint8Array>(
        (v) =>
          (typeof v === 'string' && Buffer.byteLength(v, 'utf8') >= 32) ||
          (v instanceof Uint8Array && v.byteLength >= 32),
        'a string or Uint8Array of at least 32 bytes',
      )
      .optional(),
    requestStateTtlMs: o
      .number()
      .int()
      .min(1_000)
      .max(86_400_000)
      .default(MCP_SERVER_DEFAULTS.requestStateTtlMs),
    clock: o.clock(),
    logger: o
      .methods<Logger>('a pino-compatible logger with info, warn and error methods', 'info', 'warn', 'error')
      .optional(),
    onError: o.fn<NonNullable<McpServerOptions['onError']>>().optional(),
  },
  ({ tools, jobs, store, publicUrl, jobStatusTools, resources, prompts }, report) => {
    checkCatalog(
      'resources',
      resources,
      ['resource', 'resourceTemplate'],
      (item) => (item.kind === 'resource' ? item.uri : `template ${item.uriTemplate}`),
      report,
    );
    checkCatalog('prompts', prompts, ['prompt'], (item) => item.name, report);
    if (!Array.isArray(tools)) return;
    const bad = tools.find((t: unknown) => !isObject(t) || (t.kind !== 'sync' && t.kind !== 'job'));
    if (bad !== undefined) return report('tools', 'tools made by resilientTool or jobTool', bad);
    const withJobs = tools.some((tool) => tool.kind === 'job');
    const names = tools.map((tool) => tool.name);
    if (withJobs && jobStatusTools === true) names.push(...JOB_STATUS_TOOL_NAMES);
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) report('tools', 'tools with unique names', twice);
    if (!withJobs) return;
    if (jobs === undefined) report('jobs', 'a Jobs runtime (there are job tools)', jobs);
    if (store === undefined) report('store', 'the JobStore of jobs', store);
    if (!isHttpUrl(publicUrl)) report('publicUrl', 'an absolute http(s) URL', publicUrl);
  },
);

/** Reports things not made by the builder of `kind`, and a key (URI, name) given twice. */
function checkCatalog<T extends { kind: string }>(
  option: string,
  items: readonly T[] | undefined,
  kinds: readonly string[],
  keyOf: (item: T) => string,
  report: (option: string, rule: string, value: unknown) => void,
): void {
  if (!Array.isArray(items)) return;
  const bad = items.find((item: unknown) => !isObject(item) || !kinds.includes(item.kind as string));
  if (bad !== undefined)
    return report(option, `things made by ${kinds.map((k) => `${k}()`).join(' or ')}`, bad);
  const keys = items.map(keyOf);
  const twice = keys.find((key, i) => keys.indexOf(key) !== i);
  if (twice !== undefined)
    report(option, `${option} with unique ${option === 'resources' ? 'URIs' : 'names'}`, twice);
}
