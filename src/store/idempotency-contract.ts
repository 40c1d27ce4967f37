import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import type { IdempotencyClaim, IdempotencyRecord, StoredResponse } from './idempotency.js';

/**
 * The idempotency record contract suite: every rule in the docstrings of `store/idempotency.ts`, run against
 * each backend (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

const LOCK_MS = 30_000;
const TTL_MS = 86_400_000;
const FP_A = 'a'.repeat(64);
const FP_B = 'b'.repeat(64);

const RESPONSE: StoredResponse = {
  status: 201,
  headers: { 'content-type': 'application/json', location: '/orders/1' },
  body: '{"id":"ord_1","note":"caf\u00e9 \ud83d\ude00","nul":"a\u0000b"}',
  bodyEncoding: 'utf8',
};

export function idempotencyContract(name: string, backend: FacetBackend): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    function claim(overrides: Partial<IdempotencyClaim> = {}): IdempotencyClaim {
      return {
        scope: 'token:abc',
        key: 'key-1',
        fingerprint: FP_A,
        lockMs: LOCK_MS,
        ttlMs: TTL_MS,
        ...overrides,
      };
    }

    async function acquire(overrides: Partial<IdempotencyClaim> = {}): Promise<IdempotencyRecord> {
      const result = await h.store.idempotency.begin(claim(overrides));
      if (result.outcome !== 'acquired') throw new Error(`expected acquired, got ${result.outcome}`);
      return result.record;
    }

    it('begin of a new key acquires it: in progress, a token, locked for lockMs, living ttlMs', async () => {
      const result = await h.store.idempotency.begin(claim());
      expect(result.outcome).toBe('acquired');
      if (result.outcome !== 'acquired') return;
      expect(result.takenOver).toBe(false);
      expect(result.record).toEqual({
        scope: 'token:abc',
        key: 'key-1',
        fingerprint: FP_A,
        state: 'in_progress',
        token: expect.any(String),
        response: null,
        createdAt: h.start,
        updatedAt: h.start,
        lockedUntil: h.start + LOCK_MS,
        expiresAt: h.start + TTL_MS,
      });
      expect(result.record.token.length).toBeGreaterThan(0);
      expect(await h.store.idempotency.get('token:abc', 'key-1')).toEqual(result.record);
    });

    it('50 concurrent begins of one new key: exactly one acquires, the other 49 see it in progress', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, () => h.store.idempotency.begin(claim())));
      const acquired = results.filter((r) => r.outcome === 'acquired');
      const inProgress = results.filter((r) => r.outcome === 'in_progress');
      expect(acquired).toHaveLength(1);
      expect(inProgress).toHaveLength(49);
      const token = acquired[0]!.record.token;
      expect(new Set(inProgress.map((r) => r.record.token))).toEqual(new Set([token]));
      expect(inProgress.every((r) => r.record.fingerprint === FP_A && r.record.state === 'in_progress')).toBe(
        true,
      );
    });

    it('50 concurrent begins from two stores on the same storage: exactly one acquires', async () => {
      const other = await h.another();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? h.store : other).idempotency.begin(claim())),
      );
      expect(results.filter((r) => r.outcome === 'acquired')).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'in_progress')).toHaveLength(49);
    });

    it('keys are scoped: the same key under two scopes is two records', async () => {
      const a = await acquire({ scope: 'token:a' });
      const b = await acquire({ scope: 'token:b' });
      expect(a.token).not.toBe(b.token);
      expect((await h.store.idempotency.get('token:a', 'key-1'))!.token).toBe(a.token);
      expect((await h.store.idempotency.get('token:b', 'key-1'))!.token).toBe(b.token);
    });

    it('a different fingerprint is a mismatch, whether the record is in progress, lock-expired or completed', async () => {
      const record = await acquire();
      const running = await h.store.idempotency.begin(claim({ fingerprint: FP_B }));
      expect(running).toEqual({ outcome: 'mismatch', record });

      h.clock.tick(LOCK_MS);
      const stale = await h.store.idempotency.begin(claim({ fingerprint: FP_B }));
      expect(stale).toEqual({ outcome: 'mismatch', record });

      const ref = { scope: record.scope, key: record.key, token: record.token };
      expect(await h.store.idempotency.complete(ref, RESPONSE)).toBe(true);
      const done = await h.store.idempotency.begin(claim({ fingerprint: FP_B }));
      expect(done.outcome).toBe('mismatch');
      expect(done.record.state).toBe('completed');
      expect(done.record.fingerprint).toBe(FP_A);
    });

    it('the same fingerprint while the owner runs is in progress, up to the last ms of its lock', async () => {
      const record = await acquire();
      h.clock.tick(LOCK_MS - 1);
      expect(await h.store.idempotency.begin(claim())).toEqual({ outcome: 'in_progress', record });
    });

    it('complete stores the response; the same fingerprint then replays it exactly', async () => {
      const record = await acquire();
      h.clock.tick(250);
      const ref = { scope: record.scope, key: record.key, token: record.token };
      expect(await h.store.idempotency.complete(ref, RESPONSE)).toBe(true);
      const completed: IdempotencyRecord = {
        ...record,
        state: 'completed',
        response: RESPONSE,
        updatedAt: h.start + 250,
      };
      expect(await h.store.idempotency.get('token:abc', 'key-1')).toEqual(completed);
      h.clock.tick(LOCK_MS * 10);
      expect(await h.store.idempotency.begin(claim())).toEqual({ outcome: 'completed', record: completed });
      // A completed record is never completed again, nor released.
      expect(await h.store.idempotency.complete(ref, { ...RESPONSE, status: 500 })).toBe(false);
      expect(await h.store.idempotency.release(ref)).toBe(false);
      expect((await h.store.idempotency.get('token:abc', 'key-1'))!.response).toEqual(RESPONSE);
    });

    it('a base64 body is stored and replayed as given', async () => {
      const record = await acquire();
      const binary: StoredResponse = { status: 200, headers: {}, body: 'AAEC/w==', bodyEncoding: 'base64' };
      expect(await h.store.idempotency.complete(record, binary)).toBe(true);
      expect((await h.store.idempotency.get('token:abc', 'key-1'))!.response).toEqual(binary);
    });

    it('complete with another token, an unknown key or a malformed ref is false and changes nothing', async () => {
      const record = await acquire();
      const { scope, key } = record;
      expect(await h.store.idempotency.complete({ scope, key, token: 'not-the-token' }, RESPONSE)).toBe(
        false,
      );
      expect(await h.store.idempotency.complete({ scope, key: 'other', token: record.token }, RESPONSE)).toBe(
        false,
      );
      expect(await h.store.idempotency.complete({ scope, key: '', token: record.token }, RESPONSE)).toBe(
        false,
      );
      expect(await h.store.idempotency.complete({ scope, key: 'a\0b', token: record.token }, RESPONSE)).toBe(
        false,
      );
      expect(await h.store.idempotency.get(scope, key)).toEqual(record);
    });

    it('after lockedUntil the same fingerprint takes the record over; the old token can no longer complete', async () => {
      const first = await acquire();
      h.clock.tick(LOCK_MS);
      const result = await h.store.idempotency.begin(claim({ lockMs: 5_000 }));
      expect(result.outcome).toBe('acquired');
      if (result.outcome !== 'acquired') return;
      expect(result.takenOver).toBe(true);
      expect(result.record).toEqual({
        ...first,
        token: expect.any(String),
        updatedAt: h.start + LOCK_MS,
        lockedUntil: h.start + LOCK_MS + 5_000,
      });
      expect(result.record.token).not.toBe(first.token);
      // Others see the new owner running.
      expect(await h.store.idempotency.begin(claim())).toEqual({
        outcome: 'in_progress',
        record: result.record,
      });

      const oldRef = { scope: first.scope, key: first.key, token: first.token };
      expect(await h.store.idempotency.complete(oldRef, RESPONSE)).toBe(false);
      expect(await h.store.idempotency.release(oldRef)).toBe(false);
      const newRef = { ...oldRef, token: result.record.token };
      expect(await h.store.idempotency.complete(newRef, RESPONSE)).toBe(true);
      expect((await h.store.idempotency.get(first.scope, first.key))!.state).toBe('completed');
    });

    it('concurrent takeovers of a lock-expired record: exactly one acquires', async () => {
      await acquire();
      h.clock.tick(LOCK_MS);
      const results = await Promise.all(Array.from({ length: 20 }, () => h.store.idempotency.begin(claim())));
      const acquired = results.filter((r) => r.outcome === 'acquired');
      expect(acquired).toHaveLength(1);
      expect(acquired[0]!.outcome === 'acquired' && acquired[0]!.takenOver).toBe(true);
      expect(results.filter((r) => r.outcome === 'in_progress')).toHaveLength(19);
    });

    it('an expired record counts as absent and is replaced afresh, whatever its fingerprint and state', async () => {
      const first = await acquire({ ttlMs: 60_000 });
      expect(await h.store.idempotency.complete(first, RESPONSE)).toBe(true);
      h.clock.tick(59_999);
      expect((await h.store.idempotency.get('token:abc', 'key-1'))!.state).toBe('completed');
      h.clock.tick(1);
      expect(await h.store.idempotency.get('token:abc', 'key-1')).toBeUndefined();

      const result = await h.store.idempotency.begin(claim({ fingerprint: FP_B }));
      expect(result.outcome).toBe('acquired');
      if (result.outcome !== 'acquired') return;
      expect(result.takenOver).toBe(false);
      expect(result.record).toEqual({
        scope: 'token:abc',
        key: 'key-1',
        fingerprint: FP_B,
        state: 'in_progress',
        token: expect.any(String),
        response: null,
        createdAt: h.start + 60_000,
        updatedAt: h.start + 60_000,
        lockedUntil: h.start + 60_000 + LOCK_MS,
        expiresAt: h.start + 60_000 + TTL_MS,
      });
      expect(result.record.token).not.toBe(first.token);
    });

    it('an expired in-progress record cannot be completed or released by its old owner', async () => {
      const record = await acquire({ ttlMs: 5_000, lockMs: 1_000 });
      h.clock.tick(5_000);
      expect(await h.store.idempotency.complete(record, RESPONSE)).toBe(false);
      expect(await h.store.idempotency.release(record)).toBe(false);
    });

    it('release deletes the owned in-progress record, so the next request starts afresh', async () => {
      const record = await acquire();
      const ref = { scope: record.scope, key: record.key, token: record.token };
      expect(await h.store.idempotency.release({ ...ref, token: 'other' })).toBe(false);
      expect(await h.store.idempotency.get(record.scope, record.key)).toEqual(record);
      expect(await h.store.idempotency.release(ref)).toBe(true);
      expect(await h.store.idempotency.get(record.scope, record.key)).toBeUndefined();
      expect(await h.store.idempotency.release(ref)).toBe(false);
      h.clock.tick(10);
      const again = await acquire({ fingerprint: FP_B });
      expect(again.createdAt).toBe(h.start + 10);
      expect(again.token).not.toBe(record.token);
    });

    it('prune deletes expired records only, at most limit at a time, and counts them', async () => {
      for (let i = 0; i < 3; i++) await acquire({ key: `short-${i}`, ttlMs: 1_000, lockMs: 500 });
      for (let i = 0; i < 2; i++) await acquire({ key: `long-${i}`, ttlMs: 5_000, lockMs: 500 });
      expect(await h.store.idempotency.prune()).toBe(0);
      h.clock.tick(1_000);
      expect(await h.store.idempotency.prune(2)).toBe(2);
      expect(await h.store.idempotency.prune()).toBe(1);
      expect(await h.store.idempotency.prune()).toBe(0);
      expect(await h.store.idempotency.get('token:abc', 'long-0')).toBeDefined();
      h.clock.tick(4_000);
      expect(await h.store.idempotency.prune(0)).toBe(0);
      expect(await h.store.idempotency.prune(1)).toBe(1);
      expect(await h.store.idempotency.prune(1000)).toBe(1);
      // A replaced record is live again and never pruned.
      await acquire({ key: 'long-0', ttlMs: 100, lockMs: 50 });
      expect(await h.store.idempotency.prune()).toBe(0);
    });

    it('begin refuses bad claims with a RangeError and writes nothing', async () => {
      const bad: Partial<IdempotencyClaim>[] = [
        { scope: '' },
        { scope: 's'.repeat(256) },
        { scope: 'a\0b' },
        { key: '' },
        { key: 'k'.repeat(256) },
        { key: 'k\0' },
        { fingerprint: '' },
        { fingerprint: 'f'.repeat(256) },
        { lockMs: 0 },
        { lockMs: -1 },
        { lockMs: Number.NaN },
        { ttlMs: 0 },
        { ttlMs: Infinity },
        // A record must outlive the lock of its run: ttlMs > lockMs.
        { ttlMs: LOCK_MS },
        { ttlMs: 1_000 },
        { scope: 42 as unknown as string },
      ];
      for (const overrides of bad) {
        await expect(h.store.idempotency.begin(claim(overrides))).rejects.toBeInstanceOf(RangeError);
      }
      expect(
        await h.store.idempotency.begin(claim({ key: 'k'.repeat(255), scope: 's'.repeat(255) })),
      ).toMatchObject({ outcome: 'acquired' });
      expect(await h.store.idempotency.get('token:abc', 'key-1')).toBeUndefined();
      expect(await h.store.idempotency.prune()).toBe(0);
    });

    it('begin names the rule when ttlMs is not greater than lockMs', async () => {
      await expect(h.store.idempotency.begin(claim({ lockMs: 60_000, ttlMs: 1_000 }))).rejects.toThrow(
        new RangeError(
          'idempotency.begin: ttlMs must be greater than lockMs (60000 ms): a record must outlive the lock of the run that holds it, got 1000',
        ),
      );
      expect(await h.store.idempotency.begin(claim({ lockMs: 60_000, ttlMs: 60_001 }))).toMatchObject({
        outcome: 'acquired',
        record: { lockedUntil: h.start + 60_000, expiresAt: h.start + 60_001 },
      });
    });

    it('complete refuses a bad response with a RangeError and changes nothing', async () => {
      const record = await acquire();
      for (const status of [99, 600, 200.5, Number.NaN]) {
        await expect(h.store.idempotency.complete(record, { ...RESPONSE, status })).rejects.toBeInstanceOf(
          RangeError,
        );
      }
      await expect(
        h.store.idempotency.complete(record, { ...RESPONSE, bodyEncoding: 'hex' as 'utf8' }),
      ).rejects.toBeInstanceOf(RangeError);
      await expect(
        h.store.idempotency.complete(record, { ...RESPONSE, body: 1 as unknown as string }),
      ).rejects.toBeInstanceOf(RangeError);
      expect(await h.store.idempotency.get(record.scope, record.key)).toEqual(record);
      for (const status of [100, 599]) {
        const other = await acquire({ key: `status-${status}` });
        expect(await h.store.idempotency.complete(other, { ...RESPONSE, status })).toBe(true);
      }
    });

    it('get of a malformed scope or key is undefined', async () => {
      await acquire();
      expect(await h.store.idempotency.get('', 'key-1')).toBeUndefined();
      expect(await h.store.idempotency.get('token:abc', 'key\0')).toBeUndefined();
      expect(await h.store.idempotency.get('token:abc', 'k'.repeat(256))).toBeUndefined();
    });

    it('records survive a reopen of the storage', async () => {
      const record = await acquire();
      await h.store.idempotency.complete(record, RESPONSE);
      const other = await h.another();
      expect(await other.idempotency.begin(claim())).toMatchObject({
        outcome: 'completed',
        record: { token: record.token, response: RESPONSE },
      });
    });

    it('every method rejects after close', async () => {
      const record = await acquire();
      await h.store.close();
      await expect(h.store.idempotency.begin(claim({ key: 'k2' }))).rejects.toThrow(/closed/);
      await expect(h.store.idempotency.complete(record, RESPONSE)).rejects.toThrow(/closed/);
      await expect(h.store.idempotency.release(record)).rejects.toThrow(/closed/);
      await expect(h.store.idempotency.get(record.scope, record.key)).rejects.toThrow(/closed/);
      await expect(h.store.idempotency.prune()).rejects.toThrow(/closed/);
    });
  });
}
