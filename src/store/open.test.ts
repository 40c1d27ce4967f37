import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, storeTarget } from './open.js';

describe('storeTarget', () => {
  it('defaults to SQLite under ./data', () => {
    expect(storeTarget(undefined)).toEqual({
      backend: 'sqlite',
      location: './data/breakwater.db',
      display: './data/breakwater.db',
    });
    expect(storeTarget('  ').location).toBe('./data/breakwater.db');
  });

  it('reads sqlite:, file: and plain paths', () => {
    expect(storeTarget('sqlite:/var/lib/bw.db').location).toBe('/var/lib/bw.db');
    expect(storeTarget('sqlite://rel/bw.db').location).toBe('rel/bw.db');
    expect(storeTarget('file:x.db').location).toBe('x.db');
    expect(storeTarget('data/a.db')).toEqual({
      backend: 'sqlite',
      location: 'data/a.db',
      display: 'data/a.db',
    });
    expect(storeTarget(':memory:').location).toBe(':memory:');
  });

  it('selects PostgreSQL for postgres:// and postgresql:// and masks the password for display', () => {
    const target = storeTarget('postgresql://app:s3cret@db.internal:5432/bw');
    expect(target).toEqual({
      backend: 'postgres',
      location: 'postgresql://app:s3cret@db.internal:5432/bw',
      display: 'postgresql://app:***@db.internal:5432/bw',
    });
    expect(storeTarget('postgres://postgres@127.0.0.1/test').display).toBe(
      'postgres://postgres@127.0.0.1/test',
    );
  });

  it('rejects other schemes with a message naming the understood ones, without the password', () => {
    expect(() => storeTarget('mysql://root:pw@localhost/db')).toThrow(
      "openStore: url must be postgres://…, postgresql://…, sqlite:<path> or a file path, got 'mysql://root:***@localhost/db'",
    );
  });
});

describe('openStore', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('opens a working SQLite store at a sqlite: URL, creating its folder', async () => {
    dir = mkdtempSync(join(tmpdir(), 'bw-open-'));
    const store = await openStore({ url: `sqlite:${join(dir, 'nested', 'bw.db')}` });
    try {
      const { job } = await store.enqueue({
        type: 'noop',
        payload: { a: 1 },
        maxAttempts: 1,
        runAt: Date.now(),
        priority: 0,
      });
      expect((await store.get(job.id))?.payload).toEqual({ a: 1 });
    } finally {
      await store.close();
    }
  });
});
