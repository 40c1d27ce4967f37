import type { LeaseRef } from '../jobs.js';
import type { SqliteContext } from './context.js';

/**
 * Prepares `JobStore.heartbeat`.
 *
 * One fenced UPDATE, atomic on its own (no explicit transaction): the token and `in_progress` in the WHERE
 * clause make a heartbeat from a run that lost its lease change nothing, and `RETURNING` hands back the cancel
 * request in the same statement, so a cancel from any connection reaches the worker within one heartbeat. A
 * lease that lapsed but was not yet reclaimed is still the job's only run, so it is extended (the fencing
 * token, not the clock, decides who owns the job).
 */
export function prepareHeartbeat(
  ctx: SqliteContext,
): (lease: LeaseRef, leaseMs: number) => { ok: boolean; cancelRequested: boolean } {
  const extend = ctx.db.prepare<[number, number, string, number], { cancelRequestedAt: number | null }>(
    `UPDATE jobs SET lease_expires_at = ?, updated_at = ?
      WHERE id = ? AND lease_token = ? AND status = 'in_progress'
      RETURNING cancel_requested_at AS cancelRequestedAt`,
  );
  return (lease, leaseMs) => {
    const now = ctx.clock.now();
    const row = extend.get(now + leaseMs, now, lease.id, lease.token);
    return row === undefined
      ? { ok: false, cancelRequested: false }
      : { ok: true, cancelRequested: row.cancelRequestedAt !== null };
  };
}
