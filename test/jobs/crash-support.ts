/**
 * Shared by crash.test.ts and crash-worker.ts (not a test file): where the store lives, what the worker
 * process is told and answers, and the crash job's side effect.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type JobStore } from '../../src/store/index.js';

/** The job type of the crash test. */
export const CRASH_JOB = 'crash.charge';

/** Where the store lives: a SQLite file, or a PostgreSQL schema (created by the test). */
export type Backend = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema: string };

/** What crash-worker.ts does, given as its one argument (JSON). */
export type WorkerConfig =
  | { mode: 'run'; backend: Backend; owner: string; leaseMs: number }
  | { mode: 'enqueue'; backend: Backend; max: number };

/** The worker process's stdout, one JSON object per line. */
export type WorkerMessage =
  | { event: 'enqueued'; jobId: string; i: number }
  | { event: 'mid-job'; jobId: string; attempt: number; token: number; owner: string | null; pid: number };

export function openStore(backend: Backend): Promise<JobStore> {
  return backend.kind === 'sqlite'
    ? openSqliteStore({ path: backend.path })
    : openPostgresStore({ url: backend.url, schema: backend.schema });
}

/** A row of `side_effects`: which run of the job wrote it, from which process. */
export interface EffectRow {
  attempt: number;
  pid: number;
}

/**
 * The crash job's side effect, in the job store's own database: `side_effects` is keyed by job id (the
 * effect, written at most once per job however many times the handler runs), `handler_runs` is an
 * append-only log of handler runs (to show the handler did run twice).
 */
export interface SideEffects {
  logRun(jobId: string, attempt: number): Promise<void>;
  /** Writes the effect unless the job already has it; true when this call wrote it. */
  apply(jobId: string, attempt: number): Promise<boolean>;
  effects(jobId: string): Promise<EffectRow[]>;
  /** The attempts that ran the handler, in order. */
  runs(jobId: string): Promise<number[]>;
  close(): Promise<void>;
}

/** What the handler does in every run, before anything else: log the run, then the keyed side effect. */
export async function performSideEffect(
  effects: SideEffects,
  jobId: string,
  attempt: number,
): Promise<boolean> {
  await effects.logRun(jobId, attempt);
  return effects.apply(jobId, attempt);
}

export async function openSideEffects(backend: Backend): Promise<SideEffects> {
  return backend.kind === 'sqlite' ? sqliteSideEffects(backend.path) : postgresSideEffects(backend);
}

function sqliteSideEffects(path: string): SideEffects {
  const db = new Database(path, { timeout: 5_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS side_effects (job_id TEXT PRIMARY KEY, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS handler_runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
  `);
  const logRun = db.prepare('INSERT INTO handler_runs (job_id, attempt, pid) VALUES (?, ?, ?)');
  const apply = db.prepare(
    'INSERT INTO side_effects (job_id, attempt, pid) VALUES (?, ?, ?) ON CONFLICT (job_id) DO NOTHING',
  );
  const effects = db.prepare<[string], EffectRow>('SELECT attempt, pid FROM side_effects WHERE job_id = ?');
  const runs = db.prepare<[string], { attempt: number }>(
    'SELECT attempt FROM handler_runs WHERE job_id = ? ORDER BY rowid',
  );
  return {
    async logRun(jobId, attempt) {
      logRun.run(jobId, attempt, process.pid);
    },
    async apply(jobId, attempt) {
      return apply.run(jobId, attempt, process.pid).changes === 1;
    },
    async effects(jobId) {
      return effects.all(jobId);
    },
    async runs(jobId) {
      return runs.all(jobId).map((row) => row.attempt);
    },
    async close() {
      if (db.open) db.close();
    },
  };
}

async function postgresSideEffects(backend: { url: string; schema: string }): Promise<SideEffects> {
  if (!/^[a-z_][a-z0-9_]*$/.test(backend.schema)) throw new RangeError(`unexpected schema ${backend.schema}`);
  const s = `"${backend.schema}"`;
  const client = new pg.Client({ connectionString: backend.url });
  await client.connect();
  try {
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${s}.side_effects (job_id TEXT PRIMARY KEY, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS ${s}.handler_runs (
        id BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL
      );
    `);
  } catch (error) {
    await client.end();
    throw error;
  }
  let closed = false;
  return {
    async logRun(jobId, attempt) {
      await client.query(`INSERT INTO ${s}.handler_runs (job_id, attempt, pid) VALUES ($1, $2, $3)`, [
        jobId,
        attempt,
        process.pid,
      ]);
    },
    async apply(jobId, attempt) {
      const result = await client.query(
        `INSERT INTO ${s}.side_effects (job_id, attempt, pid) VALUES ($1, $2, $3) ON CONFLICT (job_id) DO NOTHING`,
        [jobId, attempt, process.pid],
      );
      return result.rowCount === 1;
    },
    async effects(jobId) {
      const result = await client.query<EffectRow>(
        `SELECT attempt, pid FROM ${s}.side_effects WHERE job_id = $1`,
        [jobId],
      );
      return result.rows;
    },
    async runs(jobId) {
      const result = await client.query<{ attempt: number }>(
        `SELECT attempt FROM ${s}.handler_runs WHERE job_id = $1 ORDER BY id`,
        [jobId],
      );
      return result.rows.map((row) => row.attempt);
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.end();
    },
  };
}
