/**
 * The audit log suite, run on every backend (SQLite in `audit.test.ts`, PostgreSQL in
 * `audit.postgres.test.ts`): a chain written through `createAuditLog` to the real store verifies, and an edit
 * of any one byte of a stored record, made directly in the database, is named by `verifyAudit`.
 */
import { createHash, createHmac } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, type BreakwaterError } from '../../core/index.js';
import { AUDIT_GENESIS_HASH, type AuditSealer, type AuditStore, type Store } from '../../store/index.js';
import { createAuditLog, type AuditEntry } from './log.js';
import { verifyAudit } from './verify.js';

/** A stored column a test may edit. */
export type AuditColumn = 'body' | 'prev_hash' | 'hash';

/** A store opened for one test, with a raw connection to the same database. */
export interface AuditFixture {
  store: Store;
  /** Sets `column` of record `seq` to `value`, bypassing the store (an attacker with database access). */
  edit(seq: number, column: AuditColumn, value: string): Promise<void>;
  /** Deletes record `seq` directly. */
  remove(seq: number): Promise<void>;
}

const KEY = 'k'.repeat(32);
const START = Date.UTC(2025, 0, 1);

/** An entry with some data (ASCII only, so one character is one byte of the stored text). */
function entry(i: number): AuditEntry {
  return {
    actor: `client-${i % 3}`,
    action: i % 2 === 0 ? 'operation.attempt' : 'operation.outcome',
    target: `order/${i}`,
    operationId: `op_${i}`,
    correlationId: `corr_${i}`,
    data: { attempt: i, status: 201, headers: { authorization: 'Bearer secret' } },
  };
}

/** `text` with the character at `i` changed to another printable one. */
function flip(text: string, i: number): string {
  const code = text.charCodeAt(i);
  const other = code === 0x7e ? 0x7d : code ^ 1;
  return text.slice(0, i) + String.fromCharCode(other) + text.slice(i + 1);
}

/** A wrapper of the real audit store that counts `append` calls. */
function counting(audit: AuditStore): { store: AuditStore; appends: number[] } {
  const appends: number[] = [];
  return {
    appends,
    store: {
      append: (sealers: readonly AuditSealer[]) => {
        appends.push(sealers.length);
        return audit.append(sealers);
      },
      read: (afterSeq, limit) => audit.read(afterSeq, limit),
      head: () => audit.head(),
    },
  };
}

