import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  PrincipalContext,
  type Clock,
  type Disposable,
  type Principal,
  type TimerHandle,
} from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import {
  negotiatesTasks,
  tasksCapabilityMissing,
  type DetailedTask,
  type JobTasksExtension,
} from './tasks-ext.js';
import { McpProtocolError, RPC } from './types.js';

/**
 * `notifications/tasks` over `subscriptions/listen` (SEP-2663 "Task Status Notifications", SEP-2575): a
 * 2026-07-28 `subscriptions/listen` whose filter names `taskIds` is served here, not by the SDK (whose listen
 * stream carries only its in-memory list-changed events). Each task's notifications are fed from its job's
 * stored events (`jobs.subscribe`: the store's notifications, with a poll as safety net), so a listener on one
 * gateway hears a task run by a worker anywhere, and a listener opened after a restart picks up where the job
 * is.
 *
 * The stream: `notifications/subscriptions/acknowledged` with the honoured `taskIds` (those the caller may see:
 * its own, or any for `admin`; an unknown id and another principal's are left out alike), then the current
 * `DetailedTask` of each, then one `notifications/tasks` per change the job's events bring (status, progress
 * message, retry; coalesced: a burst of events gives one read of the job and at most one notification, and an
 * unchanged task is not sent again). Once every honoured task is terminal, the stream ends with the listen
 * request's empty result (the graceful close). Every message carries the subscription id (the listen request's
 * JSON-RPC id) under `_meta`.
 *
 * Who may listen: a caller of `/mcp` whose request declares the tasks extension in its `_meta` client
 * capabilities (otherwise -32021, HTTP 400). Bounds: {@link MAX_TASK_IDS_PER_LISTEN} ids per listen (more:
 * -32602), and open listens per principal and in all (see {@link TaskListenersOptions}; over: -32603).
 */

/** Most task ids one `subscriptions/listen` may name. */
export const MAX_TASK_IDS_PER_LISTEN = 100;
/** Defaults of {@link TaskListenersOptions}. */
export const TASK_LISTEN_DEFAULTS = { maxPerPrincipal: 8, maxListens: 256, keepAliveMs: 15_000 } as const;

const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

/** Options of {@link TaskListeners}. */
export interface TaskListenersOptions {
  jobs: Jobs;
  tasks: JobTasksExtension;
  clock: Clock;
  /** Open task listens of one principal (default 8). */
  maxPerPrincipal?: number;
  /** Open task listens in all, this process (default 256). */
  maxListens?: number;
  /** A comment line is written this often so proxies keep the stream open, ms (default 15 000). */
  keepAliveMs?: number;
}

interface ListenRequest {
  id: string | number;
  taskIds: unknown;
  clientCapabilities: unknown;
}

/** The `subscriptions/listen` streams of task notifications, of one MCP server. */
export class TaskListeners {
  private readonly open = new Map<string, number>();
  private readonly teardowns = new Set<() => void>();
  private count = 0;

  constructor(private readonly options: TaskListenersOptions) {}

  /** True for a `subscriptions/listen` request whose filter names `taskIds` (this class serves it). */
  static claims(body: unknown): boolean {
    return listenRequest(body) !== undefined;
  }

  /** Open listens right now. */
  get size(): number {
    return this.count;
  }

  /** Serves one listen {@link TaskListeners.claims} took, for `principal`. Never rejects. */
  async serve(req: IncomingMessage, res: ServerResponse, body: unknown, principal: Principal): Promise<void> {
    const request = listenRequest(body)!;
    // The standard headers (SEP-2243), checked as the SDK checks them on the requests it serves: -32020.
    if (req.headers['mcp-protocol-version'] === undefined) {
      return reply(res, 400, request.id, -32020, 'Bad Request: the MCP-Protocol-Version header is missing.');
    }
    const method = req.headers['mcp-method'];
    if (method !== 'subscriptions/listen') {
      return reply(
        res,
        400,
        request.id,
        -32020,
        'Bad Request: the Mcp-Method header does not name subscriptions/listen.',
      );
    }
    if (!negotiatesTasks(request.clientCapabilities)) {
      const error = tasksCapabilityMissing('notifications/tasks');
      return reply(res, 400, request.id, error.rpcCode, error.message, error.data);
    }
    const ids = request.taskIds;
    if (
      !Array.isArray(ids) ||
      ids.some((id) => typeof id !== 'string') ||
      ids.length > MAX_TASK_IDS_PER_LISTEN
    ) {
      return reply(
        res,
        200,
        request.id,
        RPC.invalidParams,
        `taskIds must be an array of at most ${MAX_TASK_IDS_PER_LISTEN} task ids.`,
      );
    }
    const max = this.options.maxListens ?? TASK_LISTEN_DEFAULTS.maxListens;
    const perPrincipal = this.options.maxPerPrincipal ?? TASK_LISTEN_DEFAULTS.maxPerPrincipal;
    const mine = this.open.get(principal.id) ?? 0;
    if (this.count >= max || mine >= perPrincipal) {
      return reply(res, 200, request.id, RPC.internalError, 'Subscription limit reached');
    }
    this.count++;
    this.open.set(principal.id, mine + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.count--;
      const left = (this.open.get(principal.id) ?? 1) - 1;
      if (left === 0) this.open.delete(principal.id);
      else this.open.set(principal.id, left);
    };
    try {
      const snapshots = new Map<string, DetailedTask>();
      for (const id of new Set(ids as string[])) {
        const task = await this.read(principal, id);
        if (task !== undefined) snapshots.set(id, task);
      }
      this.stream(req, res, request.id, principal, snapshots, release);
    } catch {
      release();
      reply(res, 200, request.id, RPC.internalError, 'Internal error');
    }
  }

