import type Database from 'better-sqlite3';
import type { Clock, EventSource } from '../../core/index.js';
import type { JobEventType, StoreNotification } from '../jobs.js';

/**
 * What the operations of one SQLite store share: its connection, its clock and its notifications. Internal to
 * `store/sqlite`: each operation file prepares its statements from it once, when the store opens.
 */
export interface SqliteContext {
  readonly db: Database.Database;
  readonly clock: Clock;
  readonly notifications: EventSource<StoreNotification>;
  /**
   * Notifications produced by the transaction in progress: the store emits them after the commit and drops
   * them on a rollback, so a listener never hears of a change that did not happen. Filled only when someone
   * listens (no allocation otherwise).
   */
  outbox: StoreNotification[];
  /**
   * Ids of the jobs inserted by the transaction in progress (enqueue, a webhook accept, a replay): until the
   * log is synced after its commit, a claim that leases one of them waits for that sync instead of being
   * released at its commit (`wal-sync.ts`). Emptied when the transaction ends.
   */
  created: string[];
}

/** Queues `job_available` for after the commit (a job became due or will at `runAt`). */
export function notifyAvailable(ctx: SqliteContext, type: string, runAt: number): void {
  if (ctx.notifications.hasListeners) ctx.outbox.push({ kind: 'job_available', type, runAt });
}

/** Queues `job_event` for after the commit. */
export function notifyEvent(ctx: SqliteContext, jobId: string, seq: number, eventType: JobEventType): void {
  if (ctx.notifications.hasListeners) ctx.outbox.push({ kind: 'job_event', jobId, seq, eventType });
}

/** Queues `cancel_requested` for after the commit (a running job was asked to stop). */
export function notifyCancelRequested(ctx: SqliteContext, jobId: string): void {
  if (ctx.notifications.hasListeners) ctx.outbox.push({ kind: 'cancel_requested', jobId });
}
