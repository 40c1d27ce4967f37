/**
 * Scopes of an OAuth access token as Breakwater reads them: which Breakwater scopes (core's `SCOPES`) a token
 * scope grants, and which scopes a tool asks for. Pure functions; the verifier and the MCP front call them.
 */
import {
  BreakwaterError,
  SCOPES,
  hasScope,
  invalidOption,
  type Principal,
  type Scope,
} from '../../core/index.js';

/** Token scope → the Breakwater scopes it grants, e.g. `{ 'gateway:tools': ['mcp'] }`. */
export type ScopeMap = Readonly<Record<string, readonly Scope[]>>;

/** The default {@link ScopeMap}: each Breakwater scope, as a token scope, grants itself (`mcp` → `mcp`, …). */
export const DEFAULT_SCOPE_MAP: ScopeMap = Object.freeze(
  Object.fromEntries(SCOPES.map((scope) => [scope, Object.freeze([scope])])),
);

/** RFC 6749, section 3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** True when `value` is one RFC 6749 scope token (printable ASCII, no space, `"` or `\`). */
export function isScopeToken(value: unknown): value is string {
  return typeof value === 'string' && SCOPE_TOKEN.test(value);
}

const BREAKWATER_SCOPES: ReadonlySet<string> = new Set(SCOPES);

/**
 * The scopes a principal holds for a token that carries `tokenScopes`: the Breakwater scopes `scopeMap` maps
 * them to, plus every token scope that is not itself a Breakwater scope name (so a tool can require its own
 * scope, e.g. `checkout:write`). A token scope spelled like a Breakwater scope (`admin`) counts only through
 * the map: with a custom map that does not list it, it grants nothing, so an authorization server's `admin`
 * for some other purpose never becomes Breakwater's `admin`.
 */
export function principalScopes(tokenScopes: Iterable<string>, scopeMap: ScopeMap): Set<string> {
  const held = new Set<string>();
  for (const scope of tokenScopes) {
    const mapped = Object.prototype.hasOwnProperty.call(scopeMap, scope) ? scopeMap[scope] : undefined;
    for (const granted of mapped ?? []) held.add(granted);
    if (!BREAKWATER_SCOPES.has(scope)) held.add(scope);
  }
  return held;
}

/** The token scopes that `scopeMap` maps to `scope`, in the map's order (e.g. `mcp` → `['mcp']`). */
export function tokenScopesGranting(scopeMap: ScopeMap, scope: Scope): string[] {
  return Object.keys(scopeMap).filter((tokenScope) => scopeMap[tokenScope]!.includes(scope));
}

/**
 * Checks a `scopeMap` option: an object whose keys are scope tokens and whose values are non-empty arrays of
 * Breakwater scopes (core's `SCOPES`).
 * @returns a frozen copy, or {@link DEFAULT_SCOPE_MAP} when `value` is undefined.
 * @throws RangeError naming `owner` and `scopeMap`.
 */
export function scopeMapOption(owner: string, value: unknown): ScopeMap {
  if (value === undefined) return DEFAULT_SCOPE_MAP;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidOption(owner, 'scopeMap', 'an object { [tokenScope]: Scope[] }', value);
  }
  const copy: Record<string, readonly Scope[]> = {};
  for (const [tokenScope, granted] of Object.entries(value)) {
    if (!isScopeToken(tokenScope)) {
      throw invalidOption(owner, 'scopeMap', 'keyed by scope tokens (printable ASCII, no space)', tokenScope);
    }
    if (
      !Array.isArray(granted) ||
      granted.length === 0 ||
      !granted.every((scope) => BREAKWATER_SCOPES.has(scope as string))
    ) {
      throw invalidOption(
        owner,
        `scopeMap['${tokenScope}']`,
        `a non-empty array of ${SCOPES.join(', ')}`,
        granted,
      );
    }
    copy[tokenScope] = Object.freeze([...new Set(granted as Scope[])]);
  }
  if (Object.keys(copy).length === 0) {
    throw invalidOption(owner, 'scopeMap', 'an object with at least one entry (or left out)', value);
  }
  return Object.freeze(copy);
}

/** What a tool may declare about itself for authorization. */
export interface ScopedTool {
  /** The tool's name (for the error message). */
  readonly name: string;
  /** Token scopes a caller must hold to call the tool (all of them). Absent or empty: none beyond `mcp`. */
  readonly scopes?: readonly string[];
}

/**
 * The scopes a tool requires: its declared `scopes`, without duplicates, in order.
 * @throws RangeError when a declared scope is not a scope token (a tool definition's mistake, found at startup).
 */
export function requiredScopesFor(tool: ScopedTool): readonly string[] {
  const scopes = tool.scopes ?? [];
  if (!Array.isArray(scopes))
    throw invalidOption(`tool '${tool.name}'`, 'scopes', 'an array of scope tokens', scopes);
  for (const scope of scopes) {
    if (!isScopeToken(scope)) {
      throw invalidOption(`tool '${tool.name}'`, 'scopes', 'scope tokens (printable ASCII, no space)', scope);
    }
  }
  return [...new Set(scopes)];
}

/**
 * The scopes of `requiredScopes` that `principal` lacks, in order; empty when it may go ahead. `admin` holds
 * every scope (core's `hasScope`), as it does everywhere else.
 */
export function missingScopes(principal: Principal, requiredScopes: readonly string[]): string[] {
  return requiredScopes.filter((scope) => !hasScope(principal, scope));
}

/** True when `principal` holds every scope of `requiredScopes` (see {@link missingScopes}). */
export function canCallTool(principal: Principal, requiredScopes: readonly string[]): boolean {
  return missingScopes(principal, requiredScopes).length === 0;
}

/**
 * The error for a call the principal lacks scopes for: `BreakwaterError('unauthorized')` with status 403 and
 * `details: { reason: 'insufficient_scope', required_scopes, missing_scopes }` (RFC 6750, section 3.1; the MCP
 * authorization spec's "Scope Challenge Handling"). The OAuth verifier's `challengeFor` turns it into the
 * `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` header.
 */
export function insufficientScope(
  what: string,
  requiredScopes: readonly string[],
  missing: readonly string[],
): BreakwaterError {
  return new BreakwaterError('unauthorized', {
    status: 403,
    message: `${what} needs the scope${missing.length === 1 ? '' : 's'} ${missing.join(', ')}, which the credential does not hold.`,
    details: {
      reason: 'insufficient_scope',
      required_scopes: [...requiredScopes],
      missing_scopes: [...missing],
    },
  });
}

/**
 * Throws {@link insufficientScope} unless `principal` may call `tool` (see {@link canCallTool}).
 * @throws BreakwaterError `unauthorized`, status 403, reason `insufficient_scope`.
 */
export function assertCanCallTool(principal: Principal, tool: ScopedTool): void {
  const required = requiredScopesFor(tool);
  const missing = missingScopes(principal, required);
  if (missing.length > 0) throw insufficientScope(`The tool '${tool.name}'`, required, missing);
}
