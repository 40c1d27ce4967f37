import { exportJWK, generateKeyPair } from 'jose';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { json, signToken, startKeyServer, type KeyServer } from './test-support.js';
import { createOAuthVerifier, type OAuthVerifier } from './verifier.js';

const AUDIENCE = 'https://gw.example.com/mcp';
const START_MS = Date.UTC(2026, 0, 1);

let server: KeyServer;
let clock: FakeClock;

beforeEach(async () => {
  server = await startKeyServer();
  clock = new FakeClock(START_MS);
});
afterEach(async () => {
  await server.close();
});

/** A token valid at the fake clock's current time. */
function token(spec: Parameters<typeof signToken>[3] = {}): Promise<string> {
  return signToken(server, AUDIENCE, Math.floor(clock.now() / 1000), spec);
}

function jwksFetches(): number {
  return server.requests.filter((path) => path === '/jwks').length;
}

describe('the key set over time', () => {
  it('is fetched again in the background every jwksCacheMaxAgeMs; a request never waits for that fetch', async () => {
    const v: OAuthVerifier = createOAuthVerifier({
      issuer: server.issuer,
      audience: AUDIENCE,
      jwksUrl: server.jwksUrl,
      clock,
      fetchTimeoutMs: 600_000, // a request that waited on the hung refresh below would outlive the test
    });
    await v.verify(await token());
    expect(jwksFetches()).toBe(1);

    clock.tick(599_999);
    await v.verify(await token());
    expect(jwksFetches()).toBe(1);

    // The key server hangs: the refresh is started, the request goes on with the keys held.
    server.handlers.set('/jwks', () => undefined);
    clock.tick(1);
    await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
    await vi.waitFor(() => expect(jwksFetches()).toBe(2));
    await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
    expect(jwksFetches()).toBe(2); // one refresh at a time
  });

  it('keeps the keys held while the key server fails, and tries again 5 s after each failure', async () => {
    const v = createOAuthVerifier({
      issuer: server.issuer,
      audience: AUDIENCE,
      jwksUrl: server.jwksUrl,
      clock,
    });
    await v.verify(await token());
    server.handlers.set('/jwks', (_req, res) => json(res, 500, {}));
    clock.tick(600_000);
    await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
    await vi.waitFor(() => expect(jwksFetches()).toBe(2));

    clock.tick(4_999);
    await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
    expect(jwksFetches()).toBe(2);
    clock.tick(1);
    // A refresh still in flight is not doubled, so ask until the failed one has settled and the retry starts.
    await vi.waitFor(async () => {
      await expect(v.verify(await token())).resolves.toMatchObject({ name: 'alice' });
      expect(jwksFetches()).toBe(3);
    });

    // Back: the next refresh succeeds and the one after is due a full jwksCacheMaxAgeMs later.
    server.handlers.clear();
    clock.tick(5_000);
    await vi.waitFor(async () => {
      await v.verify(await token());
      expect(jwksFetches()).toBe(4);
    });
    clock.tick(599_999);
    await v.verify(await token());
    expect(jwksFetches()).toBe(4);
  });

  it('follows a key rotation: an unknown kid fetches the keys at once; a key no longer published is refused', async () => {
    const v = createOAuthVerifier({
      issuer: server.issuer,
      audience: AUDIENCE,
      jwksUrl: server.jwksUrl,
      clock,
      jwksCooldownMs: 0,
    });
    const oldToken = await token();
    await v.verify(oldToken);

    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const newJwk = { ...(await exportJWK(publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' };
    server.handlers.set('/jwks', (_req, res) => json(res, 200, { keys: [newJwk] }));
    await expect(v.verify(await token({ key: privateKey, header: { kid: 'k2' } }))).resolves.toMatchObject({
      name: 'alice',
    });
    expect(jwksFetches()).toBe(2);

    await expect(v.verify(oldToken)).rejects.toMatchObject({
      code: 'unauthorized',
      status: 401,
      details: { reason: 'unknown_key' },
    });
  });
});
