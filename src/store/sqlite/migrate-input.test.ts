import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate } from './migrate.js';

const NOW = 1_700_000_000_000;

describe('SQLite migration 12 (jobs rebuilt for input_required)', () => {
  let db: Database.Database;

  beforeEach(() => {
    db = new Database(':memory:');
    db.pragma('foreign_keys = ON');
  });

  afterEach(() => db.close());

  const indexes = () =>
    db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL ORDER BY name",
      )
      .all()
      .map((row) => row.name);

  it('keeps every job, event and delivery, adds the input columns (NULL) and the waiting index', () => {
    expect(
      migrate(
        db,
        NOW,
        MIGRATIONS.filter((m) => m.version <= 11),
      ),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const before11 = indexes();
    const insert = db.prepare<[string, string, string | null]>(
      `INSERT INTO jobs (id, type, status, max_attempts, run_at, created_at, updated_at, owner, ordering_key)
       VALUES (?, 'mail', ?, 3, 0, 0, 0, ?, 'order-1')`,
    );
    for (const [i, status] of ['pending', 'in_progress', 'completed', 'failed', 'canceled'].entries()) {
      insert.run(`j${i}`, status, i % 2 === 0 ? `key:k${i}` : null);
    }
    db.prepare("INSERT INTO job_events VALUES ('j0', 1, 'job.started', 0, '{}')").run();
    db.prepare(
      `INSERT INTO webhook_inbox (id, source, event_id, event_type, received_at, body, job_id)
       VALUES ('d1', 'shop', 'e1', 'order.paid', 0, '{}', 'j2')`,
    ).run();
    const jobsBefore = db.prepare('SELECT rowid, * FROM jobs ORDER BY rowid').all() as object[];

    expect(migrate(db, NOW)).toEqual([12]);

    expect(db.prepare('SELECT rowid, * FROM jobs ORDER BY rowid').all()).toEqual(
      jobsBefore.map((row) => ({ ...row, input: null, input_deadline_at: null })),
    );
    expect(db.prepare('SELECT job_id, seq FROM job_events').all()).toEqual([{ job_id: 'j0', seq: 1 }]);
    expect(db.prepare('SELECT job_id FROM webhook_inbox').all()).toEqual([{ job_id: 'j2' }]);
    expect(indexes()).toEqual([...before11, 'jobs_input_required'].sort());
    expect(db.prepare('PRAGMA foreign_key_check').all()).toEqual([]);

    // The new status is allowed, an unknown one still refused.
    db.prepare("UPDATE jobs SET status = 'input_required' WHERE id = 'j0'").run();
    expect(() => db.prepare("UPDATE jobs SET status = 'waiting' WHERE id = 'j0'").run()).toThrow(
      'CHECK constraint failed',
    );
    expect(migrate(db, NOW)).toEqual([]);
  });
});
