/**
 * What the soak bench measures, read from outside the gateway: the store's size on disk and the rows of its
 * prunable tables and of the audit log (a read-only SQLite connection, or a PostgreSQL client), and a
 * process's resident memory (Linux's /proc).
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';

/** The tables retention prunes, as the store names them on both backends. */
export const PRUNABLE_TABLES = [
  'jobs',
  'job_events',
  'webhook_inbox',
  'stream_events',
  'idempotency_records',
  'operations',
] as const;
export type PrunableTable = (typeof PRUNABLE_TABLES)[number];

/** One reading of the store. */
export interface StoreReading {
  /** Bytes on disk: SQLite, the file and its WAL; PostgreSQL, `pg_total_relation_size` over the schema's tables. */
  bytes: number;
  /** SQLite: the part of {@link bytes} that is the write-ahead log (0 on PostgreSQL, whose WAL is the server's). */
  walBytes: number;
  /** Bytes of the prunable tables alone (with their indexes; SQLite: their pages, from `dbstat`). */
  prunableBytes: number;
  /** Rows per prunable table. */
  rows: Record<PrunableTable, number>;
  /** Jobs not finished (`pending` or `in_progress`): the worker's backlog. */
  backlog: number;
  /** Records of the audit log, and its bytes with its indexes. */
  auditRows: number;
  auditBytes: number;
}

export interface StoreProbe {
  read(): Promise<StoreReading>;
  /** Bytes per table and index (SQLite: pages from `dbstat`; PostgreSQL: `pg_relation_size`, TOAST apart). */
  relations(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

type SqliteDb = {
  prepare(sql: string): { get(...params: unknown[]): unknown };
  close(): void;
};
type SqliteCtor = new (path: string, options: { readonly: boolean; fileMustExist: boolean }) => SqliteDb;

/** Reads the SQLite store at `path` through a read-only connection of its own. */
export function sqliteProbe(path: string): StoreProbe {
  const Database = createRequire(import.meta.url)('better-sqlite3') as SqliteCtor;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const count = (table: string) =>
    (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  // The pages of a table and its indexes (`dbstat`: compiled into better-sqlite3's SQLite).
  const pagesOf = db.prepare(
    `SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat
      WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?)`,
  );
  const bytesOf = (table: string) => (pagesOf.get(table) as { n: number }).n;
  const size = (file: string) => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  return {
    read: async () => {
      const rows = Object.fromEntries(PRUNABLE_TABLES.map((t) => [t, count(t)])) as StoreReading['rows'];
      const backlog = (
        db.prepare(`SELECT count(*) AS n FROM jobs WHERE status IN ('pending', 'in_progress')`).get() as {
          n: number;
        }
      ).n;
      const walBytes = size(`${path}-wal`);
      return {
        bytes: size(path) + walBytes,
        walBytes,
        prunableBytes: PRUNABLE_TABLES.reduce((sum, t) => sum + bytesOf(t), 0),
        rows,
        backlog,
        auditRows: count('audit_log'),
        auditBytes: bytesOf('audit_log'),
      };
    },
    relations: async () => {
      const rows = db.prepare(`SELECT json_group_object(name, n) AS j FROM
        (SELECT name, sum(pgsize) AS n FROM dbstat GROUP BY name)`);
      return JSON.parse((rows.get() as { j: string }).j) as Record<string, number>;
    },
    close: async () => db.close(),
  };
}

/** Reads the PostgreSQL store in `schema` at `url`, each reading one statement (one snapshot). */
export async function postgresProbe(url: string, schema: string): Promise<StoreProbe> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const table = (name: string) => `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`;
  const sizeOf = (name: string) => `pg_total_relation_size(${client.escapeLiteral(table(name))}::regclass)`;
  const sql = `SELECT
      ${PRUNABLE_TABLES.map((t) => `(SELECT count(*) FROM ${table(t)})::bigint AS "${t}"`).join(',\n      ')},
      (${PRUNABLE_TABLES.map(sizeOf).join(' + ')})::bigint AS prunable_bytes,
      (SELECT count(*) FROM ${table('jobs')} WHERE status IN ('pending', 'in_progress'))::bigint AS backlog,
      (SELECT count(*) FROM ${table('audit_log')})::bigint AS audit_rows,
      ${sizeOf('audit_log')}::bigint AS audit_bytes,
      (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r')::bigint AS bytes`;
  return {
    read: async () => {
      const row = (await client.query<Record<string, string>>(sql, [schema])).rows[0]!;
      const rows = Object.fromEntries(
        PRUNABLE_TABLES.map((t) => [t, Number(row[t])]),
      ) as StoreReading['rows'];
      return {
        bytes: Number(row['bytes']),
        walBytes: 0,
        prunableBytes: Number(row['prunable_bytes']),
        rows,
        backlog: Number(row['backlog']),
        auditRows: Number(row['audit_rows']),
        auditBytes: Number(row['audit_bytes']),
      };
    },
    relations: async () => {
      const { rows } = await client.query<{ name: string; n: string }>(
        `SELECT c.relname AS name, pg_relation_size(c.oid) AS n FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'i')`,
        [schema],
      );
      return Object.fromEntries(rows.map((row) => [row.name, Number(row.n)]));
    },
    close: () => client.end(),
  };
}

/** The resident set size of process `pid` in bytes (`VmRSS` in /proc), or NaN when it cannot be read. */
export function rssOf(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? NaN : Number(match[1]) * 1024;
  } catch {
    return NaN;
  }
}