/** Registers the audit suite; `open` gets a fresh, empty store per test (closed by the caller's cleanup). */
export function auditLogSuite(
  open: (clock: FakeClock) => Promise<AuditFixture>,
  options: { everyRecord: boolean },
): void {
  let clock: FakeClock;
  let fixture: AuditFixture;

  beforeEach(async () => {
    clock = new FakeClock(START);
    fixture = await open(clock);
  });

  async function writeChain(n: number, hmacKey?: string): Promise<void> {
    const log = createAuditLog({
      store: fixture.store.audit,
      clock,
      ...(hmacKey === undefined ? {} : { hmacKey }),
    });
    for (let i = 1; i <= n; i++) {
      clock.tick(1000);
      await log.record(entry(i));
    }
  }

  describe('writing', () => {
    it('stores the canonical JSON body, redacted, hashed over prev_hash then body', async () => {
      const log = createAuditLog({ store: fixture.store.audit, clock });
      const first = await log.record({
        actor: 'ada',
        action: 'admin.login',
        target: 'console',
        data: { password: 'hunter2', card: '4242 4242 4242 4242', note: 'Bearer abc' },
      });
      const body =
        '{"action":"admin.login","actor":"ada","at":1735689600000,"correlation_id":null,' +
        '"data":{"card":"**** **** **** 4242","note":"Bearer [redacted]","password":"[redacted]"},' +
        '"operation_id":null,"seq":1,"target":"console","v":1}';
      expect(first).toEqual({
        seq: 1,
        body,
        prevHash: AUDIT_GENESIS_HASH,
        hash: createHash('sha256')
          .update(AUDIT_GENESIS_HASH + body)
          .digest('hex'),
      });
      const second = await log.record({
        actor: 'ada',
        action: 'admin.logout',
        target: 'console',
        operationId: 'op_1',
      });
      expect(second.prevHash).toBe(first.hash);
      expect(await fixture.store.audit.read()).toEqual([first, second]);
    });

    it('keys the hash with HMAC-SHA-256 when given a key', async () => {
      const log = createAuditLog({ store: fixture.store.audit, clock, hmacKey: KEY });
      const record = await log.record({ actor: 'a', action: 'b', target: 'c' });
      expect(record.hash).toBe(
        createHmac('sha256', KEY)
          .update(AUDIT_GENESIS_HASH + record.body)
          .digest('hex'),
      );
    });

    it('puts the records of one turn into one append, in call order', async () => {
      const wrapped = counting(fixture.store.audit);
      const log = createAuditLog({ store: wrapped.store, clock });
      const records = await Promise.all(Array.from({ length: 10 }, (_, i) => log.record(entry(i + 1))));
      expect(wrapped.appends).toEqual([10]);
      expect(records.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      const stored = await fixture.store.audit.read();
      expect(stored.map((r) => [r.seq, (JSON.parse(r.body) as { target: string }).target])).toEqual(
        records.map((_, i) => [i + 1, `order/${i + 1}`]),
      );
      // Records awaited one by one are separate turns: one append each.
      await log.record(entry(11));
      await log.record(entry(12));
      expect(wrapped.appends).toEqual([10, 1, 1]);
      expect(await verifyAudit(fixture.store.audit)).toMatchObject({ ok: true, records: 12, headSeq: 12 });
    });

    it('rejects a bad entry alone; the rest of its turn is stored', async () => {
      const log = createAuditLog({ store: fixture.store.audit, clock });
      const results = await Promise.allSettled([
        log.record(entry(1)),
        log.record({ actor: '', action: 'x', target: 'y' }),
        log.record({ actor: 'a', action: 'x', target: 'y', data: { n: 1n } }),
        log.record(entry(2)),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      const reasons = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
      expect(reasons[0]).toBeInstanceOf(RangeError);
      expect(reasons[0]!.message).toBe("audit.record: actor must be a non-empty string, got ''");
      expect((reasons[1] as BreakwaterError).code).toBe('invalid_payload');
      expect((await fixture.store.audit.read()).map((r) => r.seq)).toEqual([1, 2]);
    });
    it('keeps one chain when two writers append at once', async () => {
      const a = createAuditLog({ store: fixture.store.audit, clock });
      const b = createAuditLog({ store: fixture.store.audit, clock });
      await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).record(entry(i + 1))));
      expect(await verifyAudit(fixture.store.audit, { pageSize: 16 })).toMatchObject({
        ok: true,
        records: 40,
      });
    });

    it('flush waits for every record asked for', async () => {
      const log = createAuditLog({ store: fixture.store.audit, clock });
      void log.record(entry(1));
      void log.record(entry(2));
      await log.flush();
      expect((await fixture.store.audit.read()).map((r) => r.seq)).toEqual([1, 2]);
      await log.flush();
    });

    it('rejects every record of an append the store refuses', async () => {
      const log = createAuditLog({ store: fixture.store.audit, clock });
      await fixture.store.close();
      const results = await Promise.allSettled([log.record(entry(1)), log.record(entry(2))]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    });
  });

  describe('verifyAudit', () => {
    it('verifies an empty chain', async () => {
      expect(await verifyAudit(fixture.store.audit)).toEqual({
        ok: true,
        records: 0,
        headSeq: 0,
        headHash: AUDIT_GENESIS_HASH,
      });
    });

    it('verifies a chain of 25 records read in pages of 7', async () => {
      await writeChain(25);
      const head = await fixture.store.audit.head();
      expect(await verifyAudit(fixture.store.audit, { pageSize: 7 })).toEqual({
        ok: true,
        records: 25,
        headSeq: 25,
        headHash: head!.hash,
      });
    });

    it('verifies a keyed chain only with its key', async () => {
      await writeChain(3, KEY);
      expect(await verifyAudit(fixture.store.audit, { hmacKey: KEY })).toMatchObject({
        ok: true,
        records: 3,
      });
      expect(await verifyAudit(fixture.store.audit, { hmacKey: 'w'.repeat(32) })).toEqual({
        ok: false,
        records: 0,
        brokenSeq: 1,
        reason:
          'Record 1 has been altered: its hash does not match its body under this key (its body or hash was edited, or the key is wrong).',
      });
      expect(await verifyAudit(fixture.store.audit)).toMatchObject({ ok: false, brokenSeq: 1 });
    });

    it('does not verify an unkeyed chain with a key', async () => {
      await writeChain(2);
      expect(await verifyAudit(fixture.store.audit, { hmacKey: KEY })).toMatchObject({
        ok: false,
        brokenSeq: 1,
      });
    });

    it('names a deleted record as missing', async () => {
      await writeChain(5);
      await fixture.remove(3);
      expect(await verifyAudit(fixture.store.audit)).toEqual({
        ok: false,
        records: 2,
        brokenSeq: 3,
        reason: 'Record 3 is missing: the chain goes from record 2 to record 4.',
      });
    });

    it('names a record whose body was rewritten and rehashed without the key', async () => {
      await writeChain(4, KEY);
      const [record] = await fixture.store.audit.read(1, 1);
      const body = record!.body.replace('"status":201', '"status":500');
      await fixture.edit(2, 'body', body);
      await fixture.edit(
        2,
        'hash',
        createHash('sha256')
          .update(record!.prevHash + body)
          .digest('hex'),
      );
      expect(await verifyAudit(fixture.store.audit, { hmacKey: KEY })).toMatchObject({
        ok: false,
        brokenSeq: 2,
      });
    });

    it('rejects a short HMAC key and a bad page size', async () => {
      await expect(verifyAudit(fixture.store.audit, { hmacKey: 'short' })).rejects.toThrow(
        "verifyAudit: hmacKey must be a string or bytes of at least 16 bytes, got '5 characters'",
      );
      await expect(verifyAudit(fixture.store.audit, { pageSize: 0 })).rejects.toThrow(RangeError);
      expect(() => createAuditLog({ store: fixture.store.audit, hmacKey: Buffer.alloc(15) })).toThrow(
        RangeError,
      );
    });

    const columns: AuditColumn[] = ['body', 'hash', 'prev_hash'];
    it(`fails at exactly the edited record for every byte of its ${columns.join(', ')}`, async () => {
      const n = 5;
      await writeChain(n);
      const stored = await fixture.store.audit.read();
      const seqs = options.everyRecord ? stored.map((r) => r.seq) : [3];
      let edits = 0;
      for (const seq of seqs) {
        const record = stored[seq - 1]!;
        const original: Record<AuditColumn, string> = {
          body: record.body,
          hash: record.hash,
          prev_hash: record.prevHash,
        };
        for (const column of columns) {
          const text = original[column];
          for (let i = 0; i < text.length; i++) {
            await fixture.edit(seq, column, flip(text, i));
            const result = await verifyAudit(fixture.store.audit);
            if (result.ok || result.brokenSeq !== seq || result.records !== seq - 1) {
              throw new Error(`editing ${column}[${i}] of record ${seq} gave ${JSON.stringify(result)}`);
            }
            edits++;
          }
          await fixture.edit(seq, column, text);
        }
      }
      expect(edits).toBe(seqs.reduce((sum, seq) => sum + stored[seq - 1]!.body.length + 128, 0));
      expect(await verifyAudit(fixture.store.audit)).toMatchObject({ ok: true, records: n });
    });
  });
}
