import type Database from 'better-sqlite3';
import type { Claim, JobError, JobRecord } from '../jobs.js';
import type { SqliteContext } from './context.js';
import type { AppendEvent, InsertEvent } from './events.js';
import { byLimit } from './limit.js';
import { notBlocked, type NotifySuccessor } from './ordering.js';
import { JOB_COLUMNS, toJobRecord, toJson, type JobRow } from './rows.js';

/** Options of `JobStore.claim`. */
export interface ClaimOptions {
  owner: string;
  types: readonly string[];
  limit: number;
  leaseMs: number;
  /** Ids of jobs the caller runs: their expired leases are left as they are (see `JobStore.claim`). */
  exclude?: readonly string[];
}

/**
 * A job the claim may lease, read raw: its {@link JOB_COLUMNS}, then the seq its `job.started` event gets (the
 * lease UPDATE bumps it; see InsertEvent) and its rowid, which the lease UPDATE finds it by. Reading the whole
 * row here lets the lease skip `RETURNING`, which SQLite serves through a temporary table per statement.
 */
type Candidate = [...JobRow, nextSeq: number, rowid: number];
const NEXT_SEQ = 21;
const ROWID = 22;
// A compile error here means JobRow's length changed: move NEXT_SEQ and ROWID with it.
const _nextSeqFollowsRow: JobRow['length'] = NEXT_SEQ;

/** The claim order of the contract: highest priority, then earliest `runAt`, then oldest (smallest id). */
const CLAIM_ORDER = 'ORDER BY priority DESC, run_at, id';

/**
 * Prepares `JobStore.claim`.
 *
 * A step of the group commit (`batch.ts`): the whole claim runs in the batch's `BEGIN IMMEDIATE` transaction,
 * which takes SQLite's single write lock before reading, so no other connection (another store on the same
 * file, another process) can choose the same jobs between this one's SELECT and UPDATE, and no snapshot goes
 * stale under it (`SQLITE_BUSY_SNAPSHOT` cannot happen to a transaction that holds the lock from its start).
 * Contenders wait up to the busy timeout. Its statements are chosen before its first write.
 *
 * Steps, in that transaction:
 * 1. Expired leases (`in_progress`, `lease_expires_at <= now`) of the wanted types, found through the small
 *    partial index `jobs_lease`, less those in `exclude` (runs the caller holds: left untouched; filtered
 *    here rather than in SQL, expired leases being few). Those that must not run again end here, whatever
 *    `limit` is, so they never linger as running: a cancel request makes them `canceled`, no attempts left
 *    makes them `failed` with `lease_expired`. The rest can be reclaimed.
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
 * The types filter binds one parameter per type (`type IN (?, ?)`), prepared once per list length; a list
 * longer than {@link INLINE_TYPES} is one JSON array read with `json_each` (slower per claim:
 * docs/performance.md#sqlite-store).
 * With no types the filter is left out.
 */
