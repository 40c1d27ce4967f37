import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AUDIT_GENESIS_HASH, type AuditRecord, type AuditSealer } from './audit.js';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import type { Store } from './store.js';

/**
 * The audit log contract suite: every rule in the docstrings of `store/audit.ts`, run against each backend
 * (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

/** A sealer as operations/ would write one: the body names its place, the hash covers seq, prevHash, body. */
function sealer(text: string, calls?: [number, string][]): AuditSealer {
  return (seq, prevHash) => {
    calls?.push([seq, prevHash]);
    const body = JSON.stringify({ seq, text });
    return { body, hash: hashOf(seq, prevHash, body) };
  };
}

function hashOf(seq: number, prevHash: string, body: string): string {
  return createHash('sha256').update(`${seq}\n${prevHash}\n${body}`).digest('hex');
}

/** Checks the whole chain: seq 1..n gapless, each prevHash the hash before it, each hash recomputable. */
function expectChain(records: AuditRecord[], length: number): void {
  expect(records.map((r) => r.seq)).toEqual(Array.from({ length }, (_, i) => i + 1));
  let prev = AUDIT_GENESIS_HASH;
  for (const record of records) {
    expect(record.prevHash).toBe(prev);
    expect(record.hash).toBe(hashOf(record.seq, record.prevHash, record.body));
    prev = record.hash;
  }
}

async function readAll(store: Store): Promise<AuditRecord[]> {
  return store.audit.read(0, 10_000);
}

