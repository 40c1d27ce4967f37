import { describe, expect, it } from 'vitest';
import { BreakwaterError, PRINCIPALS, type Principal } from '../../core/index.js';
import {
  DEFAULT_SCOPE_MAP,
  assertCanCallTool,
  canCallTool,
  missingScopes,
  principalScopes,
  requiredScopesFor,
} from './scopes.js';

function principal(scopes: string[]): Principal {
  return {
    id: 'oauth:https://as.example.com alice',
    kind: 'oauth',
    name: 'alice',
    scopes: new Set(scopes),
    metadata: {},
    trustedBackend: false,
  };
}

describe('principalScopes', () => {
  it('maps Breakwater scope names to themselves by default and keeps other token scopes as they are', () => {
    expect([...principalScopes(['mcp', 'admin', 'checkout:write'], DEFAULT_SCOPE_MAP)].sort()).toEqual([
      'admin',
      'checkout:write',
      'mcp',
    ]);
  });

  it('with a custom map, a token scope spelled like a Breakwater scope grants only what the map says', () => {
    const held = principalScopes(['gw', 'admin', 'jobs'], { gw: ['mcp', 'jobs'] });
    expect([...held].sort()).toEqual(['gw', 'jobs', 'mcp']);
  });

  it('ignores inherited property names', () => {
    expect([...principalScopes(['constructor', 'toString'], DEFAULT_SCOPE_MAP)].sort()).toEqual([
      'constructor',
      'toString',
    ]);
  });
});

describe('tool scopes', () => {
  it('requiredScopesFor: the declared scopes without duplicates; none when undeclared', () => {
    expect(requiredScopesFor({ name: 'echo' })).toEqual([]);
    expect(
      requiredScopesFor({ name: 'checkout', scopes: ['checkout:write', 'mcp', 'checkout:write'] }),
    ).toEqual(['checkout:write', 'mcp']);
    expect(() => requiredScopesFor({ name: 'checkout', scopes: ['checkout write'] })).toThrow(
      new RangeError(
        "tool 'checkout': scopes must be scope tokens (printable ASCII, no space), got 'checkout write'",
      ),
    );
  });

  it('canCallTool and missingScopes: every scope is needed; admin holds them all', () => {
    const alice = principal(['mcp', 'checkout:read']);
    expect(missingScopes(alice, ['checkout:read', 'checkout:write', 'refunds'])).toEqual([
      'checkout:write',
      'refunds',
    ]);
    expect(canCallTool(alice, ['checkout:read'])).toBe(true);
    expect(canCallTool(alice, [])).toBe(true);
    expect(canCallTool(alice, ['checkout:write'])).toBe(false);
    expect(canCallTool(principal(['admin']), ['checkout:write'])).toBe(true);
    expect(canCallTool(PRINCIPALS.local, ['checkout:write'])).toBe(true);
  });

  it('assertCanCallTool throws 403 insufficient_scope naming the missing scopes', () => {
    const alice = principal(['mcp', 'checkout:read']);
    expect(() => assertCanCallTool(alice, { name: 'checkout', scopes: ['checkout:read'] })).not.toThrow();
    let thrown: unknown;
    try {
      assertCanCallTool(alice, { name: 'checkout', scopes: ['checkout:read', 'checkout:write'] });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BreakwaterError);
    const err = thrown as BreakwaterError;
    expect({ code: err.code, status: err.status, message: err.message, details: err.details }).toEqual({
      code: 'unauthorized',
      status: 403,
      message: "The tool 'checkout' needs the scope checkout:write, which the credential does not hold.",
      details: {
        reason: 'insufficient_scope',
        required_scopes: ['checkout:read', 'checkout:write'],
        missing_scopes: ['checkout:write'],
      },
    });
  });
});
