import { fastify, type FastifyInstance, type FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { handleError } from '../../http/index.js';
import type { Store } from '../../store/index.js';
import { createAdminAuth, isLoopbackHost, readCookie, type AdminAuth } from './auth.js';
import { sqliteSessionBackend } from './sessions-contract.js';
import { createLoginThrottle } from './throttle.js';
import { expectOptionsError } from '../../../test/support/options.js';

const TOKEN = 'test-admin-token-0123456789';
const T0 = Date.UTC(2026, 0, 1, 12);

function app(auth: AdminAuth): FastifyInstance {
  const server = fastify();
  server.setErrorHandler(handleError);
  server.addHook('onRequest', auth.hook);
  server.get('/admin/x', async (request) => ({ access: await auth.check(request) }));
  server.post('/admin/x', async () => ({ ok: true }));
  return server;
}

/** Session cookies are tested in sessions-contract.ts, on SQLite and PostgreSQL. */
describe('admin auth, token mode', () => {
  const backend = sqliteSessionBackend();
  const h = {} as { store: Store };
  let auth: AdminAuth;
  let server: FastifyInstance;
  beforeEach(async () => {
    const clock = new FakeClock(T0);
    h.store = await backend.open(clock);
    auth = createAdminAuth({ token: TOKEN, sessions: h.store.sessions, clock });
    server = app(auth);
  });
  afterEach(async () => {
    await h.store.close();
    await backend.cleanup();
  });

  it('lets a bearer token in from anywhere, and refuses a missing or wrong one with 401', async () => {
    const ok = await server.inject({
      url: '/admin/x',
      remoteAddress: '203.0.113.9',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([ok.statusCode, ok.json()]).toEqual([200, { access: 'bearer' }]);

    const none = await server.inject({ url: '/admin/x' });
    expect([none.statusCode, none.headers['www-authenticate'], none.json().reason]).toEqual([
      401,
      'Bearer realm="breakwater-admin"',
      'credentials_missing',
    ]);
    const wrong = await server.inject({ url: '/admin/x', headers: { authorization: `Bearer ${TOKEN}x` } });
    expect([wrong.statusCode, wrong.json().code, wrong.json().reason]).toEqual([
      401,
      'unauthorized',
      'invalid_token',
    ]);
  });

  it('refuses writes sent from another site, whatever the credentials', async () => {
    for (const headers of [
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
    ]) {
      const response = await server.inject({
        method: 'POST',
        url: '/admin/x',
        headers: { authorization: `Bearer ${TOKEN}`, ...headers },
      });
      expect([response.statusCode, response.json().reason]).toEqual([403, 'cross_site']);
    }
    const sameOrigin = await server.inject({
      method: 'POST',
      url: '/admin/x',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        origin: 'http://localhost:80',
        'sec-fetch-site': 'same-origin',
      },
    });
    expect(sameOrigin.statusCode).toBe(200);
  });

  it('throttles wrong tokens per address: the 3rd failure within the window blocks every token, right or wrong, until it clears', async () => {
    const clock = new FakeClock(T0);
    const limited = createAdminAuth({
      token: TOKEN,
      sessions: h.store.sessions,
      clock,
      throttle: createLoginThrottle({ maxFailures: 3, windowMs: 60_000, clock }),
    });
    const s = app(limited);
    const as = (address: string, token: string) =>
      s.inject({ url: '/admin/x', remoteAddress: address, headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 3; i++)
      expect((await as('198.51.100.1', 'wrong-token-xxxxxxxx')).statusCode).toBe(401);
    const blocked = await as('198.51.100.1', TOKEN);
    expect([blocked.statusCode, blocked.headers['retry-after'], blocked.json().reason]).toEqual([
      429,
      '60',
      'login_throttled',
    ]);
    // Another address is not affected.
    expect((await as('198.51.100.2', TOKEN)).statusCode).toBe(200);
    clock.tick(59_999);
    expect((await as('198.51.100.1', TOKEN)).statusCode).toBe(429);
    clock.tick(1);
    expect((await as('198.51.100.1', TOKEN)).statusCode).toBe(200);
  });

  it('refuses a short token, a token without a session store and a bad maxSessions at construction', () => {
    expect(() => createAdminAuth({ token: 'short-secret', sessions: h.store.sessions })).toThrow(
      "createAdminAuth: token must be a string of at least 16 characters without whitespace (BREAKWATER_ADMIN_TOKEN), got '12 characters'",
    );
    expect(() => createAdminAuth({ token: TOKEN })).toThrow(
      'createAdminAuth: sessions must be a session store (store.sessions) when a token is set, got undefined',
    );
    expect(() => createAdminAuth({ token: TOKEN, sessions: h.store.sessions, maxSessions: 0 })).toThrow(
      'createAdminAuth: maxSessions must be an integer >= 1, got 0',
    );
    // Every bad option at once, the token shown by its length only.
    expectOptionsError(
      () =>
        createAdminAuth({
          token: 'has a space in it',
          sessionTtlMs: 0,
          maxSessions: 1.5,
          throttle: {} as never,
        }),
      {
        owner: 'createAdminAuth',
        options: ['token', 'sessionTtlMs', 'maxSessions', 'throttle', 'sessions'],
        message:
          'createAdminAuth: token must be a string of at least 16 characters without whitespace ' +
          "(BREAKWATER_ADMIN_TOKEN), got '17 characters'; sessionTtlMs must be a finite number > 0, got 0; " +
          'maxSessions must be an integer >= 1, got 1.5; throttle must be a LoginThrottle (createLoginThrottle), ' +
          'got an object; sessions must be a session store (store.sessions) when a token is set, got undefined',
      },
    );
    expect(() => createLoginThrottle({ maxFailures: 0, windowMs: 1.5 })).toThrow(
      new RangeError(
        'createLoginThrottle: maxFailures must be an integer >= 1, got 0; windowMs must be an integer >= 1, got 1.5',
      ),
    );
    expect(auth.verifyToken(TOKEN)).toBe(true);
    expect(auth.verifyToken(TOKEN.slice(1))).toBe(false);
    expect(auth.verifyToken(undefined)).toBe(false);
  });
});

describe('admin auth, loopback mode (no token)', () => {
  const auth = createAdminAuth({});
  const server = app(auth);

  it('answers loopback clients addressed as this machine, and refuses others with 403', async () => {
    expect(auth.mode).toBe('loopback');
    const local = await server.inject({ url: '/admin/x', remoteAddress: '::ffff:127.0.0.1' });
    expect([local.statusCode, local.json()]).toEqual([200, { access: 'loopback' }]);
    const remote = await server.inject({ url: '/admin/x', remoteAddress: '203.0.113.9' });
    expect([remote.statusCode, remote.json().code, remote.json().reason]).toEqual([
      403,
      'unauthorized',
      'not_loopback',
    ]);
    // DNS rebinding: a page of evil.example whose name now points at 127.0.0.1.
    const rebound = await server.inject({ url: '/admin/x', headers: { host: 'evil.example:8787' } });
    expect([rebound.statusCode, rebound.json().reason]).toEqual([403, 'host_not_loopback']);
    // A reverse proxy on this machine: its connection is local, its client is not.
    const proxied = await server.inject({ url: '/admin/x', headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect([proxied.statusCode, proxied.json().reason]).toEqual([403, 'forwarded']);
    const standard = await server.inject({ url: '/admin/x', headers: { forwarded: 'for=203.0.113.9' } });
    expect([standard.statusCode, standard.json().reason]).toEqual([403, 'forwarded']);
    // nginx's usual header alone, without X-Forwarded-For.
    const realIp = await server.inject({ url: '/admin/x', headers: { 'x-real-ip': '203.0.113.9' } });
    expect([realIp.statusCode, realIp.json().reason]).toEqual([403, 'forwarded']);
    expect(auth.verifyToken('anything-at-all-really')).toBe(false);
    // No token, no sessions: nothing to open, nothing to end.
    const request = { ip: '127.0.0.1', headers: { cookie: `breakwater_admin=${'A'.repeat(43)}` } };
    await expect(auth.openSession(request as FastifyRequest)).rejects.toThrow(/no token is configured/);
    expect(await auth.closeSession(request as FastifyRequest)).toBe(false);
    expect(auth.clearCookie(false)).toBe('breakwater_admin=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict');
  });

  it('knows the loopback host names and reads cookies', () => {
    expect(
      [
        'localhost:8787',
        'LOCALHOST',
        'app.localhost:1',
        '127.0.0.1:8787',
        '127.1.2.3',
        '[::1]:8787',
        '[::1]',
      ].map(isLoopbackHost),
    ).toEqual([true, true, true, true, true, true, true]);
    expect(
      [
        'example.com',
        '127.0.0.1.evil.example',
        '[::2]:80',
        '10.0.0.1',
        undefined,
        '[::1]evil.example',
        'localhost:80@evil.example',
      ].map(isLoopbackHost),
    ).toEqual([false, false, false, false, false, false, false]);
    expect(readCookie('a=1; breakwater_admin=v.s; b=2', 'breakwater_admin')).toBe('v.s');
    expect(readCookie('a=1', 'breakwater_admin')).toBeUndefined();
  });
});
