import type { Claim } from '../jobs.js';
import { ms, type Db, query } from './db.js';
import { toJob, type JobRow } from './rows.js';

/**
 * Leases up to `limit` due jobs of `types` (every type when empty) to `owner`, in one statement: the
 * `claim_jobs` function (migration 11, `claim-function.ts`; a function so that its plan never depends on the
 * table's statistics, see there).
 *
 * Due means `pending` with `run_at <= now`, or `in_progress` with `lease_expires_at <= now` (the worker
 * holding it died or stalled). Expired leases split three ways, as the contract says:
 * - `reapable` (not claimed): a job whose cancel was requested becomes `canceled` (`job.canceled`
 *   `{ attempts }`), and one with no attempts left becomes `failed` with error `lease_expired`
 *   (`job.failed` `{ error, attempts }`). They are reaped in the same statement but outside the LIMIT, so a
 *   batch of dead leases never crowds out claimable jobs: `claim({ limit: 1 })` still returns the due job
 *   behind them.
 * - `candidates`: the others are reclaimed like pending jobs, the lost run counting as an attempt.
 * Both scans pass over the jobs of `exclude` (the runs the caller holds), whose leases stay as they are.
 *
 * A pending job blocked by its ordering key (the condition of `ordering.ts`) is passed over; a reclaim never is (its job
 * already holds its key's turn). Reaping an expired keyed job may unblock the next one: the
 * `jobs_ordering_successor` trigger announces it, since this statement's snapshot still shows the reaped job
 * running.
 *
 * `FOR UPDATE SKIP LOCKED` makes concurrent claimers (in any process) take disjoint rows without waiting on
 * each other; rows another transaction holds (a claim, a settle, a cancel) are skipped, and a job it leaves
 * due is taken by the next claim. Claimed rows get `attempts + 1`, a new fencing token (`lease_token + 1`),
 * the owner and `lease_expires_at = now + leaseMs`, and a `job.started` `{ attempt }` event. Every event
 * takes its seq from `next_seq`, incremented by the same UPDATE under the row lock. The `job_events_notify`
 * trigger sends a `job_event` notification per event of a watched job, on commit.
 *
 * The result is ordered like the claim: priority desc, then earliest `run_at`, then oldest id.
 */
export async function claim(
  db: Db,
  options: {
    owner: string;
    types: readonly string[];
    limit: number;
    leaseMs: number;
    exclude?: readonly string[];
  },
): Promise<Claim[]> {
  // Expired leases are reaped even with limit 0, which claims nothing else; LIMIT NULL is no limit.
  const limit = options.limit === Infinity ? null : options.limit > 0 ? Math.floor(options.limit) : 0;
  const now = ms(db.clock.now());
  const result = await query<JobRow>(
    db.pool,
    `SELECT * FROM ${db.claimJobs}($1, $2, $3, $4, $5, $6) ORDER BY priority DESC, run_at, id`,
    [now, [...options.types], limit, options.owner, ms(options.leaseMs), [...(options.exclude ?? [])]],
  );
  return result.rows.map((row) => ({ job: toJob(row), token: row.lease_token }));
}
