import type { Claim, JobError } from '../jobs.js';
import type { SqliteContext } from './context.js';
import type { AppendEvent, InsertEvent } from './events.js';
import { notBlocked, type NotifySuccessor } from './ordering.js';
import { JOB_COLUMNS, toJobRecord, toJson, type JobRow } from './rows.js';

/** Options of `JobStore.claim`. */
export interface ClaimOptions {
  owner: string;
  types: readonly string[];
  limit: number;
  leaseMs: number;
}

/** A due job, with the columns that order claims. */
interface Candidate {
  id: string;
  priority: number;
  runAt: number;
  /** The seq its `job.started` event gets (the lease UPDATE bumps it; see InsertEvent). */
  nextSeq: number;
}

/** An in-progress job whose lease has lapsed, with what decides its fate. */
interface Expired extends Candidate {
  attempts: number;
  maxAttempts: number;
  cancelRequestedAt: number | null;
  orderingKey: string | null;
}

/** The claim order of the contract: highest priority, then earliest `runAt`, then oldest (smallest id). */
const CLAIM_ORDER = 'ORDER BY priority DESC, run_at, id';

/**
 * Prepares `JobStore.claim`.
 *
 * The whole claim is one `BEGIN IMMEDIATE` transaction: it takes SQLite's single write lock before reading,
 * so no other connection (another store on the same file, another process) can choose the same jobs between
 * this one's SELECT and UPDATE, and no snapshot goes stale under it (`SQLITE_BUSY_SNAPSHOT` cannot happen to a
 * transaction that holds the lock from its start). Contenders wait up to the busy timeout.
 *
 * Steps, in that transaction:
 * 1. Expired leases (`in_progress`, `lease_expires_at <= now`) of the wanted types, found through the small
 *    partial index `jobs_lease`. Those that must not run again end here, whatever `limit` is, so they never
 *    linger as running: a cancel request makes them `canceled`, no attempts left makes them `failed` with
 *    `lease_expired`. The rest can be reclaimed.
 * 2. Due pending jobs, in claim order through `jobs_claim`, at most `limit`, passing over those blocked by
 *    their ordering key (see `ordering.ts`). The condition is read from the snapshot before any of this
 *    claim's leases, so two jobs of one key never come back from one claim: the later one sees the earlier
 *    one pending ahead of it.
 * 3. The best `limit` of both (reclaims are rare, so usually step 2's list as is) are leased one by one:
 *    `attempts + 1` (a reclaim counts the lost run too, since its attempt was counted when it was claimed),
 *    a new fencing token, owner and expiry, and a `job.started` event.
 *
 * An expired lease ended in step 1 may unblock the next job of its ordering key: `job_available` for it.
 *
 * The types filter is one bound parameter, a JSON array read with `json_each`, so one prepared statement
 * serves any list of types; with no types a second statement leaves the filter out.
 */
