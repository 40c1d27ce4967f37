import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, type Principal } from '../../core/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { type ApiKeyRecord, type ApiKeyStore, type Store } from '../../store/index.js';
import { API_KEY_PATTERN, createApiKeys, type ApiKeys } from './index.js';

/** ApiKeys over a real SQLite file; a second store on the same file stands for another process. */
describe('createApiKeys', () => {
  let dir: string;
  let clock: FakeClock;
  let store: Store;
  let other: Store | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-api-keys-'));
    clock = new FakeClock();
    store = await openSqliteStore({ path: join(dir, 'store.db'), clock, watchMs: 0 });
  });
  afterEach(async () => {
    await other?.close();
    other = undefined;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const anotherProcess = async () => {
    other = await openSqliteStore({ path: join(dir, 'store.db'), clock, watchMs: 0 });
    return other;
  };

  /** The error `promise` rejects with (fails the test when it resolves). */
  async function refusal(promise: Promise<unknown>): Promise<BreakwaterError> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BreakwaterError);
    return error as BreakwaterError;
  }

  /** The reason of a verification's 401, checking its message never holds the presented secret. */
  async function refusedReason(keys: ApiKeys, presented: string): Promise<string> {
    const error = await refusal(keys.verify(presented));
    expect([error.code, error.status]).toEqual(['unauthorized', 401]);
    const secret = String(presented).slice(20);
    if (secret.length > 8) {
      expect(error.message).not.toContain(secret);
      expect(JSON.stringify(error.details)).not.toContain(secret);
    }
    return String(error.details?.reason);
  }

  it('create returns the key once and stores only the SHA-256 of its secret; verify gives its principal', async () => {
    const keys = createApiKeys({ store, clock });
    const { key, record } = await keys.create({
      name: 'ci-bot',
      scopes: ['mcp', 'ai', 'mcp'],
      metadata: { user: 'alice', team: 'red', plan: 'pro' },
      trustedBackend: true,
      expiresInMs: 30 * 86_400_000,
      ai: {
        allowedModels: ['openai/gpt-4o-mini'],
        budgets: [{ limitUsd: 5, windowMs: 86_400_000 }],
        rateRules: [{ limit: 100, windowMs: 60_000, window: 'sliding' }],
      },
    });
    const match = API_KEY_PATTERN.exec(key)!;
    expect(key).toHaveLength(63);
    expect(match[1]).toBe(record.id);
    const expected: ApiKeyRecord = {
      id: record.id,
      name: 'ci-bot',
      hash: createHash('sha256').update(match[2]!).digest('hex'),
      scopes: ['mcp', 'ai'],
      metadata: { user: 'alice', team: 'red', plan: 'pro' },
      trustedBackend: true,
      ai: {
        allowedModels: ['openai/gpt-4o-mini'],
        budgets: [{ limitUsd: 5, windowMs: 86_400_000, window: 'fixed' }],
        rateRules: [{ limit: 100, windowMs: 60_000, window: 'sliding' }],
      },
      createdAt: clock.now(),
      expiresAt: clock.now() + 30 * 86_400_000,
      revokedAt: null,
    };
    expect(record).toEqual(expected);
    expect(await store.keys.get(record.id)).toEqual(expected);
    expect(JSON.stringify(await store.keys.get(record.id))).not.toContain(match[2]);

    const principal = await keys.verify(key);
    expect(principal).toEqual({
      id: `key:${record.id}`,
      kind: 'api_key',
      name: 'ci-bot',
      scopes: new Set(['mcp', 'ai']),
      metadata: { user: 'alice', team: 'red', plan: 'pro' },
      trustedBackend: true,
      ai: expected.ai!,
    } satisfies Principal);
    expect(Object.isFrozen(principal) && Object.isFrozen(principal.metadata)).toBe(true);
    // Another process verifies it from the store alone.
    expect((await createApiKeys({ store: await anotherProcess(), clock }).verify(key)).id).toBe(
      `key:${record.id}`,
    );

    const second = await keys.create({ name: 'ci-bot', scopes: ['jobs'] });
    expect(second.record.id).not.toBe(record.id);
    expect(second.key).not.toBe(key);
    expect(await keys.verify(second.key)).toEqual({
      id: `key:${second.record.id}`,
      kind: 'api_key',
      name: 'ci-bot',
      scopes: new Set(['jobs']),
      metadata: {},
      trustedBackend: false,
    });
  });

  it('verify refuses every wrong key as invalid_key; revoked and expired only once the secret matched', async () => {
    const keys = createApiKeys({ store, clock });
    const { key, record } = await keys.create({ name: 'k', scopes: ['ai'], expiresInMs: 60_000 });
    const wrongSecret = `${key.slice(0, 20)}${key[20] === 'A' ? 'B' : 'A'}${key.slice(21)}`;
    const unknownId = `bw_${'0'.repeat(16)}${key.slice(19)}`;
    for (const presented of [
      '',
      'Bearer ' + key,
      key.toUpperCase(),
      key.slice(0, -1),
      `${key}x`,
      key.replace('bw_', 'sk_'),
      ` ${key.slice(1)}`,
      unknownId,
      wrongSecret,
    ]) {
      expect([presented, await refusedReason(keys, presented)]).toEqual([presented, 'invalid_key']);
    }
    expect(await refusedReason(keys, 42 as never)).toBe('invalid_key');

    clock.tick(59_999);
    expect((await keys.verify(key)).id).toBe(`key:${record.id}`);
    clock.tick(1);
    const expired = await refusal(keys.verify(key));
    expect(expired.message).toBe(
      `The API key ${record.id} expired at ${new Date(record.expiresAt!).toISOString()}.`,
    );
    expect(expired.details).toEqual({ reason: 'expired' });

    await keys.revoke(record.id);
    const revoked = await refusal(keys.verify(key));
    expect([revoked.message, revoked.details]).toEqual([
      `The API key ${record.id} was revoked.`,
      { reason: 'revoked' },
    ]);
    // A wrong secret for a revoked key learns nothing about it.
    const wrong = await refusal(keys.verify(wrongSecret));
    expect([wrong.message, wrong.details]).toEqual(['The API key is not valid.', { reason: 'invalid_key' }]);
  });

  it('a revoke here takes effect at once; one from another process within cacheMs', async () => {
    const gateway = createApiKeys({ store, clock, cacheMs: 5_000 });
    const cli = createApiKeys({ store: await anotherProcess(), clock });
    const { key, record } = await cli.create({ name: 'k', scopes: ['mcp'] });
    await gateway.verify(key); // read and cached at t0
    await cli.revoke(record.id);
    clock.tick(4_999);
    expect((await gateway.verify(key)).id).toBe(`key:${record.id}`);
    clock.tick(1);
    expect(await refusedReason(gateway, key)).toBe('revoked');

    const second = await gateway.create({ name: 'k2', scopes: ['mcp'] });
    await gateway.verify(second.key);
    await gateway.revoke(second.record.id);
    expect(await refusedReason(gateway, second.key)).toBe('revoked');

    // cacheMs 0: every verification reads the store.
    const uncached = createApiKeys({ store, clock, cacheMs: 0 });
    const third = await cli.create({ name: 'k3', scopes: ['mcp'] });
    await uncached.verify(third.key);
    await cli.revoke(third.record.id);
    expect(await refusedReason(uncached, third.key)).toBe('revoked');
  });

  it('the cache holds at most maxCachedKeys keys, the oldest leaving first', async () => {
    const gateway = createApiKeys({ store, clock, maxCachedKeys: 1 });
    const cli = createApiKeys({ store: await anotherProcess(), clock });
    const a = await cli.create({ name: 'a', scopes: ['mcp'] });
    const b = await cli.create({ name: 'b', scopes: ['mcp'] });
    await gateway.verify(a.key);
    await gateway.verify(b.key); // a leaves the cache
    await cli.revoke(a.record.id);
    await cli.revoke(b.record.id);
    expect((await gateway.verify(b.key)).name).toBe('b'); // still cached
    expect(await refusedReason(gateway, a.key)).toBe('revoked'); // read again
  });

  /**
   * `store.keys` whose reads wait for `gate` after reading (a slow replica), counting them, and whose
   * revokes wait for `revokeGate` before writing (a slow commit).
   */
  function slowReads(keys: ApiKeyStore) {
    let open: () => void = () => undefined;
    let openRevoke: () => void = () => undefined;
    const state = { reads: 0, gate: Promise.resolve(), revokeGate: Promise.resolve() };
    const hold = () => {
      state.gate = new Promise<void>((resolve) => (open = resolve));
    };
    const holdRevokes = () => {
      state.revokeGate = new Promise<void>((resolve) => (openRevoke = resolve));
    };
    const facet: ApiKeyStore = {
      create: (...args) => keys.create(...args),
      list: (...args) => keys.list(...args),
      async revoke(...args) {
        await state.revokeGate;
        return keys.revoke(...args);
      },
      countActive: (...args) => keys.countActive(...args),
      prune: (...args) => keys.prune(...args),
      async get(id) {
        state.reads++;
        const record = await keys.get(id);
        await state.gate;
        return record;
      },
    };
    return { facet, state, hold, release: () => open(), holdRevokes, releaseRevokes: () => openRevoke() };
  }

  it('a lookup in flight across a revoke here never fills the cache with the record it read before', async () => {
    const slow = slowReads(store.keys);
    const keys = createApiKeys({ store: { keys: slow.facet }, clock });
    const { key, record } = await keys.create({ name: 'k', scopes: ['mcp'] });
    slow.hold();
    const before = keys.verify(key); // reads the record unrevoked, then waits
    await new Promise((resolve) => setImmediate(resolve));
    await keys.revoke(record.id);
    slow.release();
    // It began before the revoke: it may pass. The next one must not be answered from what it read.
    expect((await before).id).toBe(`key:${record.id}`);
    expect(await refusedReason(keys, key)).toBe('revoked');
  });

  it('a lookup made while a revoke here is being written is not served after it', async () => {
    const slow = slowReads(store.keys);
    const keys = createApiKeys({ store: { keys: slow.facet }, clock });
    const { key, record } = await keys.create({ name: 'k', scopes: ['mcp'] });
    slow.holdRevokes();
    const revoking = keys.revoke(record.id); // not written yet
    expect((await keys.verify(key)).id).toBe(`key:${record.id}`); // reads it unrevoked
    slow.releaseRevokes();
    expect((await revoking)!.revokedAt).toBe(clock.now());
    expect(await refusedReason(keys, key)).toBe('revoked');

    // The same with the read still in flight when the revoke ends.
    const second = await keys.create({ name: 'k2', scopes: ['mcp'] });
    slow.holdRevokes();
    const again = keys.revoke(second.record.id);
    slow.hold();
    const during = keys.verify(second.key);
    await new Promise((resolve) => setImmediate(resolve));
    slow.releaseRevokes();
    await again;
    slow.release();
    expect((await during).id).toBe(`key:${second.record.id}`);
    expect(await refusedReason(keys, second.key)).toBe('revoked');
  });

  it('concurrent verifications of one key share one store read', async () => {
    const slow = slowReads(store.keys);
    const keys = createApiKeys({ store: { keys: slow.facet }, clock });
    const { key } = await keys.create({ name: 'k', scopes: ['mcp'] });
    slow.hold();
    const all = Promise.all(Array.from({ length: 10 }, () => keys.verify(key)));
    await new Promise((resolve) => setImmediate(resolve));
    slow.release();
    expect((await all).map((p) => p.name)).toEqual(Array(10).fill('k'));
    expect(slow.state.reads).toBe(1);
    await keys.verify(key);
    expect(slow.state.reads).toBe(1); // cached
    clock.tick(5_000);
    await keys.verify(key);
    expect(slow.state.reads).toBe(2);
  });

  it('create checks its input and names the field: 400 invalid_payload, nothing stored', async () => {
    const keys = createApiKeys({ store, clock });
    const cases: [unknown, string, string][] = [
      [
        { name: 'k', scopes: ['root'] },
        'scopes.0',
        'Invalid option: expected one of "mcp"|"ai"|"jobs"|"metrics"|"admin"',
      ],
      [{ name: 'k', scopes: [] }, 'scopes', 'Too small: expected array to have >=1 items'],
      [{ name: '', scopes: ['ai'] }, 'name', 'Too small: expected string to have >=1 characters'],
      [{ name: '   ', scopes: ['ai'] }, 'name', 'must not be blank'],
      [
        { name: 'x'.repeat(101), scopes: ['ai'] },
        'name',
        'Too big: expected string to have <=100 characters',
      ],
      [{ name: 'a\u001b[31m', scopes: ['ai'] }, 'name', 'must not hold control characters'],
      [
        { name: 'k', scopes: ['ai'], metadata: { 'user id': 'a' } },
        'metadata.user id',
        'keys must be 1 to 64 of A-Z a-z 0-9 _ . -',
      ],
      [
        { name: 'k', scopes: ['ai'], metadata: { user: 'a'.repeat(201) } },
        'metadata.user',
        'Too big: expected string to have <=200 characters',
      ],
      [
        { name: 'k', scopes: ['ai'], metadata: { user: 1 } },
        'metadata.user',
        'Invalid input: expected string, received number',
      ],
      [
        {
          name: 'k',
          scopes: ['ai'],
          metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])),
        },
        'metadata',
        'must have at most 20 keys',
      ],
      [
        { name: 'k', scopes: ['ai'], metadata: JSON.parse('{"__proto__":"x"}') },
        'metadata',
        'keys must not be __proto__',
      ],
      [{ name: 'k', scopes: ['ai'], expiresInMs: 0 }, 'expiresInMs', 'Too small: expected number to be >=1'],
      [
        { name: 'k', scopes: ['ai'], expiresInMs: 1, expiresAt: clock.now() + 5 },
        'expiresAt',
        'give expiresAt or expiresInMs, not both',
      ],
      [
        { name: 'k', scopes: ['ai'], expiresAt: clock.now() },
        'expiresAt',
        `the key would expire at ${new Date(clock.now()).toISOString()}, which is not in the future`,
      ],
      [
        { name: 'k', scopes: ['ai'], ai: { budgets: [{ limitUsd: 0, windowMs: 1000 }] } },
        'ai.budgets.0.limitUsd',
        'Too small: expected number to be >0',
      ],
      [
        { name: 'k', scopes: ['ai'], ai: { rateRules: [{ limit: 1.5, windowMs: 1000 }] } },
        'ai.rateRules.0.limit',
        'Invalid input: expected int, received number',
      ],
      [
        { name: 'k', scopes: ['ai'], ai: { rateRules: [{ limit: 1, windowMs: 1000, window: 'rolling' }] } },
        'ai.rateRules.0.window',
        'Invalid option: expected one of "fixed"|"sliding"',
      ],
      [
        { name: 'k', scopes: ['ai'], ai: { allowedModels: [] } },
        'ai.allowedModels',
        'Too small: expected array to have >=1 items',
      ],
      [{ name: 'k', scopes: ['ai'], ai: { models: ['a'] } }, 'ai.models', 'is not a field a key has'],
      [{ name: 'k', scopes: ['ai'], owner: 'x' }, 'owner', 'is not a field a key has'],
      [{ scopes: ['ai'] }, 'name', 'is required'],
    ];
    for (const [input, field, message] of cases) {
      const error = await refusal(keys.create(input as never));
      expect([field, error.code, error.status, error.message, error.details?.field]).toEqual([
        field,
        'invalid_payload',
        400,
        `The key's ${field} is invalid: ${message}.`,
        field,
      ]);
    }
    const notObject = await refusal(keys.create('k' as never));
    expect(notObject.message).toBe(
      "The key's input must be a JSON object (Invalid input: expected object, received string).",
    );
    expect(await store.keys.list({ includeRevoked: true })).toEqual([]);
  });

  it('create normalises: an expiry from expiresAt, AI limits with nothing in them are none', async () => {
    const keys = createApiKeys({ store, clock });
    const at = clock.now() + 1000;
    const a = await keys.create({ name: 'k', scopes: ['ai'], expiresAt: at, ai: {} });
    expect([a.record.expiresAt, a.record.ai]).toEqual([at, null]);
    const b = await keys.create({
      name: 'k',
      scopes: ['ai'],
      expiresAt: null,
      ai: { budgets: [], rateRules: [] },
    });
    expect([b.record.expiresAt, b.record.ai]).toEqual([null, null]);
  });

  it('create past maxActive is 409 too_many_keys; revoked keys make room', async () => {
    const keys = createApiKeys({ store, clock, maxActive: 1 });
    const first = await keys.create({ name: 'a', scopes: ['mcp'] });
    const error = await refusal(keys.create({ name: 'b', scopes: ['mcp'] }));
    expect([error.status, error.details]).toEqual([409, { reason: 'too_many_keys', limit: 1 }]);
    expect(await keys.countActive()).toBe(1);
    await keys.revoke(first.record.id);
    expect(await keys.countActive()).toBe(0);
    await keys.create({ name: 'b', scopes: ['mcp'] });
    expect((await keys.list()).map((k) => k.name)).toEqual(['b']);
    expect((await keys.list({ includeRevoked: true })).map((k) => k.name).sort()).toEqual(['a', 'b']);
    expect((await keys.get(first.record.id))?.revokedAt).toBe(clock.now());
    expect(await keys.revoke('ffffffffffffffff')).toBeUndefined();
  });

  it('refuses bad options with a RangeError naming them', () => {
    expect(() => createApiKeys({ store, cacheMs: -1 })).toThrow(
      'createApiKeys: cacheMs must be a finite number >= 0, got -1',
    );
    expect(() => createApiKeys({ store, maxCachedKeys: 0 })).toThrow(
      'createApiKeys: maxCachedKeys must be an integer >= 1',
    );
    expect(() => createApiKeys({ store, maxActive: 1.5 })).toThrow(
      'createApiKeys: maxActive must be an integer >= 1',
    );
    expect(() => createApiKeys({ store: {} as never })).toThrow(
      'createApiKeys: store must be an object with a keys facet',
    );
  });
});
