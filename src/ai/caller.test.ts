import { describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../core/index.js';
import { PRINCIPALS, type Principal } from '../core/index.js';
import { callerMetadata, checkModelAllowed, isSharedCaller } from './caller.js';

function key(fields: Partial<Principal> = {}): Principal {
  return {
    id: 'key:k',
    kind: 'api_key',
    name: 'k',
    scopes: new Set(['ai']),
    metadata: { team: 'shop', plan: 'pro' },
    trustedBackend: false,
    ...fields,
  };
}

function thrown(fn: () => unknown): BreakwaterError {
  try {
    fn();
  } catch (error) {
    return error as BreakwaterError;
  }
  throw new Error('did not throw');
}

describe('callerMetadata', () => {
  it("no header: the key's bound metadata as it is (no copy); none for a request without a principal", () => {
    const k = key();
    expect(callerMetadata(k, undefined)).toBe(k.metadata);
    expect(callerMetadata(undefined, undefined)).toEqual({});
  });

  it('an untrusted key sending the header: 403 metadata_not_allowed, even when the header is malformed', () => {
    for (const header of ['{"user":"u1"}', 'not json', '{}']) {
      const e = thrown(() => callerMetadata(key(), header));
      expect([e.code, e.status, e.details]).toEqual([
        'unauthorized',
        403,
        { reason: 'metadata_not_allowed', header: 'x-breakwater-metadata' },
      ]);
    }
  });

  it('a trusted backend adds keys; a bound key keeps its value; another value for it is 403 metadata_key_bound', () => {
    const backend = key({ trustedBackend: true });
    expect(callerMetadata(backend, '{"user":"u1","team":"shop"}')).toEqual({
      user: 'u1',
      team: 'shop',
      plan: 'pro',
    });
    const e = thrown(() => callerMetadata(backend, '{"user":"u1","plan":"free"}'));
    expect([e.status, e.details]).toEqual([
      403,
      { reason: 'metadata_key_bound', header: 'x-breakwater-metadata', key: 'plan' },
    ]);
    // Compared as scopes compare them: as strings.
    const numeric = key({ trustedBackend: true, metadata: { tier: '2' } });
    expect(callerMetadata(numeric, '{"tier":2}')).toEqual({ tier: '2' });
  });

  it('no principal (library use) and the local principal: the header as sent; a malformed one is a 400', () => {
    expect(callerMetadata(undefined, '{"user":"u1"}')).toEqual({ user: 'u1' });
    expect(callerMetadata(PRINCIPALS.local, '{"user":"u1"}')).toEqual({ user: 'u1' });
    expect(thrown(() => callerMetadata(undefined, '[1]')).details).toEqual({
      reason: 'invalid_header',
      header: 'x-breakwater-metadata',
    });
    expect(thrown(() => callerMetadata(undefined, ['{}', '{}'])).message).toMatch(/sent once/);
  });
});

describe('checkModelAllowed and isSharedCaller', () => {
  it('a model the key does not list is 403 model_not_allowed; no list allows any', () => {
    const k = key({ ai: { allowedModels: ['openai/gpt-4o-mini', 'dynamic/gifts'] } });
    expect(() => checkModelAllowed(k, 'openai/gpt-4o-mini')).not.toThrow();
    expect(() => checkModelAllowed(k, 'dynamic/gifts')).not.toThrow();
    const e = thrown(() => checkModelAllowed(k, 'openai/gpt-4o'));
    expect([e.code, e.status, e.details]).toEqual([
      'unauthorized',
      403,
      { reason: 'model_not_allowed', field: 'model' },
    ]);
    expect(() => checkModelAllowed(key(), 'any/model')).not.toThrow();
    expect(() => checkModelAllowed(undefined, 'any/model')).not.toThrow();
  });

  it('local, anonymous, the gateway itself and no principal stand for everyone; keys and admin do not', () => {
    expect(
      [undefined, PRINCIPALS.local, PRINCIPALS.anonymous, PRINCIPALS.system].map(isSharedCaller),
    ).toEqual([true, true, true, true]);
    expect([key(), PRINCIPALS.admin].map(isSharedCaller)).toEqual([false, false]);
  });
});
