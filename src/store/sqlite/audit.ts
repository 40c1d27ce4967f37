import { AUDIT_GENESIS_HASH, type AuditRecord, type AuditSealer, type AuditStore } from '../audit.js';
import { auditPage, checkSealed, sealerList } from '../checks.js';
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

const AUDIT_COLUMNS = 'seq, body, prev_hash AS prevHash, hash';

/**
 * Prepares `AuditStore.append`, a step of the group commit (`batch.ts`): reads the head and inserts one record
 * per sealer inside the batch's `BEGIN IMMEDIATE` transaction. The write lock is taken before the head is
 * read, so appenders of every connection and process on the file run one at a time: seqs are gapless and each
 * record's `prev_hash` is the hash of the record before it. Every sealer runs before the first insert, so a
 * sealer that throws, or returns a bad result, refuses the whole call with nothing written.
 */
export function prepareAppend(ctx: SqliteContext): (sealers: readonly AuditSealer[]) => AuditRecord[] {
  const head = ctx.db.prepare<[], { seq: number; hash: string }>(
    'SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1',
  );
  const insert = ctx.db.prepare<[number, string, string, string]>(
    'INSERT INTO audit_log (seq, body, prev_hash, hash) VALUES (?, ?, ?, ?)',
  );
  return (sealers: readonly AuditSealer[]): AuditRecord[] => {
    const last = head.get();
    let seq = last?.seq ?? 0;
    let prevHash = last?.hash ?? AUDIT_GENESIS_HASH;
    // Every sealer runs (and may refuse) before the first insert: a step must not throw once it has written.
    const records: AuditRecord[] = [];
    for (const sealer of sealers) {
      seq += 1;
      const { body, hash } = checkSealed(sealer(seq, prevHash), seq);
      records.push({ seq, body, prevHash, hash });
      prevHash = hash;
    }
    for (const record of records) insert.run(record.seq, record.body, record.prevHash, record.hash);
    return records;
  };
}

/** Prepares `read`: a range scan of the primary key. */
export function prepareRead(ctx: SqliteContext): (afterSeq: number, limit: number) => AuditRecord[] {
  const select = ctx.db.prepare<[number, number], AuditRecord>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?`,
  );
  return (afterSeq, limit) => select.all(afterSeq, limit);
}

/** Prepares `head`: the last entry of the primary key. */
export function prepareHead(ctx: SqliteContext): () => AuditRecord | undefined {
  const select = ctx.db.prepare<[], AuditRecord>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT 1`,
  );
  return () => select.get();
}

/**
 * `store.audit` on SQLite. `append` is group-committed: operations/ appends a record per attempt, outcome
 * and reconciliation, so a burst shares one fsync. The appends of a batch run in call order, each reading the
 * head the ones before it left, so the chain is the same as with one transaction per call; a sealer that
 * throws refuses its own append only.
 */
export class SqliteAuditStore implements AuditStore {
  private readonly appendTx: (sealers: readonly AuditSealer[]) => AuditRecord[];
  private readonly readStmt: (afterSeq: number, limit: number) => AuditRecord[];
  private readonly headStmt: () => AuditRecord | undefined;

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    this.appendTx = prepareAppend(ctx);
    this.readStmt = prepareRead(ctx);
    this.headStmt = prepareHead(ctx);
  }

  append(sealers: readonly AuditSealer[]): Promise<AuditRecord[]> {
    return this.runner.prepareThenBatch(() => sealerList(sealers), this.appendTx);
  }

  read(afterSeq?: number, limit?: number): Promise<AuditRecord[]> {
    return this.runner.read(() => {
      const page = auditPage(afterSeq, limit);
      return page.limit === 0 ? [] : this.readStmt(page.afterSeq, page.limit);
    });
  }

  head(): Promise<AuditRecord | undefined> {
    return this.runner.read(this.headStmt);
  }
}