  /** Ends every open listen gracefully. */
  closeAll(): void {
    for (const teardown of [...this.teardowns]) teardown();
  }

  private read(principal: Principal, id: string): Promise<DetailedTask | undefined> {
    return PrincipalContext.run(principal, () =>
      this.options.tasks.get(id).catch((error: unknown) => {
        if (error instanceof McpProtocolError && error.rpcCode === RPC.invalidParams) return undefined;
        throw error;
      }),
    );
  }

  private stream(
    req: IncomingMessage,
    res: ServerResponse,
    subscriptionId: string | number,
    principal: Principal,
    snapshots: Map<string, DetailedTask>,
    release: () => void,
  ): void {
    const { jobs, clock } = this.options;
    const keepAliveMs = this.options.keepAliveMs ?? TASK_LISTEN_DEFAULTS.keepAliveMs;
    const meta = { [SUBSCRIPTION_ID_META]: subscriptionId };
    const followers = new Map<string, Disposable>();
    let closed = false;
    let keepAlive: TimerHandle | undefined;
    const write = (message: unknown): void => {
      if (!closed) res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    };
    const notify = (task: DetailedTask): void =>
      write({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: meta } });
    const teardown = (graceful: boolean): void => {
      if (closed) return;
      if (graceful)
        write({ jsonrpc: '2.0', id: subscriptionId, result: { resultType: 'complete', _meta: meta } });
      closed = true;
      this.teardowns.delete(onClose);
      for (const follower of followers.values()) follower.dispose();
      if (keepAlive !== undefined) clock.clearTimeout(keepAlive);
      release();
      res.end();
    };
    const onClose = (): void => teardown(true);
    this.teardowns.add(onClose);
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
    });
    res.on('close', () => teardown(false));
    req.on('aborted', () => teardown(false));
    write({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [...snapshots.keys()] }, _meta: meta },
    });
    const live = new Set<string>();
    for (const [id, task] of snapshots) {
      notify(task);
      if (!isTerminal(task)) live.add(id);
    }
    if (live.size === 0) return teardown(true);
    const arm = (): void => {
      keepAlive = clock.setTimeout(() => {
        if (closed) return;
        res.write(': keepalive\n\n');
        arm();
      }, keepAliveMs);
    };
    arm();
    for (const id of live) {
      let last = snapshots.get(id)!;
      let reading = false;
      let again = false;
      let ended = false;
      const refresh = async (): Promise<void> => {
        if (reading) {
          again = true;
          return;
        }
        reading = true;
        try {
          do {
            again = false;
            const task = await this.read(principal, id);
            if (closed) return;
            if (task !== undefined && changed(last, task)) {
              last = task;
              notify(task);
            }
          } while (again && !closed);
        } catch {
          // A failed read is retried by the next event; the end re-reads in any case.
        } finally {
          reading = false;
        }
        // The runner's last read came after the job's terminal event: nothing more will change.
        if (ended) done();
      };
      const done = (): void => {
        followers.get(id)?.dispose();
        followers.delete(id);
        live.delete(id);
        if (live.size === 0) teardown(true);
      };
      followers.set(
        id,
        jobs.subscribe(id, 0, () => void refresh(), {
          onEnd: () => {
            ended = true;
            void refresh();
          },
        }),
      );
    }
  }
}

function isTerminal(task: DetailedTask): boolean {
  return task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
}

function changed(before: DetailedTask, after: DetailedTask): boolean {
  return (
    before.status !== after.status ||
    before.statusMessage !== after.statusMessage ||
    before.lastUpdatedAt !== after.lastUpdatedAt ||
    // A new question (another key) of an input_required task, whatever its message.
    Object.keys(before.inputRequests ?? {}).join('\n') !== Object.keys(after.inputRequests ?? {}).join('\n')
  );
}

/** The parts of a `subscriptions/listen` request naming `taskIds`, or undefined for anything else. */
function listenRequest(body: unknown): ListenRequest | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const message = body as { method?: unknown; id?: unknown; params?: unknown };
  if (message.method !== 'subscriptions/listen') return undefined;
  if (typeof message.id !== 'string' && typeof message.id !== 'number') return undefined;
  const params = (message.params ?? {}) as {
    notifications?: { taskIds?: unknown };
    _meta?: Record<string, unknown>;
  };
  if (params.notifications?.taskIds === undefined) return undefined;
  return {
    id: message.id,
    taskIds: params.notifications.taskIds,
    clientCapabilities: params._meta?.[CLIENT_CAPABILITIES_META],
  };
}

function reply(
  res: ServerResponse,
  status: number,
  id: string | number,
  code: number,
  message: string,
  data?: unknown,
): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } }),
  );
}
