import { SignJWT, generateKeyPair } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, toProblem, type Principal } from '../../core/index.js';
import type { OAuthOptions } from './options.js';
import { createOAuthVerifier, type OAuthVerifier } from './verifier.js';
import { json, signToken, startKeyServer, type KeyServer, type TokenSpec } from './test-support.js';

const AUDIENCE = 'https://gw.example.com/mcp';
const START_MS = Date.UTC(2026, 0, 1);
const NOW_S = START_MS / 1000;

let server: KeyServer;
let clock: FakeClock;

beforeEach(async () => {
  server = await startKeyServer();
  clock = new FakeClock(START_MS);
});
afterEach(async () => {
  await server.close();
});

function verifier(options: Partial<OAuthOptions> = {}): OAuthVerifier {
  return createOAuthVerifier({ issuer: server.issuer, audience: AUDIENCE, clock, ...options });
}

function token(spec: TokenSpec = {}): Promise<string> {
  return signToken(server, AUDIENCE, NOW_S, spec);
}

/** The error `verify` rejects with, checked to hold nothing of the token. */
async function refusal(v: OAuthVerifier, jwt: string): Promise<BreakwaterError> {
  const error = await v.verify(jwt).then(
    () => {
      throw new Error('verify accepted the token');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BreakwaterError);
  const err = error as BreakwaterError;
  if (jwt.length >= 8) {
    expect(err.message).not.toContain(jwt);
    expect(JSON.stringify(toProblem(err))).not.toContain(jwt);
    const signature = jwt.split('.')[2] ?? '';
    if (signature.length >= 8) expect(JSON.stringify(toProblem(err))).not.toContain(signature);
  }
  return err;
}

function summary(p: Principal) {
  return { ...p, scopes: [...p.scopes].sort() };
}

describe('createOAuthVerifier: accepted tokens', () => {
  it('returns the oauth principal of a valid token, with the keys discovered from the issuer metadata', async () => {
    const v = verifier();
    const principal = await v.verify(await token({ claims: { scope: 'mcp checkout:write' } }));
    expect(summary(principal)).toEqual({
      id: `oauth:${server.issuer} alice`,
      kind: 'oauth',
      name: 'alice',
      scopes: ['checkout:write', 'mcp'],
      metadata: { user: 'alice' },
      trustedBackend: false,
    });
    expect(Object.isFrozen(principal)).toBe(true);
    expect(server.requests).toEqual(['/.well-known/oauth-authorization-server', '/jwks']);
    await v.verify(await token());
    expect(server.requests).toHaveLength(2); // metadata and keys are kept
  });

  it('maps token scopes through scopeMap; a Breakwater scope name the map does not list grants nothing', async () => {
    const v = verifier({ scopeMap: { 'gw:tools': ['mcp'], 'gw:ops': ['jobs', 'metrics'] } });
    const principal = await v.verify(await token({ claims: { scope: 'gw:tools gw:ops admin mcp openid' } }));
    expect([...principal.scopes].sort()).toEqual(['gw:ops', 'gw:tools', 'jobs', 'mcp', 'metrics', 'openid']);
    expect(principal.scopes.has('admin')).toBe(false);
  });

  it('reads scp as an array (or a string) when there is no scope claim', async () => {
    const v = verifier();
    const p1 = await v.verify(await token({ claims: { scope: undefined, scp: ['mcp', 'ai'] } }));
    expect([...p1.scopes].sort()).toEqual(['ai', 'mcp']);
    const p2 = await v.verify(await token({ claims: { scope: undefined, scp: 'jobs' } }));
    expect([...p2.scopes]).toEqual(['jobs']);
    const p3 = await v.verify(await token({ claims: { scope: undefined } }));
    expect([...p3.scopes]).toEqual([]);
  });

  it('binds metadata from the configured claims; strings, numbers and booleans only', async () => {
    const v = verifier({
      metadataClaims: { user: 'sub', team: 'org_id', plan: 'tier', staff: 'staff', x: 'nested' },
    });
    const principal = await v.verify(
      await token({ claims: { org_id: 'acme', tier: 3, staff: true, nested: { a: 1 } } }),
    );
    expect(principal.metadata).toEqual({ user: 'alice', team: 'acme', plan: '3', staff: 'true' });
  });

  it('names a token without sub by its client_id (a client_credentials token)', async () => {
    const v = verifier();
    const principal = await v.verify(await token({ claims: { sub: undefined, client_id: 'reporting-bot' } }));
    expect(principal.id).toBe(`oauth:${server.issuer} reporting-bot`);
    expect(principal.name).toBe('reporting-bot');
    expect(principal.metadata).toEqual({});
  });

  it('accepts an aud array that contains the audience, and the audience with upper-case scheme and host', async () => {
    const v = verifier();
    await expect(
      v.verify(await token({ claims: { aud: ['https://other.example', AUDIENCE] } })),
    ).resolves.toMatchObject({
      name: 'alice',
    });
    await expect(
      v.verify(await token({ claims: { aud: 'HTTPS://GW.EXAMPLE.COM:443/mcp' } })),
    ).resolves.toMatchObject({
      name: 'alice',
    });
  });

  it('uses jwksUrl as given, without reading the metadata', async () => {
    const v = verifier({ jwksUrl: server.jwksUrl });
    await v.verify(await token());
    expect(server.requests).toEqual(['/jwks']);
  });

  it('finds the metadata of an issuer with a path in the MCP spec order', async () => {
    const issuer = `${server.issuer}/tenant1`;
    server.handlers.set('/tenant1/.well-known/openid-configuration', (_req, res) =>
      json(res, 200, { issuer, jwks_uri: server.jwksUrl }),
    );
    const v = createOAuthVerifier({ issuer, audience: AUDIENCE, clock });
    await v.verify(await token({ claims: { iss: issuer } }));
    expect(server.requests).toEqual([
      '/.well-known/oauth-authorization-server/tenant1',
      '/.well-known/openid-configuration/tenant1',
      '/tenant1/.well-known/openid-configuration',
      '/jwks',
    ]);
  });
});

describe('createOAuthVerifier: refused tokens (401 unauthorized, details.reason)', () => {
  async function expectRefused(
    jwt: string,
    reason: string,
    message: string,
    extra: Record<string, unknown> = {},
    v = verifier(),
  ): Promise<void> {
    const err = await refusal(v, jwt);
    expect({ code: err.code, status: err.status, message: err.message, details: err.details }).toEqual({
      code: 'unauthorized',
      status: 401,
      message,
      details: { reason, ...extra },
    });
  }

  it('expired: exp is past by more than the tolerance (30 s), on the injected clock', async () => {
    const v = verifier();
    const jwt = await token(); // exp = now + 300 s
    clock.tick(329_999);
    await expect(v.verify(jwt)).resolves.toMatchObject({ name: 'alice' });
    clock.tick(1);
    await expectRefused(jwt, 'expired', 'The access token has expired.', {}, v);
  });

  it('expired with a zero tolerance exactly at exp', async () => {
    const v = verifier({ clockToleranceMs: 0 });
    const jwt = await token();
    clock.tick(299_999);
    await expect(v.verify(jwt)).resolves.toMatchObject({ name: 'alice' });
    clock.tick(1);
    await expectRefused(jwt, 'expired', 'The access token has expired.', {}, v);
  });

  it('not_yet_valid: nbf beyond the tolerance', async () => {
    await expectRefused(
      await token({ claims: { nbf: NOW_S + 31 } }),
      'not_yet_valid',
      'The access token is not valid yet (nbf).',
    );
    await expect(verifier().verify(await token({ claims: { nbf: NOW_S + 30 } }))).resolves.toMatchObject({
      name: 'alice',
    });
  });

  it('wrong_issuer', async () => {
    await expectRefused(
      await token({ claims: { iss: 'https://evil.example' } }),
      'wrong_issuer',
      `The access token was not issued by ${server.issuer}.`,
      { expected_issuer: server.issuer },
    );
  });

  it('wrong_audience: a token for another resource (RFC 8707)', async () => {
    for (const aud of [
      'https://gw.example.com/other',
      'https://gw.example.com/mcp/',
      ['https://a.example', 'b'],
    ]) {
      await expectRefused(
        await token({ claims: { aud } }),
        'wrong_audience',
        `The access token was not issued for ${AUDIENCE} (RFC 8707 audience).`,
        { expected_audience: AUDIENCE },
      );
    }
  });

  it('missing_claim: no aud, no exp, no subject', async () => {
    await expectRefused(
      await token({ claims: { aud: undefined } }),
      'missing_claim',
      'The access token has no "aud" claim.',
      {
        claim: 'aud',
      },
    );
    await expectRefused(
      await token({ claims: { exp: undefined } }),
      'missing_claim',
      'The access token has no "exp" claim.',
      {
        claim: 'exp',
      },
    );
    await expectRefused(
      await token({ claims: { sub: undefined } }),
      'missing_claim',
      'The access token names no subject (sub or client_id).',
      { claim: 'sub' },
    );
    await expectRefused(
      await token({ claims: { iss: undefined } }),
      'missing_claim',
      'The access token has no "iss" claim.',
      {
        claim: 'iss',
      },
    );
  });

  it('invalid_claim: exp that is not a number', async () => {
    await expectRefused(
      await token({ claims: { exp: 'tomorrow' as unknown as number } }),
      'invalid_claim',
      'The access token\'s "exp" claim is not valid.',
      { claim: 'exp' },
    );
  });

  it('invalid_signature: signed by another key under the published kid', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    await expectRefused(
      await token({ key: privateKey }),
      'invalid_signature',
      'The access token signature does not verify.',
    );
    const jwt = await token();
    const [header, payload] = jwt.split('.');
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'mallory' })).toString('base64url')}.${jwt.split('.')[2]}`;
    await expectRefused(forged, 'invalid_signature', 'The access token signature does not verify.');
  });

  it('unknown_key: a kid the authorization server does not publish', async () => {
    const v = verifier();
    await v.verify(await token());
    const { privateKey } = await generateKeyPair('ES256');
    await expectRefused(
      await token({ key: privateKey, header: { kid: 'k2' } }),
      'unknown_key',
      "The access token is not signed with one of the authorization server's keys.",
      {},
      v,
    );
    // Within jose's cooldown (30 s after the last fetch) an unknown kid does not fetch the keys again.
    expect(server.requests.filter((path) => path === '/jwks')).toHaveLength(1);
  });

  it('algorithm_not_allowed: HS256 (a shared secret) and an algorithm left out of the option', async () => {
    const secret = new TextEncoder().encode('a-shared-secret-of-thirty-two-bytes!');
    const hs = await new SignJWT({ iss: server.issuer, aud: AUDIENCE, sub: 'alice', exp: NOW_S + 300 })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(secret);
    const message =
      'The access token is signed with an algorithm this gateway does not accept (it accepts RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519).';
    await expectRefused(hs, 'algorithm_not_allowed', message);
    await expectRefused(
      await token(),
      'algorithm_not_allowed',
      'The access token is signed with an algorithm this gateway does not accept (it accepts RS256).',
      {},
      verifier({ algorithms: ['RS256'] }),
    );
  });

  it('malformed: not three base64url parts, or parts that are not JSON', async () => {
    for (const jwt of ['', 'opaque-token-1234', 'a.b', 'a.b.c.d', 'e30.e30.sig=']) {
      await expectRefused(jwt, 'malformed', 'The access token is not a signed JWT.');
    }
    await expectRefused('abc.def.ghi', 'malformed', 'The access token is not a well-formed signed JWT.');
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.`;
    await expectRefused(unsigned, 'algorithm_not_allowed', expect.any(String) as unknown as string);
  });

  it('wrong_type: typ other than the configured tokenType', async () => {
    const v = verifier({ tokenType: 'at+jwt' });
    await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
    await expectRefused(
      await token({ header: { typ: 'JWT' } }),
      'wrong_type',
      "The access token's typ header is not at+jwt.",
      { expected_type: 'at+jwt' },
      v,
    );
  });
});

