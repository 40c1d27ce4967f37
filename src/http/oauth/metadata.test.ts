import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import { oauthMetadataRoutes } from './metadata.js';
import { insufficientScope } from './scopes.js';
import { signToken, startKeyServer, type KeyServer } from './test-support.js';
import { createOAuthVerifier, missingToken } from './verifier.js';

const ISSUER = 'https://as.example.com';
const PRM = 'https://gw.example.com/.well-known/oauth-protected-resource/mcp';

describe('protected resource metadata (RFC 9728)', () => {
  it('describes the resource; optional members only when configured', () => {
    expect(
      createOAuthVerifier({ issuer: ISSUER, audience: 'https://gw.example.com/mcp' }).metadata(),
    ).toEqual({
      resource: 'https://gw.example.com/mcp',
      authorization_servers: [ISSUER],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
    });
    expect(
      createOAuthVerifier({
        issuer: ISSUER,
        audience: 'https://gw.example.com/mcp',
        scopesSupported: [],
        resourceName: 'GiftGenius gateway',
        resourceDocumentation: 'https://gw.example.com/docs',
      }).metadata(),
    ).toEqual({
      resource: 'https://gw.example.com/mcp',
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
      resource_name: 'GiftGenius gateway',
      resource_documentation: 'https://gw.example.com/docs',
    });
  });

  it('lives at the path-inserted URL (RFC 9728 section 3.1), or the root one for a resource without a path', () => {
    const withPath = createOAuthVerifier({ issuer: ISSUER, audience: 'https://gw.example.com/mcp' });
    expect(withPath.resourceMetadataUrl).toBe(PRM);
    expect(withPath.metadataPaths).toEqual([
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]);
    const root = createOAuthVerifier({ issuer: ISSUER, audience: 'https://gw.example.com:8443' });
    expect(root.resourceMetadataUrl).toBe('https://gw.example.com:8443/.well-known/oauth-protected-resource');
    expect(root.metadataPaths).toEqual(['/.well-known/oauth-protected-resource']);
  });

  it('is served publicly at both paths as JSON, cacheable and readable across origins', async () => {
    const verifier = createOAuthVerifier({ issuer: ISSUER, audience: 'https://gw.example.com/mcp' });
    const app = Fastify();
    oauthMetadataRoutes(verifier)(app);
    try {
      for (const url of [
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource',
      ]) {
        const response = await app.inject({ method: 'GET', url });
        expect(response.statusCode).toBe(200);
        expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(response.headers['cache-control']).toBe('public, max-age=300');
        expect(response.headers['access-control-allow-origin']).toBe('*');
        expect(response.json()).toEqual(verifier.metadata());
      }
      expect(
        (await app.inject({ method: 'HEAD', url: '/.well-known/oauth-protected-resource/mcp' })).statusCode,
      ).toBe(200);
      expect(
        (await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/other' })).statusCode,
      ).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describe('challengeFor: the WWW-Authenticate value of each refusal', () => {
  let server: KeyServer;
  beforeEach(async () => {
    server = await startKeyServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('401 without a token, 401 invalid_token, 400 invalid_request, 403 insufficient_scope; nothing for others', async () => {
    const clock = new FakeClock();
    const verifier = createOAuthVerifier({
      issuer: server.issuer,
      audience: 'https://gw.example.com/mcp',
      clock,
    });
    const prm = `resource_metadata="${PRM}"`;
    expect(verifier.challengeFor(missingToken())).toBe(`Bearer ${prm}, scope="mcp"`);
    // The HTTP edge's own refusal of a request without any credential is the same case.
    const edgeMissing = new BreakwaterError('unauthorized', {
      status: 401,
      message: 'This endpoint needs a credential.',
      details: { reason: 'credentials_missing' },
    });
    expect(verifier.challengeFor(edgeMissing)).toBe(`Bearer ${prm}, scope="mcp"`);

    const expired = await verifier
      .verify(await signToken(server, 'https://gw.example.com/mcp', clock.now() / 1000 - 400))
      .catch((error: unknown) => error);
    expect(verifier.challengeFor(expired)).toBe(
      `Bearer ${prm}, error="invalid_token", scope="mcp", error_description="The access token has expired."`,
    );

    const badRequest = new BreakwaterError('unauthorized', {
      status: 400,
      message: 'The Authorization header names the Bearer scheme but holds no token.',
      details: { reason: 'invalid_request' },
    });
    expect(verifier.challengeFor(badRequest)).toBe(
      `Bearer ${prm}, error="invalid_request", error_description="The Authorization header names the Bearer scheme but holds no token."`,
    );

    const alice = await verifier.verify(
      await signToken(server, 'https://gw.example.com/mcp', clock.now() / 1000, {
        claims: { scope: 'mcp offline_access orders:read' },
      }),
    );
    const forbidden = insufficientScope("The tool 'checkout'", ['checkout:write'], ['checkout:write']);
    expect(verifier.challengeFor(forbidden, alice)).toBe(
      `Bearer ${prm}, error="insufficient_scope", scope="mcp offline_access orders:read checkout:write", error_description="The tool 'checkout' needs the scope checkout:write, which the credential does not hold."`,
    );
    // A principal this verifier did not make (an API key): only the baseline and the required scopes.
    expect(verifier.challengeFor(forbidden, { ...alice })).toBe(
      `Bearer ${prm}, error="insufficient_scope", scope="mcp checkout:write", error_description="The tool 'checkout' needs the scope checkout:write, which the credential does not hold."`,
    );

    expect(verifier.challengeFor(new BreakwaterError('upstream_unavailable'))).toBeUndefined();
    expect(verifier.challengeFor(new BreakwaterError('not_found'))).toBeUndefined();
    expect(verifier.challengeFor(new Error('boom'))).toBeUndefined();
  });
});
