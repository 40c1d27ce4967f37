import { fastify, type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, PrincipalContext, type Principal } from '../core/index.js';
import { handleError } from './errors.js';
import { createAuthenticator, installEdge, type AuthenticatorOptions, type EdgeOptions } from './index.js';

function keyPrincipal(id: string, scopes: string[]): Principal {
  return {
    id: `key:${id}`,
    kind: 'api_key',
    name: id,
    scopes: new Set(scopes),
    metadata: {},
    trustedBackend: false,
  };
}

/** API keys as the edge sees them: `bw_<id>` holds the scopes listed here. */
const keys = {
  async verify(value: string): Promise<Principal> {
    const scopes: Record<string, string[]> = { bw_mcp: ['mcp'], bw_ai: ['ai'], bw_admin: ['admin'] };
    const found = scopes[value];
    if (found === undefined) {
      throw new BreakwaterError('unauthorized', { status: 401, details: { reason: 'invalid_key' } });
    }
    return keyPrincipal(value, found);
  },
};

let app: FastifyInstance;
afterEach(async () => app?.close());

async function build(auth: AuthenticatorOptions, edge: EdgeOptions & { publicUrl?: string } = {}) {
  app = fastify();
  app.setErrorHandler(handleError);
  installEdge(app, { ...edge, authenticator: createAuthenticator(auth) });
  const who = async (request: { principal: Principal }) => ({
    id: request.principal.id,
    context: PrincipalContext.get()?.id ?? null,
  });
  app.post('/mcp', who);
  app.get('/v1/models', who);
  app.get('/jobs/:id', who);
  app.get('/healthz', who);
  app.get('/admin/api/overview', who);
  app.get('/custom', who);
  app.get('/open', { config: { access: 'public' } }, who);
  await app.ready();
  return app;
}

describe('Host and Origin (DNS rebinding)', () => {
  it.each([
    ['127.0.0.1:8787', undefined, 200],
    ['localhost:8787', undefined, 200],
    ['app.localhost', undefined, 200],
    ['[::1]:8787', undefined, 200],
    ['10.1.2.3:8787', undefined, 200],
    ['gw.example.com', undefined, 200],
    ['GW.Example.com:443', undefined, 200],
    ['evil.example:8787', undefined, 403],
    ['[::1]evil.example', undefined, 400],
    ['127.0.0.1:8787@evil', undefined, 400],
    ['127.0.0.1:99999', undefined, 400],
    ['127.0.0.1:8787', 'http://evil.example:8787', 403],
    ['127.0.0.1:8787', 'null', 403],
    ['127.0.0.1:8787', 'http://localhost:3000', 200],
    ['127.0.0.1:8787', 'http://127.0.0.1:8787', 200],
    ['gw.example.com', 'https://gw.example.com', 200],
    ['gw.example.com', 'https://gw.example.com:443', 200],
    ['gw.example.com', 'https://app.example.com', 200],
    ['gw.example.com', 'https://other.example.com', 403],
    ['10.1.2.3:8787', 'http://10.1.2.3:8787', 200],
    ['10.1.2.3:8787', 'http://10.9.9.9:8787', 403],
  ])('Host %s, Origin %s: %i', async (host, origin, status) => {
    await build(
      {},
      {
        publicUrl: 'https://gw.example.com',
        allowedOrigins: ['https://app.example.com'],
      },
    );
    const res = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { host, ...(origin === undefined ? {} : { origin }) },
    });
    expect(res.statusCode).toBe(status);
    if (status !== 200) expect(res.json().code).toBe(status === 400 ? 'invalid_payload' : 'unauthorized');
  });

  it('applies to public routes and unknown routes too', async () => {
    await build({});
    for (const url of ['/healthz', '/nowhere']) {
      const res = await app.inject({ url, headers: { host: 'evil.example' } });
      expect(res.statusCode).toBe(403);
      expect(res.json().reason).toBe('host_not_allowed');
    }
  });

  it('accepts a host name the operator added', async () => {
    await build({}, { allowedHosts: ['internal.lan:8787'] });
    const res = await app.inject({ url: '/healthz', headers: { host: 'internal.lan' } });
    expect(res.statusCode).toBe(200);
  });

  it('refuses a bad allowedHosts entry at construction', () => {
    app = fastify();
    expect(() => installEdge(app, { allowedHosts: ['http://x/'] })).toThrow(/allowedHosts/);
    expect(() => installEdge(app, { allowedOrigins: ['https://x/path'] })).toThrow(/allowedOrigins/);
  });
});

