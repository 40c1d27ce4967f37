import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { countersContract } from './counters-contract.js';
import { sqliteFacetBackend } from './facets-contract.js';
import { MIGRATIONS, migrate } from './sqlite/migrate.js';
import { openSqliteStore } from './sqlite/index.js';

countersContract('sqlite', sqliteFacetBackend('breakwater-counters'));

describe('SQLite counters and routes on an older file', () => {
  let folder: string;

  afterEach(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  it('a file at schema version 6 gains counters and routes (migration 7) and keeps its data', async () => {
    folder = mkdtempSync(join(tmpdir(), 'breakwater-counters-'));
    const clock = new FakeClock();
    const path = join(folder, 'store.db');
    const db = new Database(path);
    expect(migrate(db, clock.now(), MIGRATIONS.slice(0, 6))).toEqual([1, 2, 3, 4, 5, 6]);
    db.prepare(
      `INSERT INTO audit_log (seq, body, prev_hash, hash) VALUES (1, 'kept', '${'0'.repeat(64)}', 'h1')`,
    ).run();
    db.close();

    const store = await openSqliteStore({ path, clock, watchMs: 0 });
    try {
      expect((await store.audit.head())?.body).toBe('kept');
      expect(await store.counters.update('k', () => ({ state: { n: 1 }, expiresAt: null, result: 1 }))).toBe(
        1,
      );
      expect(await store.routes.revision()).toBe(0);
      expect((await store.routes.create('support', {})).version).toBe(1);
      expect(await store.routes.revision()).toBe(1);
    } finally {
      await store.close();
    }
  });
});