describe('createOAuthVerifier: keys that cannot be read (503, not the token at fault)', () => {
  it('issuer metadata naming another issuer: upstream_unavailable, retried after 5 s, not per request', async () => {
    server.handlers.set('/.well-known/oauth-authorization-server', (_req, res) =>
      json(res, 200, { issuer: 'https://elsewhere.example', jwks_uri: server.jwksUrl }),
    );
    const v = verifier();
    const jwt = await token();
    const err = await refusal(v, jwt);
    expect({ code: err.code, status: err.status, details: err.details, message: err.message }).toEqual({
      code: 'upstream_unavailable',
      status: 503,
      details: { reason: 'issuer_metadata_unavailable', issuer: server.issuer },
      message: `The authorization server's metadata could not be read (${server.issuer}/.well-known/oauth-authorization-server names the issuer "https://elsewhere.example", not "${server.issuer}"), so access tokens cannot be checked; try again shortly.`,
    });
    await refusal(v, jwt);
    expect(server.requests).toEqual(['/.well-known/oauth-authorization-server']);
    server.handlers.clear();
    clock.tick(5_000);
    await expect(v.verify(jwt)).resolves.toMatchObject({ name: 'alice' });
    expect(server.requests).toEqual([
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-authorization-server',
      '/jwks',
    ]);
  });

  it('no metadata at either URL: upstream_unavailable naming both answers', async () => {
    server.handlers.set('/.well-known/oauth-authorization-server', (_req, res) => json(res, 404, {}));
    const err = await refusal(verifier(), await token());
    expect(err.status).toBe(503);
    expect(err.message).toBe(
      `The authorization server's metadata could not be read (${server.issuer}/.well-known/oauth-authorization-server: HTTP 404; ${server.issuer}/.well-known/openid-configuration: HTTP 404), so access tokens cannot be checked; try again shortly.`,
    );
  });

  it('a key set that answers 500: upstream_unavailable with reason jwks_unavailable', async () => {
    server.handlers.set('/jwks', (_req, res) => json(res, 500, {}));
    const err = await refusal(verifier({ jwksUrl: server.jwksUrl }), await token());
    expect({ code: err.code, status: err.status, details: err.details }).toEqual({
      code: 'upstream_unavailable',
      status: 503,
      details: { reason: 'jwks_unavailable' },
    });
  });

  it('warmUp reads the metadata and the keys, and reports a key set that is down', async () => {
    await verifier().warmUp();
    expect(server.requests).toEqual(['/.well-known/oauth-authorization-server', '/jwks']);
    server.handlers.set('/jwks', (_req, res) => json(res, 503, {}));
    await expect(verifier({ jwksUrl: server.jwksUrl }).warmUp()).rejects.toMatchObject({
      code: 'upstream_unavailable',
      details: { reason: 'jwks_unavailable' },
    });
  });
});
