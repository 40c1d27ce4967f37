import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate } from './migrate.js';

const NOW = 1_700_000_000_000;

/** The migrations up to 8, whatever later ones exist. */
const UP_TO_8 = MIGRATIONS.filter((m) => m.version <= 8);

/** Every row of a table, in a stable order (rowid included for tables that have one). */
function rows(db: Database.Database, sql: string): unknown[] {
  return db.prepare(sql).all();
}

describe('SQLite migration 8 (jobs rebuilt)', () => {
  let dir: string;
  let db: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-migrate-'));
    db = new Database(join(dir, 'jobs.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
  });

  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A version-7 file with a job in each status, keyed and inbox jobs, events and a webhook delivery. */
  function seedVersion7(): void {
    expect(migrate(db, NOW, MIGRATIONS.slice(0, 7))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const insert = db.prepare(
      `INSERT INTO jobs (id, type, status, payload, result, error, attempts, max_attempts, run_at, priority,
                         idempotency_key, timeout_ms, lease_owner, lease_token, lease_expires_at,
                         cancel_requested_at, created_at, updated_at, finished_at, next_seq, ordering_key,
                         inbox_source)
       VALUES (@id, @type, @status, @payload, @result, @error, @attempts, 3, @runAt, @priority, @idempotencyKey,
               @timeoutMs, @leaseOwner, @leaseToken, @leaseExpiresAt, @cancelRequestedAt, @now, @now,
               @finishedAt, @nextSeq, @orderingKey, @inboxSource)`,
    );
    const job = (fields: Record<string, unknown>) =>
      insert.run({
        type: 'mail',
        payload: '{}',
        result: null,
        error: null,
        attempts: 0,
        runAt: NOW,
        priority: 0,
        idempotencyKey: null,
        timeoutMs: null,
        leaseOwner: null,
        leaseToken: 0,
        leaseExpiresAt: null,
        cancelRequestedAt: null,
        now: NOW,
        finishedAt: null,
        nextSeq: 1,
        orderingKey: null,
        inboxSource: null,
        ...fields,
      });
    job({
      id: 'j1',
      status: 'pending',
      payload: '{"to":"ada"}',
      priority: 5,
      idempotencyKey: 'k1',
      orderingKey: 'order-1',
    });
    job({
      id: 'j2',
      status: 'in_progress',
      attempts: 1,
      timeoutMs: 60_000,
      leaseOwner: 'w1',
      leaseToken: 1,
      leaseExpiresAt: NOW + 30_000,
      nextSeq: 2,
      orderingKey: 'order-1',
    });
    job({
      id: 'j3',
      type: 'hook',
      status: 'completed',
      payload: '{"a":1.50}',
      result: '{"ok":true}',
      attempts: 1,
      leaseToken: 1,
      finishedAt: NOW + 5,
      nextSeq: 3,
      inboxSource: 'stripe',
    });
    job({
      id: 'j4',
      status: 'failed',
      payload: 'null',
      error: '{"code":"boom"}',
      attempts: 3,
      leaseToken: 3,
      finishedAt: NOW + 9,
      nextSeq: 7,
    });
    job({ id: 'j5', status: 'canceled', payload: '[]', cancelRequestedAt: NOW + 1, finishedAt: NOW + 1 });
    const event = db.prepare(
      'INSERT INTO job_events (job_id, seq, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)',
    );
    event.run('j2', 1, 'job.started', NOW, '{"attempt":1}');
    event.run('j3', 1, 'job.started', NOW, '{"attempt":1}');
    event.run('j3', 2, 'job.completed', NOW + 5, '{"result":{"ok":true}}');
    db.prepare(
      `INSERT INTO webhook_inbox (id, source, event_id, event_type, received_at, occurred_at, body, job_id)
       VALUES ('w1', 'stripe', 'evt_1', 'payment_intent.succeeded', ?, ?, '{"id":"evt_1"}', 'j3')`,
    ).run(NOW, NOW - 10);
  }

  const TABLES = {
    jobs: 'SELECT rowid AS _rowid, * FROM jobs ORDER BY id',
    events: 'SELECT * FROM job_events ORDER BY job_id, seq',
    inbox: 'SELECT * FROM webhook_inbox ORDER BY id',
  };

  it('keeps every job, event and delivery as it was, and the foreign keys and checks still hold', () => {
    seedVersion7();
    const before = Object.fromEntries(Object.entries(TABLES).map(([name, sql]) => [name, rows(db, sql)]));
    expect((before.jobs as unknown[]).length).toBe(5);

    expect(migrate(db, NOW, UP_TO_8)).toEqual([8]);

    for (const [name, sql] of Object.entries(TABLES)) expect(rows(db, sql)).toEqual(before[name]);
    expect(
      db
        .prepare<[], { name: string }>(
          "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL ORDER BY name",
        )
        .all()
        .map((row) => row.name),
    ).toEqual([
      'jobs_claim',
      'jobs_failed_canceled',
      'jobs_idempotency',
      'jobs_inbox_backlog',
      'jobs_lease',
      'jobs_ordering',
      'jobs_ordering_running',
      'jobs_run_at',
      'jobs_type_id',
    ]);
    // migrate() turned foreign keys off for the rebuild and back on after.
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(() =>
      db.prepare("INSERT INTO job_events (job_id, seq, type, timestamp) VALUES ('nope', 1, 'x', 0)").run(),
    ).toThrow(/FOREIGN KEY/);
    expect(() => db.prepare("UPDATE jobs SET status = 'lost' WHERE id = 'j1'").run()).toThrow(/CHECK/);
    // The cascade from jobs to their events survived the rename.
    db.prepare("DELETE FROM webhook_inbox WHERE job_id = 'j3'").run();
    db.prepare("DELETE FROM jobs WHERE id = 'j3'").run();
    expect(rows(db, "SELECT * FROM job_events WHERE job_id = 'j3'")).toEqual([]);
    // A second run applies nothing.
    expect(migrate(db, NOW, UP_TO_8)).toEqual([]);
  });

  it('a migration that breaks a foreign key rolls back every migration of that open', () => {
    seedVersion7();
    const broken = [
      ...MIGRATIONS,
      { version: 99, name: 'orphan event', sql: "INSERT INTO job_events VALUES ('nope', 1, 'x', 0, NULL)" },
    ];
    expect(() => migrate(db, NOW, broken)).toThrow(/broke a foreign key/);
    expect(rows(db, 'SELECT version FROM schema_migrations ORDER BY version')).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((version) => ({ version })),
    );
    expect(rows(db, "SELECT count(*) AS n FROM sqlite_schema WHERE name = 'jobs_failed_canceled'")).toEqual([
      { n: 0 },
    ]);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
  });

  it('writing a job status builds no ephemeral table (an IN list of more than two constants would)', () => {
    migrate(db, NOW);
    for (const sql of [
      "UPDATE jobs SET status = 'in_progress' WHERE rowid = ?",
      "UPDATE jobs SET status = 'completed' WHERE rowid = ?",
      `INSERT INTO jobs (id, type, status, max_attempts, run_at, created_at, updated_at)
       VALUES (?, 'x', 'pending', 1, 0, 0, 0)`,
    ]) {
      const opcodes = db
        .prepare<[number], { opcode: string }>(`EXPLAIN ${sql}`)
        .all(1)
        .map((op) => op.opcode);
      expect(opcodes).toContain('Halt');
      expect(opcodes).not.toContain('OpenEphemeral');
    }
  });
});

