import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { ASYMMETRIC_ALGORITHMS, resolveOAuthOptions, type OAuthOptions } from './options.js';
import { createOAuthVerifier } from './verifier.js';

const BASE: OAuthOptions = { issuer: 'https://as.example.com', audience: 'https://gw.example.com/mcp' };

function rejects(options: Partial<OAuthOptions> | null, message: string): void {
  const full =
    options === null ? (null as unknown as OAuthOptions) : ({ ...BASE, ...options } as OAuthOptions);
  expect(() => createOAuthVerifier(full)).toThrow(new RangeError(message));
}

describe('createOAuthVerifier options', () => {
  it('fills in the defaults', () => {
    const clock = new FakeClock();
    const resolved = resolveOAuthOptions({ ...BASE, clock });
    expect({ ...resolved, fetch: typeof resolved.fetch }).toEqual({
      issuer: 'https://as.example.com',
      audience: 'https://gw.example.com/mcp',
      jwksUrl: undefined,
      scopeMap: { mcp: ['mcp'], ai: ['ai'], jobs: ['jobs'], metrics: ['metrics'], admin: ['admin'] },
      scopesSupported: ['mcp'],
      metadataClaims: { user: 'sub' },
      clockToleranceMs: 30_000,
      algorithms: ASYMMETRIC_ALGORITHMS,
      tokenType: undefined,
      resourceName: undefined,
      resourceDocumentation: undefined,
      clock,
      fetch: 'function',
      jwksCacheMaxAgeMs: 600_000,
      jwksCooldownMs: 30_000,
      fetchTimeoutMs: 5_000,
    });
  });

  it('derives scopesSupported from scopeMap: the token scopes that grant mcp', () => {
    const resolved = resolveOAuthOptions({
      ...BASE,
      scopeMap: { 'gw:read': ['mcp'], 'gw:all': ['mcp', 'ai'], ops: ['jobs'] },
    });
    expect(resolved.scopesSupported).toEqual(['gw:read', 'gw:all']);
  });

  it('accepts http only on loopback hosts', () => {
    for (const host of ['127.0.0.1:8080', 'localhost', '[::1]:3000', '127.1.2.3']) {
      expect(() =>
        createOAuthVerifier({ issuer: `http://${host}`, audience: `http://${host}/mcp` }),
      ).not.toThrow();
    }
  });

  it('refuses a bad option with a RangeError naming it', () => {
    rejects(null, 'createOAuthVerifier: options must be an object { issuer, audience, … }, got null');
    const url = 'an https URL (http only on a loopback host) without query or fragment';
    rejects(
      { issuer: 'http://as.example.com' },
      `createOAuthVerifier: issuer must be ${url}, got 'http://as.example.com'`,
    );
    rejects({ issuer: undefined }, `createOAuthVerifier: issuer must be ${url}, got undefined`);
    rejects({ issuer: 'as.example.com' }, `createOAuthVerifier: issuer must be ${url}, got 'as.example.com'`);
    rejects(
      { audience: 'https://gw.example.com/mcp#x' },
      `createOAuthVerifier: audience must be ${url}, got 'https://gw.example.com/mcp#x'`,
    );
    rejects(
      { audience: 'https://gw.example.com/mcp?t=1' },
      `createOAuthVerifier: audience must be ${url}, got 'https://gw.example.com/mcp?t=1'`,
    );
    rejects(
      { jwksUrl: 'ftp://as.example.com/jwks' },
      "createOAuthVerifier: jwksUrl must be an https URL (http only on a loopback host) without fragment, got 'ftp://as.example.com/jwks'",
    );
    rejects(
      { scopeMap: { 'gw:tools': ['tools'] } as never },
      "createOAuthVerifier: scopeMap['gw:tools'] must be a non-empty array of mcp, ai, jobs, metrics, admin, got ['tools']",
    );
    rejects(
      { scopeMap: { 'a b': ['mcp'] } },
      "createOAuthVerifier: scopeMap must be keyed by scope tokens (printable ASCII, no space), got 'a b'",
    );
    rejects(
      { scopeMap: {} },
      'createOAuthVerifier: scopeMap must be an object with at least one entry (or left out), got an object',
    );
    rejects(
      { scopesSupported: ['mcp', 'two words'] },
      "createOAuthVerifier: scopesSupported must be an array of scope tokens (printable ASCII, no space), got ['mcp', 'two words']",
    );
    rejects(
      { metadataClaims: { team: '' } },
      "createOAuthVerifier: metadataClaims['team'] must be a non-empty claim name, got ''",
    );
    rejects(
      { clockToleranceMs: -1 },
      'createOAuthVerifier: clockToleranceMs must be a finite number in [0, 300000], got -1',
    );
    rejects(
      { clockToleranceMs: 600_000 },
      'createOAuthVerifier: clockToleranceMs must be a finite number in [0, 300000], got 600000',
    );
    rejects(
      { algorithms: ['ES256', 'HS256'] },
      `createOAuthVerifier: algorithms must be a non-empty array of ${ASYMMETRIC_ALGORITHMS.join(', ')}, got ['ES256', 'HS256']`,
    );
    rejects(
      { algorithms: [] },
      `createOAuthVerifier: algorithms must be a non-empty array of ${ASYMMETRIC_ALGORITHMS.join(', ')}, got []`,
    );
    rejects({ tokenType: '' }, "createOAuthVerifier: tokenType must be a non-empty string, got ''");
    rejects({ fetchTimeoutMs: 1.5 }, 'createOAuthVerifier: fetchTimeoutMs must be an integer >= 1, got 1.5');
    rejects({ fetch: 'fetch' as never }, "createOAuthVerifier: fetch must be a function, got 'fetch'");
    rejects(
      { clock: {} as never },
      'createOAuthVerifier: clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
    );
  });
});