export function prepareClaim(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  insertEvent: InsertEvent,
  notifySuccessor: NotifySuccessor,
): (options: ClaimOptions) => Claim[] {
  const { db } = ctx;
  const typeFilter = 'AND type IN (SELECT value FROM json_each(?))';
  // INDEXED BY jobs_lease: only the expired leases are read (usually none). Left to itself the planner takes
  // jobs_status_id and reads every running job on every claim: thousands with a large worker pool.
  const expiredSql = (filter: string) =>
    `SELECT id, priority, run_at AS runAt, next_seq AS nextSeq, attempts, max_attempts AS maxAttempts,
            cancel_requested_at AS cancelRequestedAt, ordering_key AS orderingKey
       FROM jobs INDEXED BY jobs_lease
      WHERE status = 'in_progress' AND lease_expires_at <= ? ${filter}
      ${CLAIM_ORDER}`;
  // INDEXED BY: walking jobs_claim in claim order stops after LIMIT rows; without it (no ANALYZE data)
  // SQLite picks jobs_run_at and sorts every due job on each claim, so a backlog slows every claim.
  const pendingSql = (filter: string) =>
    `SELECT id, priority, run_at AS runAt, next_seq AS nextSeq
       FROM jobs AS j INDEXED BY jobs_claim
      WHERE status = 'pending' AND run_at <= ? ${filter}
        AND ${notBlocked('j')}
      ${CLAIM_ORDER}
      LIMIT ?`;
  const expiredAll = db.prepare<[number], Expired>(expiredSql(''));
  const expiredOfTypes = db.prepare<[number, string], Expired>(expiredSql(typeFilter));
  const pendingAll = db.prepare<[number, number], Candidate>(pendingSql(''));
  const pendingOfTypes = db.prepare<[number, string, number], Candidate>(pendingSql(typeFilter));

  // The two ways an expired lease ends. The lease columns are cleared: no one holds the job any more.
  const cancelExpired = db.prepare<[number, number, string]>(
    `UPDATE jobs SET status = 'canceled', lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?, updated_at = ?
      WHERE id = ?`,
  );
  const failExpired = db.prepare<[string, number, number, string]>(
    `UPDATE jobs SET status = 'failed', error = ?, lease_owner = NULL, lease_expires_at = NULL,
                     finished_at = ?, updated_at = ?
      WHERE id = ?`,
  );
  // The `job.started` seq (the candidate's `nextSeq`, read under the same write lock) is taken in this
  // UPDATE (see InsertEvent): one row write per leased job.
  const lease = db.prepare<[string, number, number, string], JobRow>(
    `UPDATE jobs SET status = 'in_progress', attempts = attempts + 1, lease_token = lease_token + 1,
                     lease_owner = ?, lease_expires_at = ?, updated_at = ?, next_seq = next_seq + 1
      WHERE id = ?
      RETURNING ${JOB_COLUMNS}`,
  );

  const endExpired = (job: Expired, now: number): boolean => {
    if (job.cancelRequestedAt !== null) {
      cancelExpired.run(now, now, job.id);
      appendEvent(job.id, 'job.canceled', { attempts: job.attempts }, now);
      notifySuccessor(job.orderingKey);
      return true;
    }
    if (job.attempts >= job.maxAttempts) {
      const error: JobError = {
        code: 'lease_expired',
        kind: 'transient',
        message: `The worker's lease expired before attempt ${job.attempts} of ${job.maxAttempts} finished, and no attempts are left.`,
      };
      failExpired.run(toJson(error)!, now, now, job.id);
      appendEvent(job.id, 'job.failed', { error, attempts: job.attempts }, now);
      notifySuccessor(job.orderingKey);
      return true;
    }
    return false;
  };

  return db.transaction(({ owner, types, limit, leaseMs }: ClaimOptions): Claim[] => {
    const now = ctx.clock.now();
    const typesJson = types.length === 0 ? undefined : JSON.stringify(types);
    const expired = typesJson === undefined ? expiredAll.all(now) : expiredOfTypes.all(now, typesJson);
    let reclaimable: Candidate[] | undefined;
    for (const job of expired) {
      if (!endExpired(job, now)) (reclaimable ??= []).push(job);
    }
    if (!(limit >= 1)) return [];

    const pending =
      typesJson === undefined ? pendingAll.all(now, limit) : pendingOfTypes.all(now, typesJson, limit);
    const chosen =
      reclaimable === undefined ? pending : [...reclaimable, ...pending].sort(byClaimOrder).slice(0, limit);

    const claims: Claim[] = new Array(chosen.length);
    const expiresAt = now + leaseMs;
    for (let i = 0; i < chosen.length; i++) {
      const candidate = chosen[i]!;
      const job = toJobRecord(lease.get(owner, expiresAt, now, candidate.id)!);
      insertEvent(job.id, candidate.nextSeq, 'job.started', { attempt: job.attempts }, now);
      claims[i] = { job, token: job.leaseToken };
    }
    return claims;
  }).immediate;
}

function byClaimOrder(a: Candidate, b: Candidate): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
