import { AUDIT_GENESIS_HASH, type AuditRecord, type AuditSealer, type AuditStore } from '../audit.js';
import { auditPage, checkSealed, sealerList } from '../checks.js';
import { withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** An `audit_log` row: BIGINT already a number, the body's bytea a Buffer. */
interface AuditRow {
  seq: number;
  body: Buffer;
  prev_hash: string;
  hash: string;
}

function toRecord(row: AuditRow): AuditRecord {
  return { seq: row.seq, body: row.body.toString('utf8'), prevHash: row.prev_hash, hash: row.hash };
}

/**
 * `store.audit` on PostgreSQL. The body is bytea (its UTF-8 bytes): text cannot hold a NUL character, and
 * the body must come back exactly as it was hashed.
 */
export class PostgresAuditStore implements AuditStore {
  private readonly log: string;
  /** Key of the transaction-scoped advisory lock that serializes appends to this schema's chain. */
  private readonly lockKey: string;

  constructor(private readonly runner: PgRunner) {
    this.log = runner.table('audit_log');
    this.lockKey = `breakwater:audit:${runner.schema}`;
  }

  /**
   * One transaction: first a transaction-scoped advisory lock keyed by the schema, so appenders of every
   * pool and process queue here and run one at a time (held until COMMIT or ROLLBACK); then the head is read,
   * in a statement that starts after the previous holder committed, so it sees that holder's records; then
   * the sealers are called in order and all records inserted in one statement. seq is thus gapless and every
   * `prev_hash` is the hash of the record before it; a sealer that throws rolls everything back. (A sequence
   * or an identity would not do: a value is consumed even by a rolled-back append, and a later value may
   * commit first.)
   */
  append(sealers: readonly AuditSealer[]): Promise<AuditRecord[]> {
    return this.runner.run(async () => {
      const list = sealerList(sealers);
      if (list.length === 0) return [];
      return withTransaction(this.runner.pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.lockKey]);
        const head = await client.query<{ seq: number; hash: string }>(
          `SELECT seq, hash FROM ${this.log} ORDER BY seq DESC LIMIT 1`,
        );
        let seq = head.rows[0]?.seq ?? 0;
        let prevHash = head.rows[0]?.hash ?? AUDIT_GENESIS_HASH;
        const records: AuditRecord[] = [];
        for (const sealer of list) {
          seq += 1;
          const { body, hash } = checkSealed(sealer(seq, prevHash), seq);
          records.push({ seq, body, prevHash, hash });
          prevHash = hash;
        }
        await client.query(
          `INSERT INTO ${this.log} (seq, body, prev_hash, hash)
           SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::text[], $4::text[])`,
          [
            records.map((r) => r.seq),
            records.map((r) => Buffer.from(r.body, 'utf8')),
            records.map((r) => r.prevHash),
            records.map((r) => r.hash),
          ],
        );
        return records;
      });
    });
  }

  /** A range scan of the primary key. */
  read(afterSeq?: number, limit?: number): Promise<AuditRecord[]> {
    return this.runner.run(async () => {
      const page = auditPage(afterSeq, limit);
      if (page.limit === 0) return [];
      const result = await this.runner.pool.query<AuditRow>(
        `SELECT seq, body, prev_hash, hash FROM ${this.log} WHERE seq > $1 ORDER BY seq LIMIT $2`,
        [page.afterSeq, page.limit],
      );
      return result.rows.map(toRecord);
    });
  }

  /** The last entry of the primary key. */
  head(): Promise<AuditRecord | undefined> {
    return this.runner.run(async () => {
      const result = await this.runner.pool.query<AuditRow>(
        `SELECT seq, body, prev_hash, hash FROM ${this.log} ORDER BY seq DESC LIMIT 1`,
      );
      const row = result.rows[0];
      return row === undefined ? undefined : toRecord(row);
    });
  }
}
