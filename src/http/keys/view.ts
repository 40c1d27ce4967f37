import type { ApiKeyRecord } from '../../store/index.js';

/** Where a key stands at a given time: `revoked` wins over `expired`. */
export type ApiKeyState = 'active' | 'expired' | 'revoked';

/**
 * A key as the admin API and `breakwater keys list --json` show it: snake_case, times in ISO 8601, never the
 * secret nor its hash.
 */
export interface ApiKeyView {
  id: string;
  /** What jobs, tasks and operations it starts record as their owner (`key:<id>`). */
  principal_id: string;
  name: string;
  scopes: string[];
  metadata: Record<string, string>;
  trusted_backend: boolean;
  ai: {
    allowed_models?: string[];
    budgets?: { limit_usd: number; window_ms: number; window: 'fixed' | 'sliding' }[];
    rate_rules?: { limit: number; window_ms: number; window: 'fixed' | 'sliding' }[];
  } | null;
  state: ApiKeyState;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** The key's state at `now` (ms). */
export function keyState(record: ApiKeyRecord, now: number): ApiKeyState {
  if (record.revokedAt !== null) return 'revoked';
  return record.expiresAt !== null && now >= record.expiresAt ? 'expired' : 'active';
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** `record` as an {@link ApiKeyView} at `now` (ms). */
export function toApiKeyView(record: ApiKeyRecord, now: number): ApiKeyView {
  const ai = record.ai;
  return {
    id: record.id,
    principal_id: `key:${record.id}`,
    name: record.name,
    scopes: [...record.scopes],
    metadata: { ...record.metadata },
    trusted_backend: record.trustedBackend,
    ai:
      ai === null
        ? null
        : {
            ...(ai.allowedModels === undefined ? {} : { allowed_models: [...ai.allowedModels] }),
            ...(ai.budgets === undefined
              ? {}
              : {
                  budgets: ai.budgets.map((r) => ({
                    limit_usd: r.limitUsd,
                    window_ms: r.windowMs,
                    window: r.window ?? 'fixed',
                  })),
                }),
            ...(ai.rateRules === undefined
              ? {}
              : {
                  rate_rules: ai.rateRules.map((r) => ({
                    limit: r.limit,
                    window_ms: r.windowMs,
                    window: r.window ?? 'fixed',
                  })),
                }),
          },
    state: keyState(record, now),
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: iso(record.expiresAt),
    revoked_at: iso(record.revokedAt),
  };
}
