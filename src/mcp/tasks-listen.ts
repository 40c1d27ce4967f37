import type { IncomingMessage, ServerResponse } from 'node:http';
import { PrincipalContext, type Clock, type Disposable, type Principal } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import {
  negotiatesTasks,
  tasksCapabilityMissing,
  type DetailedTask,
  type JobTasksExtension,
} from './tasks-ext.js';
import {
  CLIENT_CAPABILITIES_META,
  listenHeadersOk,
  listenParams,
  ListenSlots,
  openListenStream,
  replyError,
  type ListenStream,
} from './listen-stream.js';
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
  private readonly slots: ListenSlots;
  private readonly streams = new Set<ListenStream>();

  constructor(private readonly options: TaskListenersOptions) {
    this.slots = new ListenSlots(
      options.maxPerPrincipal ?? TASK_LISTEN_DEFAULTS.maxPerPrincipal,
      options.maxListens ?? TASK_LISTEN_DEFAULTS.maxListens,
    );
  }

  /** True for a `subscriptions/listen` request whose filter names `taskIds` (this class serves it). */
  static claims(body: unknown): boolean {
    return listenRequest(body) !== undefined;
  }

  /** Open listens right now. */
  get size(): number {
    return this.slots.size;
  }

  /** Serves one listen {@link TaskListeners.claims} took, for `principal`. Never rejects. */
  async serve(req: IncomingMessage, res: ServerResponse, body: unknown, principal: Principal): Promise<void> {
    const request = listenRequest(body)!;
    if (!listenHeadersOk(req, res, request.id)) return;
    if (!negotiatesTasks(request.clientCapabilities)) {
      const error = tasksCapabilityMissing('notifications/tasks');
      return replyError(res, 400, request.id, error.rpcCode, error.message, error.data);
    }
    const ids = request.taskIds;
    if (
      !Array.isArray(ids) ||
      ids.some((id) => typeof id !== 'string') ||
      ids.length > MAX_TASK_IDS_PER_LISTEN
    ) {
      return replyError(
        res,
        200,
        request.id,
        RPC.invalidParams,
        `taskIds must be an array of at most ${MAX_TASK_IDS_PER_LISTEN} task ids.`,
      );
    }
    const release = this.slots.take(principal.id);
    if (release === undefined)
      return replyError(res, 200, request.id, RPC.internalError, 'Subscription limit reached');
    try {
      const snapshots = new Map<string, DetailedTask>();
      for (const id of new Set(ids as string[])) {
        const task = await this.read(principal, id);
        if (task !== undefined) snapshots.set(id, task);
      }
      this.stream(req, res, request.id, principal, snapshots, release);
    } catch {
      release();
      replyError(res, 200, request.id, RPC.internalError, 'Internal error');
    }
  }

  /** Ends every open listen gracefully. */
  closeAll(): void {
    for (const stream of [...this.streams]) stream.end(true);
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
    const followers = new Map<string, Disposable>();
    const stream: ListenStream = openListenStream(req, res, {
      subscriptionId,
      acknowledged: { taskIds: [...snapshots.keys()] },
      clock,
      keepAliveMs: this.options.keepAliveMs ?? TASK_LISTEN_DEFAULTS.keepAliveMs,
      onEnd: () => {
        this.streams.delete(stream);
        for (const follower of followers.values()) follower.dispose();
        release();
      },
    });
    this.streams.add(stream);
    const notify = (task: DetailedTask): void => stream.notify('notifications/tasks', { ...task });
    const live = new Set<string>();
    for (const [id, task] of snapshots) {
      notify(task);
      if (!isTerminal(task)) live.add(id);
    }
    if (live.size === 0) return stream.end(true);
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
            if (stream.closed) return;
            if (task !== undefined && changed(last, task)) {
              last = task;
              notify(task);
            }
          } while (again && !stream.closed);
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
        if (live.size === 0) stream.end(true);
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
  const listen = listenParams(body);
  if (listen?.notifications.taskIds === undefined) return undefined;
  return {
    id: listen.id,
    taskIds: listen.notifications.taskIds,
    clientCapabilities: listen.meta[CLIENT_CAPABILITIES_META],
  };
}