export function prepareClaim(
  ctx: SqliteContext,
  appendEvent: AppendEvent,
  insertEvent: InsertEvent,
  notifySuccessor: NotifySuccessor,
): (options: ClaimOptions) => Claim[] {
  const { db } = ctx;
  // INDEXED BY jobs_lease: only the expired leases are read (usually none). Left to itself the planner may
  // take another index and read every running job on every claim: thousands with a large worker pool.
  const expiredSql = (typeCount: number) =>
    `SELECT ${JOB_COLUMNS}, next_seq, rowid
       FROM jobs INDEXED BY jobs_lease
      WHERE status = 'in_progress' AND lease_expires_at <= ? ${typeFilter(typeCount)}
      ${CLAIM_ORDER}`;
  // INDEXED BY: walking jobs_claim in claim order stops after LIMIT rows; the plan must not drift (no
  // ANALYZE data) to one that sorts every due job on each claim, where a backlog slows every claim.
  const pendingSql = (typeCount: number, limit: number) =>
    `SELECT ${JOB_COLUMNS}, next_seq, rowid
       FROM jobs AS j INDEXED BY jobs_claim
      WHERE status = 'pending' AND run_at <= ? ${typeFilter(typeCount)}
        AND ${notBlocked('j')}
      ${CLAIM_ORDER}
      LIMIT ${limit}`;
  // One statement per shape of the types filter (and per limit: see limit.ts), prepared on first use.
  const expiredByShape: Database.Statement<unknown[], Candidate>[] = [];
  const pendingByShape: ((limit: number) => Database.Statement<unknown[], Candidate>)[] = [];
  const expiredOf = (typeCount: number) =>
    (expiredByShape[typeShape(typeCount)] ??= db
      .prepare<unknown[], Candidate>(expiredSql(typeCount))
      .raw(true));
  const pendingOf = (typeCount: number, limit: number) =>
    (pendingByShape[typeShape(typeCount)] ??= byLimit((n) =>
      db.prepare<unknown[], Candidate>(pendingSql(typeCount, n)).raw(true),
    ))(limit);

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
  // UPDATE (see InsertEvent): one row write per leased job. The leased record is the candidate's row with
  // this UPDATE's changes applied (see leased()).
  const lease = db.prepare<[string, number, number, number]>(
    `UPDATE jobs SET status = 'in_progress', attempts = attempts + 1, lease_token = lease_token + 1,
                     lease_owner = ?, lease_expires_at = ?, updated_at = ?, next_seq = next_seq + 1
      WHERE rowid = ?`,
  );

  const endExpired = (job: JobRecord, now: number): boolean => {
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

  return ({ owner, types, limit, leaseMs, exclude }: ClaimOptions): Claim[] => {
    // Everything that can refuse the call, before the first write (batch.ts).
    if (typeof owner !== 'string' || !Number.isFinite(leaseMs)) {
      throw new TypeError('SQLite job store: claim needs an owner string and a finite leaseMs');
    }
    if (exclude !== undefined && !Array.isArray(exclude)) {
      throw new TypeError('SQLite job store: claim exclude must be an array of job ids when given');
    }
    const pendingStatement =
      limit >= 1 ? pendingOf(types.length, Math.min(Math.floor(limit), Number.MAX_SAFE_INTEGER)) : undefined;
    const now = ctx.clock.now();
    const typeParams = types.length <= INLINE_TYPES ? types : [JSON.stringify(types)];
    const expired = expiredOf(types.length).all(now, ...typeParams);
    let reclaimable: Candidate[] | undefined;
    const held =
      expired.length > 0 && exclude !== undefined && exclude.length > 0 ? new Set(exclude) : undefined;
    for (const row of expired) {
      if (held?.has(row[0])) continue;
      if (!endExpired(toJobRecord(row), now)) (reclaimable ??= []).push(row);
    }
    if (pendingStatement === undefined) return [];

    const pending = pendingStatement.all(now, ...typeParams);
    const chosen =
      reclaimable === undefined ? pending : [...reclaimable, ...pending].sort(byClaimOrder).slice(0, limit);

    const claims: Claim[] = new Array(chosen.length);
    const expiresAt = now + leaseMs;
    for (let i = 0; i < chosen.length; i++) {
      const candidate = chosen[i]!;
      lease.run(owner, expiresAt, now, candidate[ROWID]);
      const job = leased(candidate, owner, expiresAt, now);
      insertEvent(job.id, candidate[NEXT_SEQ], 'job.started', { attempt: job.attempts }, now);
      claims[i] = { job, token: job.leaseToken };
    }
    return claims;
  };
}

/** Type lists up to this long are bound one parameter per type; longer ones as one JSON array. */
const INLINE_TYPES = 8;

/** The claim's filter on `type`, for a list of `count` types (none: no filter). */
function typeFilter(count: number): string {
  if (count === 0) return '';
  if (count <= INLINE_TYPES) return `AND type IN (${'?, '.repeat(count - 1)}?)`;
  return 'AND type IN (SELECT value FROM json_each(?))';
}

/** The statement slot of a types filter: one per inline count, one for every longer list. */
function typeShape(count: number): number {
  return Math.min(count, INLINE_TYPES + 1);
}

/** The record of a candidate after the lease UPDATE, as `RETURNING` would have read it. */
function leased(candidate: Candidate, owner: string, expiresAt: number, now: number): JobRecord {
  const job = toJobRecord(candidate);
  job.status = 'in_progress';
  job.attempts += 1;
  job.leaseToken += 1;
  job.leaseOwner = owner;
  job.leaseExpiresAt = expiresAt;
  job.updatedAt = now;
  return job;
}

function byClaimOrder(a: Candidate, b: Candidate): number {
  // JOB_COLUMNS order: id is 0, run_at 8, priority 9.
  return b[9] - a[9] || a[8] - b[8] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}
