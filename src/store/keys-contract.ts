import { describe, expect, it } from 'vitest';
import { BreakwaterError, type PrincipalAiLimits } from '../core/index.js';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { API_KEY_BOUNDS, type ApiKeyRecord, type NewApiKey } from './keys.js';

/**
 * The API key store contract suite: every rule in the docstrings of `store/keys.ts`, run against each backend
 * (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

const HASH = 'c0ffee'.padEnd(64, '0');

/** AI limits as the edge stores them: nested, key order to keep. */
const AI: PrincipalAiLimits = {
  allowedModels: ['openai/gpt-4o-mini', 'dynamic/support'],
  budgets: [{ limitUsd: 5, windowMs: 86_400_000 }],
  rateRules: [{ limit: 100, windowMs: 60_000, window: 'sliding' }],
};

export function keysContract(name: string, backend: FacetBackend): void {
  describe(`ApiKeyStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    const key = (fields: Partial<NewApiKey> = {}): NewApiKey => ({
      id: 'k1',
      name: 'ci-bot',
      hash: HASH,
      scopes: ['mcp', 'ai'],
      metadata: { user: 'alice', team: 'red' },
      trustedBackend: false,
      ai: null,
      createdAt: h.start,
      expiresAt: null,
      ...fields,
    });

    it('create stores the record exactly; get reads it back, from another store too', async () => {
      const fields = key({
        name: 'caf\u00e9 \ud83d\ude00 bot',
        metadata: { user: 'alice', team: 'red', plan: '', zeta: 'z', alpha: '\u00e9' },
        trustedBackend: true,
        ai: AI,
        expiresAt: h.start + 30 * 86_400_000,
      });
      const created = await h.store.keys.create(fields);
      const expected: ApiKeyRecord = { ...fields, revokedAt: null };
      expect(created).toEqual(expected);
      expect(await h.store.keys.get('k1')).toEqual(expected);
      const stored = await (await h.another()).keys.get('k1');
      expect(stored).toEqual(expected);
      expect(Object.keys(stored!.metadata)).toEqual(['user', 'team', 'plan', 'zeta', 'alpha']);
      expect(Object.keys(stored!.ai!)).toEqual(['allowedModels', 'budgets', 'rateRules']);
      expect(await h.store.keys.get('k2')).toBeUndefined();
      expect(await h.store.keys.get('')).toBeUndefined();
      expect(await h.store.keys.get('k\0')).toBeUndefined();
    });

    it('create keeps scopes in order without duplicates', async () => {
      const created = await h.store.keys.create(key({ scopes: ['ai', 'mcp', 'ai', 'jobs'] }));
      expect(created.scopes).toEqual(['ai', 'mcp', 'jobs']);
      expect((await h.store.keys.get('k1'))!.scopes).toEqual(['ai', 'mcp', 'jobs']);
      expect((await h.store.keys.create(key({ id: 'k2', scopes: [] }))).scopes).toEqual([]);
    });

    it('create accepts the bounds exactly and refuses one past each with a RangeError naming the field', async () => {
      const b = API_KEY_BOUNDS;
      const most = Object.fromEntries(
        Array.from({ length: b.maxMetadataKeys }, (_, i) => [
          `k${i}`.padEnd(b.maxMetadataKeyLength, 'x'),
          'v'.repeat(b.maxMetadataValueLength),
        ]),
      );
      const largest = key({
        id: 'a'.repeat(b.maxIdLength),
        name: 'n'.repeat(b.maxNameLength),
        metadata: most,
        scopes: Array.from({ length: b.maxScopes }, (_, i) => `s${i}:x.y-z_`.padEnd(b.maxScopeLength, 's')),
      });
      expect(await h.store.keys.create(largest)).toEqual({ ...largest, revokedAt: null });

      const refusals: [Partial<NewApiKey>, string][] = [
        [{ id: 'a'.repeat(b.maxIdLength + 1) }, 'keys.create: id must be 1 to 64 of [A-Za-z0-9_-]'],
        [{ id: 'key:1' }, 'keys.create: id must be'],
        [
          { name: '' },
          'keys.create: name must be a string of 1 to 100 characters without control characters',
        ],
        [{ name: 'n'.repeat(b.maxNameLength + 1) }, 'keys.create: name must be'],
        [{ name: 'evil\u001b[2J' }, 'keys.create: name must be'],
        [{ name: 'a\nb' }, 'keys.create: name must be'],
        [{ hash: HASH.toUpperCase() }, 'keys.create: hash must be 64 lowercase hex digits (SHA-256)'],
        [{ hash: HASH.slice(1) }, 'keys.create: hash must be'],
        [{ scopes: 'mcp' as never }, 'keys.create: scopes must be an array of at most 16 scopes'],
        [
          { scopes: Array.from({ length: b.maxScopes + 1 }, (_, i) => `s${i}`) },
          'keys.create: scopes must be',
        ],
        [{ scopes: ['mcp', 'has space'] }, 'keys.create: scopes must be scopes of 1 to 64'],
        [
          { metadata: { ...most, one: 'more' } },
          'keys.create: metadata must be an object of at most 20 keys',
        ],
        [{ metadata: ['a'] as never }, 'keys.create: metadata must be an object of strings'],
        [{ metadata: { 'a b': 'x' } }, 'keys.create: metadata key must be 1 to 64 of [A-Za-z0-9_.-]'],
        [
          { metadata: JSON.parse('{"__proto__":"x"}') as Record<string, string> },
          'keys.create: metadata key',
        ],
        [
          { metadata: { user: 'v'.repeat(b.maxMetadataValueLength + 1) } },
          'keys.create: metadata.user must be',
        ],
        [{ metadata: { user: 7 as never } }, 'keys.create: metadata.user must be'],
        [{ metadata: { user: 'a\u0000b' } }, 'keys.create: metadata.user must be'],
        [{ trustedBackend: 'yes' as never }, 'keys.create: trustedBackend must be a boolean'],
        [{ ai: [] as never }, 'keys.create: ai must be null or an object'],
        [
          { ai: { allowedModels: ['m'.repeat(b.maxAiBytes)] } },
          'keys.create: ai must be JSON of at most 16384 bytes',
        ],
        [{ createdAt: 1.5 }, 'keys.create: createdAt must be a safe integer (ms)'],
        [{ expiresAt: h.start }, 'keys.create: expiresAt must be null or after createdAt'],
        [{ expiresAt: Number.NaN }, 'keys.create: expiresAt must be a safe integer (ms)'],
      ];
      for (const [fields, message] of refusals) {
        const error = await h.store.keys.create(key({ id: 'k2', ...fields })).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect([fields, error]).toEqual([fields, expect.any(RangeError)]);
        expect((error as Error).message).toContain(message);
      }
      await expect(h.store.keys.create(key({ id: 'k2' }), { maxActive: 0 })).rejects.toThrow(
        'keys.create: maxActive must be an integer >= 1, got 0',
      );
      expect((await h.store.keys.list({ includeRevoked: true })).map((k) => k.id)).toEqual([largest.id]);
    });

    it('create of a taken id fails with an Error and keeps the first key', async () => {
      const first = await h.store.keys.create(key());
      await expect(h.store.keys.create(key({ name: 'other', hash: 'f'.repeat(64) }))).rejects.toThrow(
        'keys.create: a key with id k1 exists',
      );
      expect(await h.store.keys.get('k1')).toEqual(first);
    });

    it('create refuses past maxActive with 409 too_many_keys; revoked and expired keys do not count', async () => {
      const limits = { maxActive: 2 };
      await h.store.keys.create(key({ id: 'a' }), limits);
      await h.store.keys.create(key({ id: 'b', expiresAt: h.start + 1000 }), limits);
      const error = await h.store.keys.create(key({ id: 'c' }), limits).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BreakwaterError);
      expect(error).toMatchObject({
        code: 'invalid_payload',
        status: 409,
        message: 'There are 2 active API keys, the most allowed: revoke unused keys before creating more.',
        details: { reason: 'too_many_keys', limit: 2 },
      });
      expect(await h.store.keys.get('c')).toBeUndefined();
      // b expires at start + 1000: at that instant it no longer counts.
      await h.store.keys.create(key({ id: 'c', createdAt: h.start + 1000 }), limits);
      await expect(h.store.keys.create(key({ id: 'd', createdAt: h.start + 1000 }), limits)).rejects.toThrow(
        'There are 2 active',
      );
      await h.store.keys.revoke('a', h.start + 1000);
      await h.store.keys.create(key({ id: 'd', createdAt: h.start + 1000 }), limits);
      expect(await h.store.keys.countActive(h.start + 1000)).toBe(2);
    });

    it('12 concurrent creates from two stores with maxActive 5: exactly 5 are stored', async () => {
      const other = await h.another();
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 === 0 ? h.store : other).keys.create(key({ id: `k${i}` }), { maxActive: 5 }),
        ),
      );
      const stored = results.filter((r) => r.status === 'fulfilled');
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(stored).toHaveLength(5);
      expect(refused.map((e: BreakwaterError) => e.details?.reason)).toEqual(Array(7).fill('too_many_keys'));
      expect(await h.store.keys.countActive(h.start)).toBe(5);
      expect(await h.store.keys.list()).toHaveLength(5);
    });

    it('list: newest first, revoked only with includeRevoked, pages through beforeId', async () => {
      for (const [i, id] of ['a', 'b', 'c', 'd', 'e'].entries()) {
        await h.store.keys.create(key({ id, createdAt: h.start + (i < 2 ? 0 : i) }));
      }
      await h.store.keys.revoke('c', h.start + 10);
      const ids = async (filter?: Parameters<typeof h.store.keys.list>[0]) =>
        (await h.store.keys.list(filter)).map((k) => k.id);
      // a and b share createdAt: the id breaks the tie (descending).
      expect(await ids()).toEqual(['e', 'd', 'b', 'a']);
      expect(await ids({ includeRevoked: true })).toEqual(['e', 'd', 'c', 'b', 'a']);
      expect(await ids({ includeRevoked: true, limit: 2 })).toEqual(['e', 'd']);
      expect(await ids({ includeRevoked: true, limit: 2, beforeId: 'd' })).toEqual(['c', 'b']);
      expect(await ids({ includeRevoked: true, limit: 2, beforeId: 'b' })).toEqual(['a']);
      expect(await ids({ beforeId: 'd' })).toEqual(['b', 'a']);
      // A revoked key still marks a page's end.
      expect(await ids({ beforeId: 'c' })).toEqual(['b', 'a']);
      expect(await ids({ beforeId: 'zz' })).toEqual([]);
      expect(await ids({ beforeId: 'bad id' })).toEqual([]);
      expect(await ids({ limit: 0 })).toEqual([]);
      expect(await ids({ limit: 2.9 })).toEqual(['e', 'd']);
      const full = await h.store.keys.list({ limit: 1 });
      expect(full).toEqual([{ ...key({ id: 'e', createdAt: h.start + 4 }), revokedAt: null }]);
      await expect(h.store.keys.list({ includeRevoked: 'yes' as never })).rejects.toThrow(
        'keys.list: includeRevoked must be a boolean',
      );
    });

    it('revoke sets revokedAt once (idempotent) and resolves the record; an unknown id resolves undefined', async () => {
      await h.store.keys.create(key());
      const revoked = await h.store.keys.revoke('k1', h.start + 5);
      expect(revoked).toEqual({ ...key(), revokedAt: h.start + 5 });
      expect(await h.store.keys.revoke('k1', h.start + 9)).toEqual(revoked);
      expect(await (await h.another()).keys.get('k1')).toEqual(revoked);
      expect(await h.store.keys.revoke('nope', h.start)).toBeUndefined();
      expect(await h.store.keys.revoke('bad id', h.start)).toBeUndefined();
      await expect(h.store.keys.revoke('k1', 1.5)).rejects.toThrow(
        'keys.revoke: at must be a safe integer (ms), got 1.5',
      );
    });

    it('countActive counts keys not revoked and not expired at now (expiry exclusive)', async () => {
      expect(await h.store.keys.countActive(h.start)).toBe(0);
      await h.store.keys.create(key({ id: 'a' }));
      await h.store.keys.create(key({ id: 'b', expiresAt: h.start + 100 }));
      await h.store.keys.create(key({ id: 'c' }));
      await h.store.keys.revoke('c', h.start);
      expect(await h.store.keys.countActive(h.start)).toBe(2);
      expect(await h.store.keys.countActive(h.start + 99)).toBe(2);
      expect(await h.store.keys.countActive(h.start + 100)).toBe(1);
      await expect(h.store.keys.countActive(Number.NaN)).rejects.toThrow(
        'keys.countActive: now must be a safe integer (ms)',
      );
    });

    it('prune deletes up to limit keys revoked or expired at or before the time; the rest stay', async () => {
      await h.store.keys.create(key({ id: 'live' }));
      await h.store.keys.create(key({ id: 'later', expiresAt: h.start + 1000 }));
      await h.store.keys.create(key({ id: 'soon', expiresAt: h.start + 100 }));
      await h.store.keys.create(key({ id: 'gone' }));
      await h.store.keys.revoke('gone', h.start + 50);
      expect(await h.store.keys.prune(h.start + 49)).toBe(0);
      expect(await h.store.keys.prune(h.start + 100, 1)).toBe(1);
      expect(await h.store.keys.prune(h.start + 100)).toBe(1);
      expect((await h.store.keys.list({ includeRevoked: true })).map((k) => k.id).sort()).toEqual([
        'later',
        'live',
      ]);
      await expect(h.store.keys.prune(h.start, -1)).rejects.toThrow(
        'keys.prune: limit must be an integer >= 0, got -1',
      );
    });

    it('every method rejects once the store is closed', async () => {
      const other = await h.another();
      await other.close();
      await expect(other.keys.get('k1')).rejects.toThrow(/closed/);
      await expect(other.keys.create(key())).rejects.toThrow(/closed/);
      await expect(other.keys.list()).rejects.toThrow(/closed/);
      await expect(other.keys.revoke('k1', h.start)).rejects.toThrow(/closed/);
      await expect(other.keys.countActive(h.start)).rejects.toThrow(/closed/);
      await expect(other.keys.prune(h.start)).rejects.toThrow(/closed/);
    });
  });
}
