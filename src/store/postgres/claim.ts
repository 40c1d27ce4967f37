import type { Claim } from '../jobs.js';
import { ms, type Db } from './db.js';
import { notBlocked } from './ordering.js';
import { toJob, type JobRow } from './rows.js';

/**
 * Leases up to `limit` due jobs of `types` (every type when empty) to `owner`, in one statement.
 *
 * Due means `pending` with `run_at <= now`, or `in_progress` with `lease_expires_at <= now` (the worker
 * holding it died or stalled). Expired leases split three ways, as the contract says:
 * - `reapable` (not claimed): a job whose cancel was requested becomes `canceled` (`job.canceled`
 *   `{ attempts }`), and one with no attempts left becomes `failed` with error `lease_expired`
 *   (`job.failed` `{ error, attempts }`). They are reaped in the same statement but outside the LIMIT, so a
 *   batch of dead leases never crowds out claimable jobs: `claim({ limit: 1 })` still returns the due job
 *   behind them.
 * - `candidates`: the others are reclaimed like pending jobs, the lost run counting as an attempt.
 *
 * A pending job blocked by its ordering key (see `ordering.ts`) is passed over; a reclaim never is (its job
 * already holds its key's turn). Reaping an expired keyed job may unblock the next one: the
 * `jobs_ordering_successor` trigger announces it, since this statement's snapshot still shows the reaped job
 * running.
 *
 * `FOR UPDATE SKIP LOCKED` makes concurrent claimers (in any process) take disjoint rows without waiting on
 * each other; rows another transaction holds (a claim, a settle, a cancel) are skipped, and a job it leaves
 * due is taken by the next claim. Claimed rows get `attempts + 1`, a new fencing token (`lease_token + 1`),
 * the owner and `lease_expires_at = now + leaseMs`, and a `job.started` `{ attempt }` event. Every event
 * takes its seq from `next_seq`, incremented by the same UPDATE under the row lock. The `job_events_notify`
 * trigger sends one `job_event` notification per event, on commit.
 *
 * The result is ordered like the claim: priority desc, then earliest `run_at`, then oldest id.
 */
export async function claim(
  db: Db,
  options: { owner: string; types: readonly string[]; limit: number; leaseMs: number },
): Promise<Claim[]> {
  // Expired leases are reaped even with limit 0, which claims nothing else; LIMIT NULL is no limit.
  const limit = options.limit === Infinity ? null : options.limit > 0 ? Math.floor(options.limit) : 0;
  const now = ms(db.clock.now());
  const result = await db.pool.query<JobRow>(
    `WITH reapable AS (
       SELECT id FROM ${db.jobs}
       WHERE status = 'in_progress' AND lease_expires_at <= $1
         AND (cancel_requested_at IS NOT NULL OR attempts >= max_attempts)
         AND (cardinality($2::text[]) = 0 OR type = ANY ($2::text[]))
       FOR UPDATE SKIP LOCKED
     ),
     reaped AS (
       UPDATE ${db.jobs} j SET
         status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'canceled' ELSE 'failed' END,
         error = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.error
                      ELSE jsonb_build_object('code', 'lease_expired', 'kind', 'transient', 'message',
                             format('The worker''s lease expired before attempt %s of %s finished, and no '
                                    'attempts are left.', j.attempts, j.max_attempts))
                 END,
         lease_owner = NULL,
         lease_expires_at = NULL,
         next_seq = j.next_seq + 1,
         updated_at = $1,
         finished_at = $1
       FROM reapable r
       WHERE j.id = r.id
       RETURNING j.id, j.status, j.attempts, j.error, j.next_seq - 1 AS seq
     ),
     candidates AS (
       SELECT id FROM ${db.jobs} j
       WHERE ((status = 'pending' AND run_at <= $1 AND ${notBlocked(db.jobs, 'j')})
              OR (status = 'in_progress' AND lease_expires_at <= $1
                  AND cancel_requested_at IS NULL AND attempts < max_attempts))
         AND (cardinality($2::text[]) = 0 OR type = ANY ($2::text[]))
       ORDER BY priority DESC, run_at, id
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     ),
     claimed AS (
       UPDATE ${db.jobs} j SET
         status = 'in_progress',
         attempts = j.attempts + 1,
         lease_token = j.lease_token + 1,
         lease_owner = $4,
         lease_expires_at = $1 + $5::bigint,
         next_seq = j.next_seq + 1,
         updated_at = $1
       FROM candidates c
       WHERE j.id = c.id
       RETURNING j.*
     ),
     written AS (
       INSERT INTO ${db.events} (job_id, seq, type, occurred_at, payload)
       SELECT id, next_seq - 1, 'job.started', $1, jsonb_build_object('attempt', attempts) FROM claimed
       UNION ALL
       SELECT id, seq,
              CASE WHEN status = 'canceled' THEN 'job.canceled' ELSE 'job.failed' END,
              $1,
              CASE WHEN status = 'canceled' THEN jsonb_build_object('attempts', attempts)
                   ELSE jsonb_build_object('error', error, 'attempts', attempts)
              END
       FROM reaped
     )
     SELECT * FROM claimed ORDER BY priority DESC, run_at, id`,
    [now, [...options.types], limit, options.owner, ms(options.leaseMs)],
  );
  return result.rows.map((row) => ({ job: toJob(row), token: row.lease_token }));
}
