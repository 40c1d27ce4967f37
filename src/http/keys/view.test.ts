import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import type { ApiKeyRecord } from '../../store/index.js';
import { parseKey, readApiKeyBody, toApiKeyView } from './index.js';

const T0 = Date.UTC(2026, 0, 1);

const record: ApiKeyRecord = {
  id: '0123456789abcdef',
  name: 'ci-bot',
  hash: 'f'.repeat(64),
  scopes: ['mcp', 'ai'],
  metadata: { user: 'alice' },
  trustedBackend: true,
  ai: {
    allowedModels: ['openai/gpt-4o-mini'],
    budgets: [{ limitUsd: 5, windowMs: 86_400_000 }],
    rateRules: [{ limit: 100, windowMs: 60_000, window: 'sliding' }],
  },
  createdAt: T0,
  expiresAt: T0 + 1000,
  revokedAt: null,
};

describe('toApiKeyView', () => {
  it('shows a key in snake_case with ISO times and its state, never its hash', () => {
    const view = toApiKeyView(record, T0);
    expect(view).toEqual({
      id: '0123456789abcdef',
      principal_id: 'key:0123456789abcdef',
      name: 'ci-bot',
      scopes: ['mcp', 'ai'],
      metadata: { user: 'alice' },
      trusted_backend: true,
      ai: {
        allowed_models: ['openai/gpt-4o-mini'],
        budgets: [{ limit_usd: 5, window_ms: 86_400_000, window: 'fixed' }],
        rate_rules: [{ limit: 100, window_ms: 60_000, window: 'sliding' }],
      },
      state: 'active',
      created_at: '2026-01-01T00:00:00.000Z',
      expires_at: '2026-01-01T00:00:01.000Z',
      revoked_at: null,
    });
    expect(JSON.stringify(view)).not.toContain('ffff');
    expect(toApiKeyView(record, T0 + 1000).state).toBe('expired');
    expect(toApiKeyView({ ...record, revokedAt: T0 + 5000 }, T0 + 2000)).toMatchObject({
      state: 'revoked',
      revoked_at: '2026-01-01T00:00:05.000Z',
    });
    expect(toApiKeyView({ ...record, ai: null, expiresAt: null }, T0)).toMatchObject({
      ai: null,
      expires_at: null,
      state: 'active',
    });
  });
});

describe('readApiKeyBody', () => {
  it('maps the admin API body (snake_case) to the input', () => {
    expect(
      readApiKeyBody({
        name: 'ci-bot',
        scopes: ['mcp'],
        metadata: { user: 'alice' },
        trusted_backend: true,
        expires_at: '2030-01-01T00:00:00Z',
        ai: {
          allowed_models: ['openai/gpt-4o-mini'],
          budgets: [{ limit_usd: 5, window_ms: 86_400_000 }],
          rate_rules: [{ limit: 100, window_ms: 60_000, window: 'sliding' }],
        },
      }),
    ).toEqual({
      name: 'ci-bot',
      scopes: ['mcp'],
      metadata: { user: 'alice' },
      trustedBackend: true,
      expiresAt: Date.UTC(2030, 0, 1),
      ai: {
        allowedModels: ['openai/gpt-4o-mini'],
        budgets: [{ limitUsd: 5, windowMs: 86_400_000, window: undefined }],
        rateRules: [{ limit: 100, windowMs: 60_000, window: 'sliding' }],
      },
    });
    expect(readApiKeyBody({ name: 'k', scopes: ['ai'], expires_in_ms: 5000, ai: null })).toEqual({
      name: 'k',
      scopes: ['ai'],
      expiresInMs: 5000,
    });
  });

  it('names a bad field in the body’s own terms', () => {
    const cases: [unknown, string][] = [
      [
        { name: 'k', scopes: ['ai'], expires_at: 'tomorrow' },
        "The key's expires_at is invalid: Invalid ISO datetime.",
      ],
      [
        { name: 'k', scopes: ['ai'], expires_at: '2030-01-01T00:00:00Z', expires_in_ms: 5 },
        "The key's expires_at is invalid: give expires_at or expires_in_ms, not both.",
      ],
      [
        { name: 'k', scopes: ['ai'], ai: { budgets: [{ limitUsd: 5, window_ms: 1 }] } },
        "The key's ai.budgets.0.limit_usd is invalid: is required.",
      ],
      [
        { name: 'k', scopes: ['ai'], trustedBackend: true },
        "The key's trustedBackend is invalid: is not a field a key has.",
      ],
      [null, "The key's body must be a JSON object (Invalid input: expected object, received null)."],
    ];
    for (const [body, message] of cases) {
      let error: unknown;
      try {
        readApiKeyBody(body);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(BreakwaterError);
      expect([(error as BreakwaterError).status, (error as Error).message]).toEqual([400, message]);
    }
  });
});

describe('parseKey', () => {
  it('reads the id and secret of a well-formed key only', () => {
    const secret = 'A'.repeat(42) + '_';
    expect(parseKey(`bw_0123456789abcdef_${secret}`)).toEqual({ id: '0123456789abcdef', secret });
    for (const bad of [
      `bw_0123456789ABCDEF_${secret}`,
      `bw_0123456789abcde_${secret}x`,
      `bw_0123456789abcdef_${secret.slice(1)}=`,
      `bw_0123456789abcdef_${secret}\n`,
      undefined,
    ]) {
      expect(parseKey(bad)).toBeUndefined();
    }
  });
});
