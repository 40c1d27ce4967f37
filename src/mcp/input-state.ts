/**
 * The `requestState` of a call that asks the user on 2026-07-28 (docs/mcp.md#asking-the-user-during-a-call):
 * what it carries, and the hash of the request it is bound to. `sdk-v2.ts` signs and checks it.
 */
import { createHash } from 'node:crypto';

/**
 * What `requestState` carries, signed by `sdk-v2.ts` (readable by the client, not changeable): the round it
 * closed, the answers kept, the {@link stateTarget} of the request it answers and its expiry (ms since the
 * epoch on the server's clock).
 */
export interface SealedState {
  r: number;
  a: Record<string, unknown>;
  t: string;
  e: number;
}

/** True for a {@link SealedState}. */
export function isSealedState(value: unknown): value is SealedState {
  if (typeof value !== 'object' || value === null) return false;
  const state = value as Record<string, unknown>;
  return (
    Number.isInteger(state['r']) &&
    typeof state['a'] === 'object' &&
    state['a'] !== null &&
    typeof state['t'] === 'string' &&
    typeof state['e'] === 'number'
  );
}

/** The hash a `requestState` is bound to: the method, the name (tool, prompt, URI) and the arguments. */
export function stateTarget(method: string, name: string, args: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([method, name, canonical(args)]))
    .digest('base64url');
}

/** `value` with every object's keys sorted, so equal arguments hash alike whatever their key order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
  return Object.fromEntries(entries.map(([key, item]) => [key, canonical(item)]));
}