describe('loopback mode (no credentials configured)', () => {
  it('a client on this machine is the local principal, in the handler and its context', async () => {
    await build({});
    const res = await app.inject({ method: 'POST', url: '/mcp' });
    expect(res.json()).toEqual({ id: 'local', context: 'local' });
  });

  it('a client elsewhere gets 403 loopback_only', async () => {
    await build({});
    const res = await app.inject({ method: 'POST', url: '/mcp', remoteAddress: '10.0.0.7' });
    expect(res.statusCode).toBe(403);
    expect(res.json().reason).toBe('loopback_only');
  });

  it.each(['x-real-ip', 'x-forwarded-for', 'forwarded', 'via', 'x-forwarded-host'])(
    'a request forwarded by a proxy on this machine (%s) is not local',
    async (header) => {
      await build({});
      const res = await app.inject({ method: 'POST', url: '/mcp', headers: { [header]: '203.0.113.9' } });
      expect(res.statusCode).toBe(403);
    },
  );

  it('a value that is no Breakwater credential (an SDK placeholder key) is treated as absent', async () => {
    await build({});
    const local = await app.inject({
      url: '/v1/models',
      headers: { authorization: 'Bearer sk-placeholder' },
    });
    expect(local.json().id).toBe('local');
    const remote = await app.inject({
      url: '/v1/models',
      remoteAddress: '10.0.0.7',
      headers: { authorization: 'Bearer sk-placeholder' },
    });
    expect(remote.statusCode).toBe(403);
  });

  it('a presented key is still verified (a key made after startup works)', async () => {
    await build({ apiKeys: keys });
    const ok = await app.inject({
      url: '/v1/models',
      remoteAddress: '10.0.0.7',
      headers: { authorization: 'Bearer bw_ai' },
    });
    expect(ok.json()).toEqual({ id: 'key:bw_ai', context: 'key:bw_ai' });
    const bad = await app.inject({ url: '/v1/models', headers: { authorization: 'Bearer bw_nope' } });
    expect(bad.statusCode).toBe(401);
  });
});

describe('credentials mode', () => {
  const auth = { mode: 'credentials', apiKeys: keys, adminToken: 'a-very-long-admin-token' } as const;

  it('no credential: 401 with a Bearer challenge, even from this machine', async () => {
    await build(auth);
    const res = await app.inject({ method: 'POST', url: '/mcp' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="breakwater"');
    expect(res.json()).toMatchObject({ code: 'unauthorized', reason: 'credentials_missing' });
  });

  it('a wrong key: 401 invalid_token', async () => {
    await build(auth);
    const res = await app.inject({ method: 'POST', url: '/mcp', headers: { authorization: 'Bearer bw_x' } });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="breakwater", error="invalid_token"');
  });

  it('another scheme, or two different credentials: 401 invalid_request', async () => {
    await build(auth);
    for (const headers of [
      { authorization: 'Basic dXNlcjpwdw==' },
      { authorization: 'Bearer bw_mcp', 'x-api-key': 'bw_ai' },
    ]) {
      const res = await app.inject({ method: 'POST', url: '/mcp', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().reason).toBe('invalid_request');
    }
  });

  it('x-api-key is read like a bearer', async () => {
    await build(auth);
    const res = await app.inject({ url: '/v1/models', headers: { 'x-api-key': 'bw_ai' } });
    expect(res.json().id).toBe('key:bw_ai');
  });

  it('a key without the route scope: 403 insufficient_scope', async () => {
    await build(auth);
    const res = await app.inject({ url: '/v1/models', headers: { authorization: 'Bearer bw_mcp' } });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="breakwater", error="insufficient_scope", scope="ai"',
    );
    expect(res.json()).toMatchObject({ reason: 'insufficient_scope', scope: 'ai' });
  });

  it('job URLs accept jobs or mcp; admin holds every scope', async () => {
    await build(auth);
    const mcp = await app.inject({ url: '/jobs/job_1', headers: { authorization: 'Bearer bw_mcp' } });
    expect(mcp.statusCode).toBe(200);
    const ai = await app.inject({ url: '/jobs/job_1', headers: { authorization: 'Bearer bw_ai' } });
    expect(ai.statusCode).toBe(403);
    const admin = await app.inject({ url: '/v1/models', headers: { authorization: 'Bearer bw_admin' } });
    expect(admin.statusCode).toBe(200);
  });

  it('the admin token is the admin principal', async () => {
    await build(auth);
    const res = await app.inject({
      url: '/custom',
      headers: { authorization: 'Bearer a-very-long-admin-token' },
    });
    expect(res.json().id).toBe('admin');
  });

  it('a route with no declared access needs admin', async () => {
    await build(auth);
    const res = await app.inject({ url: '/custom', headers: { authorization: 'Bearer bw_mcp' } });
    expect(res.statusCode).toBe(403);
    expect(res.json().scope).toBe('admin');
  });

  it('public routes answer without a credential, as a stranger', async () => {
    await build(auth);
    expect((await app.inject({ url: '/healthz' })).json().id).toBe('stranger');
    expect((await app.inject({ url: '/open' })).json().id).toBe('stranger');
  });

  it('admin routes check their caller themselves', async () => {
    await build(auth);
    const res = await app.inject({ url: '/admin/api/overview' });
    expect(res.statusCode).toBe(200);
    expect(res.json().id).toBe('stranger');
  });
});

describe('insecure mode (--insecure-no-auth)', () => {
  it('anyone is the anonymous principal', async () => {
    await build({ mode: 'insecure' });
    const res = await app.inject({ method: 'POST', url: '/mcp', remoteAddress: '203.0.113.9' });
    expect(res.json()).toEqual({ id: 'anonymous', context: 'anonymous' });
  });
});
