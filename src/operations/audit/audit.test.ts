import Database from 'better-sqlite3';
import { describe } from 'vitest';
import { useCleanups, tempDb } from '../../../test/support/cleanups.js';
import { openStore } from '../../store/index.js';
import { auditLogSuite, type AuditColumn } from './test-support.js';

const COLUMNS: ReadonlySet<AuditColumn> = new Set(['body', 'prev_hash', 'hash']);

describe('audit log on SQLite', () => {
  const defer = useCleanups();
  auditLogSuite(
    async (clock) => {
      const path = tempDb(defer, 'breakwater-audit');
      const store = await openStore({ url: path, clock });
      defer(() => store.close());
      // A second connection to the same file: the edits bypass the store, as an attacker's would.
      const raw = new Database(path);
      defer(() => raw.close());
      return {
        store,
        async edit(seq, column, value) {
          if (!COLUMNS.has(column)) throw new Error(`no column ${column}`);
          raw.prepare(`UPDATE audit_log SET ${column} = ? WHERE seq = ?`).run(value, seq);
        },
        async remove(seq) {
          raw.prepare('DELETE FROM audit_log WHERE seq = ?').run(seq);
        },
      };
    },
    { everyRecord: true },
  );
});
