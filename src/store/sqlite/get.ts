import type Database from 'better-sqlite3';
import { JOB_STATUSES, type JobFilter, type JobRecord, type JobStatus } from '../jobs.js';
import type { SqliteContext } from './context.js';
import { JOB_COLUMNS, prepareJobRows, toJobRecord, type JobRow } from './rows.js';

/** Default and largest page of `JobStore.list`. */
const LIST_DEFAULT_LIMIT = 100;
const LIST_MAX_LIMIT = 1000;

/** Prepares `JobStore.get`: one primary-key lookup. */
export function prepareGet(ctx: SqliteContext): (id: string) => JobRecord | undefined {
  const select = prepareJobRows<[string]>(ctx.db, `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`);
  return (id) => {
    const row = select.get(id);
    return row === undefined ? undefined : toJobRecord(row);
  };
}

/**
 * Prepares `JobStore.list`: newest first (ids are UUIDv7, so `id DESC` is creation order), keyset-paginated
 * by `beforeId`.
 *
 * The SQL is built per filter shape (which filters are set, which statuses) and each shape is prepared once,
 * on first use: SQLite plans a statement when it is prepared, so a single catch-all statement with
 * `? IS NULL OR …` would be planned as a full scan. The statuses are written into the SQL (they are checked
 * against `JOB_STATUSES`; an unknown one matches nothing), so the planner can use the partial indexes:
 * - only `failed` and `canceled` (dead letters, the usual "by status" question): `jobs_failed_canceled`;
 * - only `in_progress`: `jobs_lease` (no more rows than the workers' slots), then a sort;
 * - otherwise (pending and completed jobs are the bulk of recent ids): the primary key, newest first, or
 *   `jobs_type_id` with a type.
 * An `owner` wins over all of these: `jobs_owner_id (owner, id)` walks that owner's jobs newest first, so a
 * principal's list costs its own jobs whatever else the filter says (a non-admin's list always has one).
 * An empty `status` array means no status filter, like an empty `types` in claim.
 */
export function prepareList(ctx: SqliteContext): (filter?: JobFilter) => JobRecord[] {
  const statements = new Map<string, ListStatement>();
  return (filter = {}) => {
    const limit = Math.min(Math.floor(filter.limit ?? LIST_DEFAULT_LIMIT), LIST_MAX_LIMIT);
    if (!(limit >= 1)) return [];
    const asked =
      filter.status === undefined ? [] : Array.isArray(filter.status) ? filter.status : [filter.status];
    const statuses = JOB_STATUSES.filter((status) => asked.includes(status));
    if (asked.length > 0 && statuses.length === 0) return [];
    const hasType = filter.type !== undefined;
    const hasOwner = filter.owner !== undefined;
    const hasCreatedBefore = filter.createdBefore !== undefined;
    const hasBeforeId = filter.beforeId !== undefined;
    const flags = { type: hasType, owner: hasOwner, createdBefore: hasCreatedBefore, beforeId: hasBeforeId };
    const shape = `${statuses.join(',')}:${+hasType}${+hasOwner}${+hasCreatedBefore}${+hasBeforeId}`;
    let statement = statements.get(shape);
    if (statement === undefined) {
      statement = prepareListShape(ctx, statuses, flags);
      statements.set(shape, statement);
    }
    const params: (string | number)[] = [];
    if (hasType) params.push(filter.type!);
    if (hasOwner) params.push(filter.owner!);
    if (hasCreatedBefore) params.push(filter.createdBefore!);
    if (hasBeforeId) params.push(filter.beforeId!);
    params.push(limit);
    return statement.all(...params).map(toJobRecord);
  };
}

type ListStatement = Database.Statement<(string | number)[], JobRow>;

/**
 * The WHERE of `jobs_failed_canceled` (migration 8), written the same way: SQLite uses a partial index only
 * for a query whose WHERE it can see implies the index's, and an identical term is what it recognizes.
 */
export const FAILED_CANCELED = "status IN ('failed', 'canceled')";

/** Which of the optional filters a list statement binds, in this order after the statuses. */
interface ListFlags {
  type: boolean;
  owner: boolean;
  createdBefore: boolean;
  beforeId: boolean;
}

function prepareListShape(
  ctx: SqliteContext,
  statuses: readonly JobStatus[],
  flags: ListFlags,
): ListStatement {
  const where: string[] = [];
  let index = '';
  if (statuses.length > 0) {
    // One status as `=`: SQLite sees that `status = 'in_progress'` implies jobs_lease's WHERE, not `IN (…)`.
    const literals = statuses.map((status) => `'${status}'`);
    where.push(literals.length === 1 ? `status = ${literals[0]}` : `status IN (${literals.join(', ')})`);
    if (statuses.every((status) => status === 'failed' || status === 'canceled')) {
      where.push(FAILED_CANCELED);
      index = 'INDEXED BY jobs_failed_canceled';
    } else if (statuses.length === 1 && statuses[0] === 'in_progress') {
      index = 'INDEXED BY jobs_lease';
    }
  }
  if (flags.type) where.push('type = ?');
  if (flags.owner) {
    where.push('owner = ?');
    index = 'INDEXED BY jobs_owner_id';
  }
  if (flags.createdBefore) where.push('created_at <= ?');
  if (flags.beforeId) where.push('id < ?');
  return prepareJobRows<(string | number)[]>(
    ctx.db,
    `SELECT ${JOB_COLUMNS} FROM jobs ${index}
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id DESC
      LIMIT ?`,
  );
}
