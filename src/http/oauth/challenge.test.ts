import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import { bearerChallenge, isJwtShaped, parseBearer } from './challenge.js';

const PRM = 'https://gw.example.com/.well-known/oauth-protected-resource/mcp';

describe('bearerChallenge', () => {
  it('writes resource_metadata alone, then error, scope and error_description in that order', () => {
    expect(bearerChallenge({ resourceMetadataUrl: PRM })).toBe(`Bearer resource_metadata="${PRM}"`);
    expect(bearerChallenge({ resourceMetadataUrl: PRM, scope: ['mcp'] })).toBe(
      `Bearer resource_metadata="${PRM}", scope="mcp"`,
    );
    expect(
      bearerChallenge({
        resourceMetadataUrl: PRM,
        error: 'insufficient_scope',
        scope: ['mcp', 'files:read', 'mcp'],
        errorDescription: 'Additional file permission required',
      }),
    ).toBe(
      `Bearer resource_metadata="${PRM}", error="insufficient_scope", scope="mcp files:read", error_description="Additional file permission required"`,
    );
  });

  it('keeps quotes, backslashes, controls and non-ASCII out of quoted values, and drops invalid scope tokens', () => {
    expect(
      bearerChallenge({
        resourceMetadataUrl: PRM,
        error: 'invalid_token',
        scope: ['ok', 'two words', 'quo"te', ''],
        errorDescription: 'bad "token"\\\r\nSet-Cookie: x=1 — é',
      }),
    ).toBe(
      `Bearer resource_metadata="${PRM}", error="invalid_token", scope="ok", error_description="bad  token    Set-Cookie: x=1    "`,
    );
  });
});

describe('parseBearer', () => {
  it('returns the token of a Bearer header, whatever the scheme case and spacing', () => {
    expect(parseBearer('Bearer abc.DEF-_~+/=')).toBe('abc.DEF-_~+/=');
    expect(parseBearer('bearer   tok  ')).toBe('tok');
    expect(parseBearer('BEARER tok')).toBe('tok');
  });

  it('treats no header and other schemes as no credential (RFC 6750: 401 without an error code)', () => {
    expect(parseBearer(undefined)).toBeUndefined();
    expect(parseBearer('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(parseBearer('Bearertoken')).toBeUndefined();
  });

  it('refuses a malformed Bearer header with 400 invalid_request', () => {
    const cases: Array<[string | string[], string]> = [
      ['Bearer', 'The Authorization header names the Bearer scheme but holds no token.'],
      ['Bearer   ', 'The Authorization header names the Bearer scheme but holds no token.'],
      ['Bearer a b', 'The Authorization header holds a malformed bearer token (RFC 6750 b64token).'],
      ['Bearer a,b', 'The Authorization header holds a malformed bearer token (RFC 6750 b64token).'],
      ['Bearer =abc', 'The Authorization header holds a malformed bearer token (RFC 6750 b64token).'],
      [['Bearer a', 'Bearer b'], 'The request has more than one Authorization header.'],
    ];
    for (const [header, message] of cases) {
      let thrown: unknown;
      try {
        parseBearer(header);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(BreakwaterError);
      const err = thrown as BreakwaterError;
      expect({ code: err.code, status: err.status, message: err.message, details: err.details }).toEqual({
        code: 'unauthorized',
        status: 400,
        message,
        details: { reason: 'invalid_request' },
      });
    }
  });
});

describe('isJwtShaped', () => {
  it('tells a compact JWS from an opaque key', () => {
    expect(isJwtShaped('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln')).toBe(true);
    expect(isJwtShaped('eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.')).toBe(true);
    expect(isJwtShaped('bw_live_0123456789abcdef')).toBe(false);
    expect(isJwtShaped('a.b')).toBe(false);
    expect(isJwtShaped('a.b.c.d')).toBe(false);
    expect(isJwtShaped('a.b+.c')).toBe(false);
  });
});
