import type { Clock, Disposable } from '../core/index.js';
import type { Jobs, ProgressPayload } from '../jobs/index.js';
import type { CallScope, ProgressParams } from './run.js';
import { RELATED_TASK_META, type TaskInfo } from './types.js';

/** Options of {@link forwardJobProgress}. */
export interface ForwardOptions {
  jobs: Jobs;
  jobId: string;
  /** The caller's `_meta.progressToken`; without one no progress is sent. */
  progressToken: string | number | undefined;
  /** Set when the job backs an MCP task: notifications carry the related-task `_meta`. */
  taskId?: string;
  /** Sends one server notification on the session (its standalone stream). */
  send(method: string, params: Record<string, unknown>): Promise<void>;
  /**
   * When set, read after the job's terminal event and sent as `notifications/tasks/status` (spec 2025-11-25:
   * a receiver MAY notify status changes), so a client need not poll for the end.
   */
  finalTask?: () => Promise<TaskInfo | null>;
  /** Called once when forwarding ends by itself (the job ended or does not exist); not after `dispose()`. */
  onEnd?(): void;
}

/**
 * The progress bridge: follows a job's events (stored ones first, then live ones, see `jobs.subscribe`) and
 * forwards each `job.progress` `{ step, total, message? }` as `notifications/progress` `{ progressToken,
 * progress: step, total, message }`. Progress must increase (MCP "Progress"): a step not above the last one
 * sent is dropped. Notifications are sent one after the other, in event order; a failed send is dropped
 * (progress is best effort) and does not stop the bridge. Ends after the job's terminal event, or on
 * `dispose()` (the session went away); both remove the job subscription.
 */
export function forwardJobProgress(options: ForwardOptions): Disposable {
  const { progressToken, taskId } = options;
  const meta = taskId === undefined ? undefined : { [RELATED_TASK_META]: { taskId } };
  let active = true;
  let last = -Infinity;
  let queue: Promise<void> = Promise.resolve();

  const enqueue = (method: string, params: () => Promise<Record<string, unknown> | null>): void => {
    queue = queue.then(async () => {
      if (!active) return;
      try {
        const value = await params();
        if (value !== null && active) await options.send(method, value);
      } catch {
        // The stream may be gone for a moment (a client reconnecting); the next event tries again.
      }
    });
  };

  const subscription = options.jobs.subscribe(
    options.jobId,
    0,
    (event) => {
      if (!active || event.type !== 'job.progress' || progressToken === undefined) return;
      const payload = event.payload as Partial<ProgressPayload> | null;
      const step = payload?.step;
      if (typeof step !== 'number' || !Number.isFinite(step) || step <= last) return;
      last = step;
      const params: Record<string, unknown> = { progressToken, progress: step };
      if (typeof payload?.total === 'number') params['total'] = payload.total;
      if (typeof payload?.message === 'string') params['message'] = payload.message;
      if (meta !== undefined) params['_meta'] = meta;
      enqueue('notifications/progress', async () => params);
    },
    {
      onEnd: () => {
        if (!active) return;
        const finalTask = options.finalTask;
        if (finalTask !== undefined) {
          enqueue('notifications/tasks/status', async () => {
            const task = await finalTask();
            return task === null ? null : { ...task, ...(meta === undefined ? {} : { _meta: meta }) };
          });
        }
        void queue.then(() => {
          if (!active) return;
          active = false;
          options.onEnd?.();
        });
      },
    },
  );

  return {
    dispose() {
      if (!active) return;
      active = false;
      subscription.dispose();
    },
  };
}

/** Options of {@link waitForJob}. */
export interface WaitOptions {
  jobs: Jobs;
  jobId: string;
  /** The clock `until` is read on (the server's). */
  clock: Clock;
  /** When the wait gives up: absolute ms since the epoch on `clock`. */
  until: number;
  /**
   * The waiting request: its `signal` ends the wait, its `progressToken` (required: without one there is
   * nothing to forward and no reason to wait) and `sendProgress` carry the job's progress on its stream.
   */
  scope: Pick<CallScope, 'signal' | 'progressToken' | 'sendProgress'>;
}

/**
 * How {@link waitForJob} ended: `ended` after the job's terminal event (or when the job's events could not be
 * followed: read the job to know which), `deadline` when `until` came first, `aborted` when the request's
 * signal aborted first.
 */
export type WaitEnd = 'ended' | 'deadline' | 'aborted';

/**
 * Waits, inside one request, for a job to end: forwards its `job.progress` events as `notifications/progress`
 * through `scope.sendProgress` (as {@link forwardJobProgress} does: increasing steps only, in order, every
 * send done before the wait ends `ended`), and settles at the first of the job's terminal event, `until`
 * (one timer on `clock`) and the abort of `scope.signal`. The job is never touched: a deadline or an abort
 * ends the wait, not the job. The job subscription, the timer and the abort listener are released on every
 * path. Never rejects.
 */
export function waitForJob(options: WaitOptions): Promise<WaitEnd> {
  const { clock, scope } = options;
  return new Promise<WaitEnd>((resolve) => {
    if (scope.signal.aborted) return resolve('aborted');
    let done = false;
    // Called only from a timer, an abort event or the forwarder's end: never before all three are set.
    const finish = (end: WaitEnd): void => {
      if (done) return;
      done = true;
      clock.clearTimeout(timer);
      scope.signal.removeEventListener('abort', onAbort);
      forwarder.dispose();
      resolve(end);
    };
    const onAbort = (): void => finish('aborted');
    const timer = clock.setTimeout(() => finish('deadline'), options.until - clock.now());
    scope.signal.addEventListener('abort', onAbort);
    const forwarder = forwardJobProgress({
      jobs: options.jobs,
      jobId: options.jobId,
      progressToken: scope.progressToken,
      // The request's sender adds its own token.
      send: async (_method, { progressToken: _token, ...params }) => {
        await scope.sendProgress(params as unknown as ProgressParams);
      },
      onEnd: () => finish('ended'),
    });
  });
}