describe('SQLite migration 10 (api keys and admin sessions) and versions added out of order', () => {
  let dir: string;
  let db: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-migrate-'));
    db = new Database(join(dir, 'jobs.db'));
  });

  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tables = () =>
    db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('api_keys', 'admin_sessions') ORDER BY name",
      )
      .all()
      .map((row) => row.name);

  it('applies on a version-8 file and creates both tables with their indexes', () => {
    expect(migrate(db, NOW, UP_TO_8)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(tables()).toEqual([]);
    expect(migrate(db, NOW)).toContain(10);
    expect(tables()).toEqual(['admin_sessions', 'api_keys']);
    expect(
      db
        .prepare<[], { name: string }>(
          "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('api_keys', 'admin_sessions') AND sql IS NOT NULL ORDER BY name",
        )
        .all()
        .map((row) => row.name),
    ).toEqual([
      'admin_sessions_expires_at',
      'admin_sessions_principal',
      'api_keys_created',
      'api_keys_unrevoked',
    ]);
    expect(migrate(db, NOW)).toEqual([]);
  });

  it('a version numbered below one already applied is still applied, once', () => {
    // As a file migrated by a build that had 10 but not 9, opened by one that has both.
    const later = { version: 1001, name: 'later', sql: 'CREATE TABLE later (x INTEGER)' };
    const missed = { version: 1000, name: 'missed', sql: 'CREATE TABLE missed (x INTEGER)' };
    expect(migrate(db, NOW, [...MIGRATIONS, later])).toContain(1001);
    expect(migrate(db, NOW, [...MIGRATIONS, later, missed])).toEqual([1000]);
    expect(migrate(db, NOW, [...MIGRATIONS, later, missed])).toEqual([]);
  });

  it('a file with a version this code does not know is refused, nothing applied', () => {
    const newer = { version: 99, name: 'newer', sql: 'CREATE TABLE newer (x INTEGER)' };
    migrate(db, NOW, [...UP_TO_8, newer]);
    expect(() => migrate(db, NOW)).toThrow(
      'SQLite job store: the database has schema version(s) 99, unknown to this version of Breakwater',
    );
    expect(tables()).toEqual([]);
  });
});

