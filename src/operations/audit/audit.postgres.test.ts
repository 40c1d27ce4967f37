import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { useCleanups } from '../../../test/support/cleanups.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../../test/support/postgres.js';
import { openStore } from '../../store/index.js';
import { auditLogSuite, type AuditColumn } from './test-support.js';

const COLUMNS: ReadonlySet<AuditColumn> = new Set(['body', 'prev_hash', 'hash']);

/**
 * The audit suite on the database in BREAKWATER_TEST_DATABASE_URL: a fresh schema per test; the edits go
 * through a raw `pg` client to the same table, bypassing the store.
 */
describePostgres('audit log tests')('audit log on PostgreSQL', () => {
  const schemas = testSchemas('bw_audit');
  const defer = useCleanups();
  let raw: pg.Client;

  beforeAll(async () => {
    raw = new pg.Client({ connectionString: url });
    await raw.connect();
  });
  afterAll(async () => {
    await raw.end();
  });

  auditLogSuite(
    async (clock) => {
      const schema = await schemas.create();
      defer(() => schemas.drop(schema));
      const store = await openStore({ url, clock, schema });
      defer(() => store.close());
      return {
        store,
        async edit(seq, column, value) {
          if (!COLUMNS.has(column)) throw new Error(`no column ${column}`);
          // body is bytea (its UTF-8 bytes); the hashes are text.
          const stored = column === 'body' ? Buffer.from(value, 'utf8') : value;
          await raw.query(`UPDATE ${schema}.audit_log SET ${column} = $1 WHERE seq = $2`, [stored, seq]);
        },
        async remove(seq) {
          await raw.query(`DELETE FROM ${schema}.audit_log WHERE seq = $1`, [seq]);
        },
      };
    },
    // Every byte of the middle record (the SQLite suite edits every record).
    { everyRecord: false },
  );
});
