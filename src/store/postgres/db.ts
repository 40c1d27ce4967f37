import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Clock } from '../../core/index.js';

/**
 * What every operation file needs: the pool, the schema-qualified table names and the clock. Plumbing of
 * `store/postgres`, not exported from the store's public face.
 */
export interface Db {
  readonly pool: pg.Pool;
  /** `"schema".jobs`, quoted and qualified: the schema is a per-deployment (or per-test-suite) option. */
  readonly jobs: string;
  /** `"schema".job_events`. */
  readonly events: string;
  /** `"schema".job_watchers` (see `watchEvents`). */
  readonly watchers: string;
  /** `"schema".claim_jobs`, the claim function (see `claim`). */
  readonly claimJobs: string;
  readonly clock: Clock;
}

/** `name` as a quoted SQL identifier (`"a""b"` for `a"b`). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Runs `fn` inside BEGIN … COMMIT on one pooled client, rolling back when it throws. A client whose ROLLBACK
 * failed (a dropped connection) is destroyed rather than returned to the pool in an unknown state.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * A time or duration in ms as a BIGINT parameter. Clocks give whole ms, but a computed time (a backoff with
 * jitter) may carry a fraction, which BIGINT would refuse: it is rounded up, so a job never becomes due early.
 */
export function ms(value: number): number {
  return Math.ceil(value);
}

/**
 * A JSON value as a `jsonb` parameter. Always stringified here: node-postgres would turn a JS array into a
 * Postgres array literal, and `undefined` into SQL NULL rather than JSON `null`.
 */
export function json(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

/** OID of BIGINT (`int8`): `count(*)` and every ms column. */
const INT8_OID = 20;

/**
 * Type parsers for this store's connections only (never the process-wide `pg.types`, which other code may
 * rely on): BIGINT comes back as a number, since every BIGINT here is a ms time (< 2^53) or a count.
 * JSONB is parsed by node-postgres' default parser.
 */
export const storeTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** Statement names by SQL text (see {@link query}). */
const statementNames = new Map<string, string>();

/** SQLSTATE of "cached plan must not change result type" (feature_not_supported). */
const FEATURE_NOT_SUPPORTED = '0A000';

/**
 * Runs `text` as a named prepared statement: each pooled connection parses and plans it once, then only
 * binds and runs it (for the job statements, planning cost as much as running). The name is a hash of the
 * text, so one text always has one name, whatever schema it was built for. When a migration of another
 * process changed a table a `SELECT *` or `RETURNING *` reads (a rolling upgrade), PostgreSQL refuses the
 * old plan once: the statement is then run unprepared, which plans it afresh.
 */
export async function query<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `bw_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  try {
    return await pool.query<R>({ name, text, values });
  } catch (error) {
    if ((error as { code?: unknown }).code !== FEATURE_NOT_SUPPORTED) throw error;
    return pool.query<R>(text, values);
  }
}
