import type Database from 'better-sqlite3';
import type { JobFilter, JobRecord, JobStatus } from '../jobs.js';
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
 * The SQL is built per filter shape (which filters are set, how many statuses) and each shape is prepared
 * once, on first use: SQLite plans a statement when it is prepared, so a single catch-all statement with
 * `? IS NULL OR …` would be planned as a full scan; a statement per shape lets `jobs_status_id` or
 * `jobs_type_id` serve both the filter and the order. An empty `status` array means no status filter, like
 * an empty `types` in claim.
 */
export function prepareList(ctx: SqliteContext): (filter?: JobFilter) => JobRecord[] {
  const statements = new Map<string, ListStatement>();
  return (filter = {}) => {
    const limit = Math.min(Math.floor(filter.limit ?? LIST_DEFAULT_LIMIT), LIST_MAX_LIMIT);
    if (!(limit >= 1)) return [];
    const statuses: readonly JobStatus[] =
      filter.status === undefined ? [] : Array.isArray(filter.status) ? filter.status : [filter.status];
    const hasType = filter.type !== undefined;
    const hasCreatedBefore = filter.createdBefore !== undefined;
    const hasBeforeId = filter.beforeId !== undefined;
    const shape = `${statuses.length}:${+hasType}${+hasCreatedBefore}${+hasBeforeId}`;
    let statement = statements.get(shape);
    if (statement === undefined) {
      statement = prepareListShape(ctx, statuses.length, hasType, hasCreatedBefore, hasBeforeId);
      statements.set(shape, statement);
    }
    const params: (string | number)[] = [...statuses];
    if (hasType) params.push(filter.type!);
    if (hasCreatedBefore) params.push(filter.createdBefore!);
    if (hasBeforeId) params.push(filter.beforeId!);
    params.push(limit);
    return statement.all(...params).map(toJobRecord);
  };
}

type ListStatement = Database.Statement<(string | number)[], JobRow>;

function prepareListShape(
  ctx: SqliteContext,
  statusCount: number,
  type: boolean,
  createdBefore: boolean,
  beforeId: boolean,
): ListStatement {
  const where: string[] = [];
  if (statusCount > 0) where.push(`status IN (${new Array<string>(statusCount).fill('?').join(', ')})`);
  if (type) where.push('type = ?');
  if (createdBefore) where.push('created_at <= ?');
  if (beforeId) where.push('id < ?');
  return prepareJobRows<(string | number)[]>(
    ctx.db,
    `SELECT ${JOB_COLUMNS} FROM jobs
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id DESC
      LIMIT ?`,
  );
}
