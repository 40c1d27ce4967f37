import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { SESSION_BOUNDS, type AdminSessionRecord, type NewAdminSession } from './sessions.js';

/**
 * The admin session store contract suite: every rule in the docstrings of `store/sessions.ts`, run against
 * each backend.
 */

const TTL = 12 * 3_600_000;

/** A hash per name (what the admin check would store: SHA-256 hex of the cookie's id). */
const hash = (n: string | number) => String(n).padStart(64, '0');

export function sessionsContract(name: string, backend: FacetBackend): void {
  describe(`AdminSessionStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    const session = (fields: Partial<NewAdminSession> = {}): NewAdminSession => ({
      idHash: hash(1),
      principalId: 'admin',
      createdAt: h.start,
      expiresAt: h.start + TTL,
      ...fields,
    });
    const stored = (fields: Partial<NewAdminSession> = {}): AdminSessionRecord => ({
      clientAddress: null,
      revokedAt: null,
      ...session(fields),
    });

    it('create stores the session exactly; get reads it back, from another store too', async () => {
      expect(await h.store.sessions.create(session())).toEqual(stored());
      const withAddress = session({ idHash: hash(2), principalId: 'key:0123abcd', clientAddress: '::1' });
      expect(await h.store.sessions.create(withAddress)).toEqual(stored(withAddress));
      expect(await h.store.sessions.get(hash(1))).toEqual(stored());
      expect(await (await h.another()).sessions.get(hash(2))).toEqual(stored(withAddress));
      expect(await h.store.sessions.get(hash(3))).toBeUndefined();
      expect(await h.store.sessions.get('')).toBeUndefined();
      expect(await h.store.sessions.get('a\0')).toBeUndefined();
    });

    it('create refuses bad fields with a RangeError naming the field; nothing is written', async () => {
      const b = SESSION_BOUNDS;
      const refusals: [Partial<NewAdminSession>, string][] = [
        [{ idHash: '' }, 'sessions.create: idHash must be 1 to 128 characters without NUL'],
        [{ idHash: 'h'.repeat(b.maxIdHashLength + 1) }, 'sessions.create: idHash must be'],
        [{ principalId: '' }, 'sessions.create: principalId must be 1 to 512 characters without NUL'],
        [{ principalId: 'p'.repeat(b.maxPrincipalIdLength + 1) }, 'sessions.create: principalId must be'],
        [{ createdAt: Number.NaN }, 'sessions.create: createdAt must be a safe integer (ms)'],
        [{ expiresAt: h.start }, 'sessions.create: expiresAt must be after createdAt'],
        [
          { clientAddress: 'a'.repeat(b.maxClientAddressLength + 1) },
          'sessions.create: clientAddress must be',
        ],
        [{ clientAddress: '1.2.3.4\r\nx' }, 'sessions.create: clientAddress must be'],
      ];
      for (const [fields, message] of refusals) {
        const error = await h.store.sessions.create(session(fields)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect([fields, error]).toEqual([fields, expect.any(RangeError)]);
        expect((error as Error).message).toContain(message);
      }
      await expect(h.store.sessions.create(session(), { maxLive: 1.5 })).rejects.toThrow(
        'sessions.create: maxLive must be an integer >= 1, got 1.5',
      );
      expect(await h.store.sessions.get(hash(1))).toBeUndefined();
      const longest = session({
        idHash: 'h'.repeat(b.maxIdHashLength),
        principalId: 'p'.repeat(b.maxPrincipalIdLength),
        clientAddress: 'a'.repeat(b.maxClientAddressLength),
      });
      expect(await h.store.sessions.create(longest)).toEqual(stored(longest));
    });

    it('create of a taken hash fails with an Error and keeps the first session', async () => {
      await h.store.sessions.create(session());
      await expect(h.store.sessions.create(session({ principalId: 'other' }))).rejects.toThrow(
        'sessions.create: a session with this id hash exists',
      );
      expect(await h.store.sessions.get(hash(1))).toEqual(stored());
    });

    it('revoke sets revokedAt once (idempotent) and resolves the record; an unknown hash resolves undefined', async () => {
      await h.store.sessions.create(session());
      expect(await h.store.sessions.revoke(hash(1), h.start + 5)).toEqual({
        ...stored(),
        revokedAt: h.start + 5,
      });
      expect(await h.store.sessions.revoke(hash(1), h.start + 9)).toEqual({
        ...stored(),
        revokedAt: h.start + 5,
      });
      expect(await (await h.another()).sessions.get(hash(1))).toEqual({
        ...stored(),
        revokedAt: h.start + 5,
      });
      expect(await h.store.sessions.revoke(hash(2), h.start)).toBeUndefined();
      await expect(h.store.sessions.revoke(hash(1), 0.5)).rejects.toThrow(
        'sessions.revoke: at must be a safe integer (ms), got 0.5',
      );
    });

    it("revokeAll revokes the principal's live sessions only and counts them", async () => {
      await h.store.sessions.create(session({ idHash: hash(1) }));
      await h.store.sessions.create(session({ idHash: hash(2), expiresAt: h.start + 100 }));
      await h.store.sessions.create(session({ idHash: hash(3) }));
      await h.store.sessions.revoke(hash(3), h.start + 1);
      await h.store.sessions.create(session({ idHash: hash(4), principalId: 'key:other' }));
      // hash(2) expired at start + 100, hash(3) was revoked already: one live session of admin.
      expect(await h.store.sessions.revokeAll('admin', h.start + 100)).toBe(1);
      expect((await h.store.sessions.get(hash(1)))!.revokedAt).toBe(h.start + 100);
      expect((await h.store.sessions.get(hash(2)))!.revokedAt).toBeNull();
      expect((await h.store.sessions.get(hash(3)))!.revokedAt).toBe(h.start + 1);
      expect((await h.store.sessions.get(hash(4)))!.revokedAt).toBeNull();
      expect(await h.store.sessions.revokeAll('admin', h.start + 200)).toBe(0);
      expect(await h.store.sessions.revokeAll('', h.start)).toBe(0);
    });

    it("create revokes the principal's oldest live sessions beyond maxLive, never the new one", async () => {
      const limits = { maxLive: 3 };
      for (let i = 1; i <= 4; i++) {
        await h.store.sessions.create(session({ idHash: hash(i), createdAt: h.start + i }), limits);
      }
      await h.store.sessions.create(session({ idHash: hash(9), principalId: 'key:other' }), limits);
      const revokedAt = async (i: number) => (await h.store.sessions.get(hash(i)))!.revokedAt;
      expect(await Promise.all([1, 2, 3, 4, 9].map(revokedAt))).toEqual([
        h.start + 4,
        null,
        null,
        null,
        null,
      ]);
      // Same createdAt as the newest, and a hash that sorts first: the new one is still kept.
      await h.store.sessions.create(session({ idHash: hash(0), createdAt: h.start + 4 }), limits);
      expect(await Promise.all([0, 2, 3, 4].map(revokedAt))).toEqual([null, h.start + 4, null, null]);
    });

    it('10 concurrent logins of one principal from two stores with maxLive 4: 4 stay live', async () => {
      const other = await h.another();
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? h.store : other).sessions.create(session({ idHash: hash(i + 10) }), { maxLive: 4 }),
        ),
      );
      const records = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => (await h.store.sessions.get(hash(i + 10)))!),
      );
      expect(records.filter((r) => r.revokedAt === null)).toHaveLength(4);
    });

    it('prune deletes up to limit sessions that ended (expired or revoked) at or before now, earliest ended first', async () => {
      const at = (n: number) => h.start + n;
      await h.store.sessions.create(session({ idHash: hash(1), expiresAt: at(10) }));
      await h.store.sessions.create(session({ idHash: hash(2), expiresAt: at(20) }));
      await h.store.sessions.create(session({ idHash: hash(3), expiresAt: at(30) }));
      await h.store.sessions.create(session({ idHash: hash(4), expiresAt: at(100) }));
      await h.store.sessions.create(session({ idHash: hash(5), expiresAt: at(60) }));
      await h.store.sessions.revoke(hash(3), at(5));
      await h.store.sessions.revoke(hash(5), at(50));
      const left = async () =>
        (
          await Promise.all([1, 2, 3, 4, 5].map(async (i) => (await h.store.sessions.get(hash(i))) && i))
        ).filter((i) => i !== undefined);
      expect(await h.store.sessions.prune(at(4))).toBe(0);
      // hash(3) ended at 5 (revoked), hash(1) at 10 (expired): one at a time, the earliest first.
      expect(await h.store.sessions.prune(at(10), 1)).toBe(1);
      expect(await left()).toEqual([1, 2, 4, 5]);
      expect(await h.store.sessions.prune(at(10), 0)).toBe(0);
      expect(await h.store.sessions.prune(at(10))).toBe(1);
      expect(await left()).toEqual([2, 4, 5]);
      // hash(5) is revoked at 50, after now: it stays until then.
      expect(await h.store.sessions.prune(at(20))).toBe(1);
      expect(await left()).toEqual([4, 5]);
      expect(await (await h.another()).sessions.prune(at(50))).toBe(1);
      expect(await h.store.sessions.get(hash(4))).toEqual(stored({ idHash: hash(4), expiresAt: at(100) }));
      expect(await left()).toEqual([4]);
      await expect(h.store.sessions.prune(1.5)).rejects.toThrow(
        'sessions.prune: now must be a safe integer (ms)',
      );
      await expect(h.store.sessions.prune(at(0), -1)).rejects.toThrow(
        'sessions.prune: limit must be an integer >= 0, got -1',
      );
    });

    it('every method rejects once the store is closed', async () => {
      const other = await h.another();
      await other.close();
      await expect(other.sessions.create(session())).rejects.toThrow(/closed/);
      await expect(other.sessions.get(hash(1))).rejects.toThrow(/closed/);
      await expect(other.sessions.revoke(hash(1), h.start)).rejects.toThrow(/closed/);
      await expect(other.sessions.revokeAll('admin', h.start)).rejects.toThrow(/closed/);
      await expect(other.sessions.prune(h.start)).rejects.toThrow(/closed/);
    });
  });
}