export function auditContract(name: string, backend: FacetBackend): void {
  describe(`AuditStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    it('an empty chain has no head and reads nothing', async () => {
      expect(await h.store.audit.head()).toBeUndefined();
      expect(await h.store.audit.read()).toEqual([]);
    });

    it('append seals each record with the next seq and the running previous hash', async () => {
      const calls: [number, string][] = [];
      const records = await h.store.audit.append([
        sealer('a', calls),
        sealer('b', calls),
        sealer('c', calls),
      ]);
      const h1 = hashOf(1, AUDIT_GENESIS_HASH, '{"seq":1,"text":"a"}');
      const h2 = hashOf(2, h1, '{"seq":2,"text":"b"}');
      const h3 = hashOf(3, h2, '{"seq":3,"text":"c"}');
      expect(calls).toEqual([
        [1, AUDIT_GENESIS_HASH],
        [2, h1],
        [3, h2],
      ]);
      expect(records).toEqual([
        { seq: 1, body: '{"seq":1,"text":"a"}', prevHash: AUDIT_GENESIS_HASH, hash: h1 },
        { seq: 2, body: '{"seq":2,"text":"b"}', prevHash: h1, hash: h2 },
        { seq: 3, body: '{"seq":3,"text":"c"}', prevHash: h2, hash: h3 },
      ]);
      expect(await h.store.audit.read()).toEqual(records);
      expect(await h.store.audit.head()).toEqual(records[2]);

      const next = await h.store.audit.append([sealer('d')]);
      expect(next).toEqual([
        { seq: 4, body: '{"seq":4,"text":"d"}', prevHash: h3, hash: expect.any(String) },
      ]);
      expect(await h.store.audit.append([])).toEqual([]);
      expectChain(await readAll(h.store), 4);
    });

    it('the body is stored verbatim: non-ASCII, a NUL, odd spacing', async () => {
      const body = '{ "note":"caf\u00e9 \u2713 \ud83d\ude00", "nul":"a\u0000b",\n\t"n": -0.0 }';
      const [record] = await h.store.audit.append([() => ({ body, hash: 'h1' })]);
      expect(record).toEqual({ seq: 1, body, prevHash: AUDIT_GENESIS_HASH, hash: 'h1' });
      expect(await h.store.audit.read()).toEqual([record]);
    });

    it('100 concurrent appends (20 calls of 5 sealers) make one gapless chain, each call contiguous', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, call) =>
          h.store.audit.append(Array.from({ length: 5 }, (_, i) => sealer(`call ${call} record ${i}`))),
        ),
      );
      for (const records of results) {
        expect(records).toHaveLength(5);
        const first = records[0]!.seq;
        expect(records.map((r) => r.seq)).toEqual([first, first + 1, first + 2, first + 3, first + 4]);
      }
      const all = await readAll(h.store);
      expectChain(all, 100);
      expect(all).toEqual(results.flat().sort((a, b) => a.seq - b.seq));
    });

    it('two stores on the same storage appending at once never fork the chain', async () => {
      const other = await h.another();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, call) =>
          (call % 2 === 0 ? h.store : other).audit.append(
            Array.from({ length: 5 }, (_, i) => sealer(`call ${call} record ${i}`)),
          ),
        ),
      );
      expect(results.flat()).toHaveLength(100);
      expectChain(await readAll(h.store), 100);
      expect(await other.audit.head()).toEqual(await h.store.audit.head());
    });

    it('a sealer that throws rolls the whole append back; the chain goes on from its head', async () => {
      await h.store.audit.append([sealer('a')]);
      const boom = new Error('sealer failed');
      const failing: AuditSealer = () => {
        throw boom;
      };
      await expect(h.store.audit.append([sealer('b'), failing, sealer('c')])).rejects.toBe(boom);
      expect(await readAll(h.store)).toHaveLength(1);
      const [next] = await h.store.audit.append([sealer('d')]);
      expect(next!.seq).toBe(2);
      expectChain(await readAll(h.store), 2);
    });

    it('a failing append among concurrent ones leaves the others whole and the chain gapless', async () => {
      const failing: AuditSealer = () => {
        throw new Error('no');
      };
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, call) =>
          h.store.audit.append(
            call === 4 ? [sealer('x'), failing] : [sealer(`${call}-a`), sealer(`${call}-b`)],
          ),
        ),
      );
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
      expectChain(await readAll(h.store), 18);
    });

    it('a bad sealer result is a RangeError, nothing written', async () => {
      const bad: AuditSealer[] = [
        () => ({ body: 'x', hash: '' }),
        () => ({ body: 'x', hash: 'h'.repeat(129) }),
        () => ({ body: 'x', hash: 'a\0b' }),
        () => ({ body: 42 as unknown as string, hash: 'h' }),
        () => ({ body: 'x', hash: 7 as unknown as string }),
        () => undefined as unknown as { body: string; hash: string },
      ];
      for (const s of bad) {
        await expect(h.store.audit.append([sealer('ok'), s])).rejects.toBeInstanceOf(RangeError);
      }
      expect(await h.store.audit.head()).toBeUndefined();
      const [record] = await h.store.audit.append([() => ({ body: '', hash: 'h'.repeat(128) })]);
      expect(record).toEqual({ seq: 1, body: '', prevHash: AUDIT_GENESIS_HASH, hash: 'h'.repeat(128) });
    });

    it('read pages by seq: after afterSeq, in order, at most limit (default 1000, max 10 000)', async () => {
      for (let i = 0; i < 5; i++) {
        await h.store.audit.append(Array.from({ length: 5 }, (_, j) => sealer(`${i}-${j}`)));
      }
      const seqs = (records: AuditRecord[]) => records.map((r) => r.seq);
      expect(seqs(await h.store.audit.read(0, 10))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(seqs(await h.store.audit.read(10, 10))).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
      expect(seqs(await h.store.audit.read(20))).toEqual([21, 22, 23, 24, 25]);
      expect(seqs(await h.store.audit.read(25))).toEqual([]);
      expect(await h.store.audit.read(0, 0)).toEqual([]);
      expect(await h.store.audit.read(undefined, 3)).toEqual((await h.store.audit.read()).slice(0, 3));
      expect(await h.store.audit.read()).toHaveLength(25);
      expect(await h.store.audit.read(0, 20_000)).toHaveLength(25);
      await expect(h.store.audit.read(Number.NaN)).rejects.toBeInstanceOf(RangeError);
    });

    it('read pages 1000 records by default', async () => {
      await h.store.audit.append(Array.from({ length: 1005 }, (_, i) => sealer(`r${i}`)));
      expect(await h.store.audit.read()).toHaveLength(1000);
      expect((await h.store.audit.read(1000)).map((r) => r.seq)).toEqual([1001, 1002, 1003, 1004, 1005]);
      expect((await h.store.audit.head())!.seq).toBe(1005);
    });

    it('the chain survives a reopen and continues from its head', async () => {
      await h.store.audit.append([sealer('a'), sealer('b')]);
      const other = await h.another();
      await other.audit.append([sealer('c')]);
      expectChain(await readAll(h.store), 3);
    });

    it('every method rejects after close', async () => {
      await h.store.audit.append([sealer('a')]);
      await h.store.close();
      await expect(h.store.audit.append([sealer('b')])).rejects.toThrow(/closed/);
      await expect(h.store.audit.read()).rejects.toThrow(/closed/);
      await expect(h.store.audit.head()).rejects.toThrow(/closed/);
    });
  });
}
