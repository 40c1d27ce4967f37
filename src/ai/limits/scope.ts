/**
 * Rule scopes: which requests a rate or spend rule counts, and which counter each one counts in.
 * - `{ by: 'provider' }`: one counter per provider; `{ by: 'provider', value: 'openai' }`: only that provider.
 * - `{ by: 'model' }`: one counter per `<provider>/<model>`; with `value`, only that model.
 * - `{ by: 'metadata', key: 'user' }`: one counter per value of metadata `user` (compared as strings; requests
 *   without the key share one counter, so leaving it out does not escape the rule); with `value` too, only
 *   requests whose `user` is that value, in one counter.
 * - `{ by: 'principal' }`: one counter per caller (`Principal.id`: an API key, an OAuth subject; a request
 *   without a principal counts as `local`); with `value`, only that principal ("each key gets 100 a minute").
 *
 * The metadata is the caller's (see ai/caller.ts): bound to its key or token, added to by a client header only
 * for a trusted backend.
 */
import { createHash } from 'node:crypto';
import { PRINCIPALS, type Principal } from '../../core/index.js';
import type { Metadata } from '../types.js';

/** Which requests a rule counts. */
export interface RuleScope {
  by: 'provider' | 'model' | 'metadata' | 'principal';
  /** The metadata key (required with `by: 'metadata'`, not allowed otherwise). */
  key?: string;
  /** Count only requests whose provider, model, metadata value or principal id is this one. */
  value?: string;
}

/** What a scope is matched against: the step about to call a provider, the request's metadata and caller. */
export interface LimitTarget {
  provider: string;
  model: string;
  metadata: Metadata;
  /** Who is calling; undefined (library use without the HTTP edge) counts as `PRINCIPALS.local`. */
  principal?: Principal;
}

/** Longest encoded scope value kept as it is in a counter key; a longer one is hashed. */
const MAX_PLAIN_VALUE = 200;

/**
 * The counter suffix `target` falls in under `scope`, or undefined when the rule does not apply to it.
 * The suffix is `v:<URI-encoded value>` (`h:<sha256>` when long) or `none` (metadata key absent).
 */
export function scopeKey(scope: RuleScope, target: LimitTarget): string | undefined {
  let value: string | undefined;
  switch (scope.by) {
    case 'provider':
      value = target.provider;
      break;
    case 'model':
      value = `${target.provider}/${target.model}`;
      break;
    case 'principal':
      value = (target.principal ?? PRINCIPALS.local).id;
      break;
    case 'metadata': {
      const raw = target.metadata[scope.key ?? ''];
      value = raw === undefined ? undefined : String(raw);
      if (value === undefined) return scope.value === undefined ? 'none' : undefined;
      break;
    }
  }
  if (scope.value !== undefined && value !== scope.value) return undefined;
  return encodeValue(value, MAX_PLAIN_VALUE);
}

/** `v:<URI-encoded value>` when that is at most `maxPlain` characters, else `h:<sha256 hex of value>`. */
export function encodeValue(value: string, maxPlain: number): string {
  const encoded = encodeURIComponent(value);
  return encoded.length <= maxPlain
    ? `v:${encoded}`
    : `h:${createHash('sha256').update(value).digest('hex')}`;
}