describe('SQLite migration 9 (owners of jobs and operations)', () => {
  let db: Database.Database;

  beforeEach(() => {
    db = new Database(':memory:');
  });

  afterEach(() => db.close());

  it('adds owner (NULL on every existing job and operation) and the (owner, id) indexes', () => {
    expect(migrate(db, NOW, MIGRATIONS.slice(0, 8))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    db.prepare(
      `INSERT INTO jobs (id, type, status, max_attempts, run_at, created_at, updated_at)
       VALUES ('j1', 'mail', 'pending', 1, 0, 0, 0)`,
    ).run();
    db.prepare(
      `INSERT INTO operations (id, action, target, request, correlation_id, retry_allowed, state,
                               recovery_deadline_at, created_at, updated_at)
       VALUES ('op1', 'commerce.create_order', 'POST /orders', '{}', 'op1', 0, 'pending', 0, 0, 0)`,
    ).run();
    const jobsBefore = rows(db, 'SELECT * FROM jobs');
    const operationsBefore = rows(db, 'SELECT * FROM operations');

    const upTo11 = MIGRATIONS.filter((m) => m.version <= 11);
    expect(migrate(db, NOW, upTo11)).toEqual([9, 10, 11]);

    expect(rows(db, 'SELECT * FROM jobs')).toEqual(
      (jobsBefore as object[]).map((row) => ({ ...row, owner: null })),
    );
    expect(rows(db, 'SELECT * FROM operations')).toEqual(
      (operationsBefore as object[]).map((row) => ({ ...row, owner: null })),
    );
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('key:a') as { detail: string }[]).map((r) => r.detail);
    expect(plan('SELECT id FROM jobs WHERE owner = ? ORDER BY id DESC LIMIT 10')).toEqual([
      'SEARCH jobs USING COVERING INDEX jobs_owner_id (owner=?)',
    ]);
    expect(plan('SELECT id FROM operations WHERE owner = ? ORDER BY id DESC LIMIT 10')).toEqual([
      'SEARCH operations USING COVERING INDEX operations_owner_id (owner=?)',
    ]);
    expect(migrate(db, NOW, upTo11)).toEqual([]);
  });
});
