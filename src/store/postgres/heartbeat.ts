import type { LeaseRef } from '../jobs.js';
import { ms, type Db, query } from './db.js';

/**
 * Extends a lease to `now + leaseMs` and reports a pending cancel request, in one UPDATE.
 *
 * The fencing check is the WHERE clause: the job must still be `in_progress` under the caller's token. A
 * run whose lease lapsed but was not reclaimed yet still holds the current token and may go on (nothing
 * replaced it); once another claim bumped the token, no row matches and the worker learns `ok: false`.
 */
export async function heartbeat(
  db: Db,
  lease: LeaseRef,
  leaseMs: number,
): Promise<{ ok: boolean; cancelRequested: boolean }> {
  const now = ms(db.clock.now());
  const result = await query<{ cancel_requested_at: number | null }>(
    db.pool,
    `UPDATE ${db.jobs}
     SET lease_expires_at = $3::bigint + $4::bigint, updated_at = $3
     WHERE id = $1 AND lease_token = $2 AND status = 'in_progress'
     RETURNING cancel_requested_at`,
    [lease.id, lease.token, now, ms(leaseMs)],
  );
  const row = result.rows[0];
  return row === undefined
    ? { ok: false, cancelRequested: false }
    : { ok: true, cancelRequested: row.cancel_requested_at !== null };
}
