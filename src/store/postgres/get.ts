import { query } from './db.js';
import type { JobFilter, JobRecord } from '../jobs.js';
import type { Db } from './db.js';
import { toJob, type JobRow } from './rows.js';

/** Default and largest page size of {@link list} (the contract's `JobFilter.limit`). */
const LIST_DEFAULT_LIMIT = 100;
const LIST_MAX_LIMIT = 1000;

/** One job by id, through the primary key. */
export async function get(db: Db, id: string): Promise<JobRecord | undefined> {
  const result = await query<JobRow>(db.pool, `SELECT * FROM ${db.jobs} WHERE id = $1`, [id]);
  const row = result.rows[0];
  return row === undefined ? undefined : toJob(row);
}

/**
 * Jobs matching `filter`, newest first. Only the conditions the filter sets are added, as parameters. Ids
 * are UUIDv7 in the C collation, so `ORDER BY id DESC` is newest first and `id < beforeId` is a keyset page
 * that stays stable while jobs are added. An empty `status` list filters nothing (as an empty `types` list
 * does for claim); `limit` defaults to 100 and is capped at 1000.
 */
export async function list(db: Db, filter: JobFilter = {}): Promise<JobRecord[]> {
  const values: unknown[] = [];
  const where: string[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  if (filter.status !== undefined) {
    const statuses = Array.isArray(filter.status) ? filter.status : [filter.status];
    if (statuses.length > 0) where.push(`status = ANY (${param(statuses)}::text[])`);
  }
  if (filter.type !== undefined) where.push(`type = ${param(filter.type)}`);
  // Through jobs_owner_id (owner, id): the owner's jobs newest first, not the whole table.
  if (filter.owner !== undefined) where.push(`owner = ${param(filter.owner)}`);
  // An inclusive upper bound on BIGINT ms: rounded down, so a fractional bound never admits a later job.
  if (filter.createdBefore !== undefined)
    where.push(`created_at <= ${param(Math.floor(filter.createdBefore))}`);
  if (filter.beforeId !== undefined) where.push(`id < ${param(filter.beforeId)}`);
  const requested = filter.limit ?? LIST_DEFAULT_LIMIT;
  const limit = Number.isNaN(requested)
    ? LIST_DEFAULT_LIMIT
    : Math.min(Math.max(Math.floor(requested), 0), LIST_MAX_LIMIT);

  const result = await query<JobRow>(
    db.pool,
    `SELECT * FROM ${db.jobs}
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY id DESC
     LIMIT ${param(limit)}`,
    values,
  );
  return result.rows.map(toJob);
}
