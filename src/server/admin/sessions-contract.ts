import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fastify, type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.js';
import { handleError } from '../../http/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { type Store } from '../../store/index.js';
import { createAdminAuth, type AdminAuth, type AdminAuthOptions } from './auth.js';

/**
 * The dashboard's server-side sessions through the admin check (auth.ts, sessions.ts), on one store backend:
 * login, the cookie's requests, logout (a copied cookie is refused), expiry on the fake clock, a new token,
 * the bound on live sessions, pruning, and a failing store. `sessions.test.ts` runs it on SQLite,
 * `sessions.postgres.test.ts` on PostgreSQL.
 */

const TOKEN = 'session-test-token-0123456789';
const TTL_MS = 60_000;
const COOKIE = /^breakwater_admin=([\w-]{43}); Path=\/; Max-Age=60; HttpOnly; SameSite=Strict$/;

/** What the store keeps of a session id: its HMAC-SHA-256 keyed by the admin token, in hex. */
const storedHash = (id: string, token = TOKEN) =>
  createHmac('sha256', token).update(`breakwater-admin-session:${id}`).digest('hex');

/**
 * A server with the admin check on every route, and login and logout as routes.ts wires them (the token is
 * checked there; here every login is one with the right token).
 */
function app(auth: AdminAuth, options: { trustProxy?: string } = {}): FastifyInstance {
  const server = fastify({ trustProxy: options.trustProxy ?? false });
  server.setErrorHandler(handleError);
  server.post('/login', async (request) => ({ cookie: await auth.openSession(request) }));
  server.post('/logout', async (request) => ({ ended: await auth.closeSession(request) }));
  server.register(async (admin) => {
    admin.addHook('onRequest', auth.hook);
    admin.get('/admin/x', async (request) => ({ access: await auth.check(request) }));
    admin.post('/admin/x', async () => ({ ok: true }));
  });
  return server;
}

/** How the suite reaches one store backend. */
export interface SessionBackend {
  /** Opens a store on fresh, empty storage; called once per test. */
  open(clock: FakeClock): Promise<Store>;
  /** Opens another store on the storage the last `open` made (another gateway). */
  reopen(clock: FakeClock): Promise<Store>;
  /** Runs after each test once its stores are closed. */
  cleanup(): Promise<void>;
}

/** SQLite: a file in a fresh temporary folder per test, removed after it. */
export function sqliteSessionBackend(): SessionBackend {
  let dir = '';
  return {
    async open(clock) {
      dir = mkdtempSync(join(tmpdir(), 'breakwater-admin-sessions-'));
      return openSqliteStore({ path: join(dir, 'store.db'), clock, watchMs: 0 });
    },
    reopen: async (clock) => openSqliteStore({ path: join(dir, 'store.db'), clock, watchMs: 0 }),
    async cleanup() {
      if (dir !== '') rmSync(dir, { recursive: true, force: true });
      dir = '';
    },
  };
}

export function adminSessionsContract(name: string, backend: SessionBackend): void {
  describe(`admin sessions: ${name}`, () => {
    const h = {} as { clock: FakeClock; start: number; store: Store; another(): Promise<Store> };
    const stores: Store[] = [];
    beforeEach(async () => {
      h.clock = new FakeClock();
      h.start = h.clock.now();
      h.store = await backend.open(h.clock);
      stores.push(h.store);
      h.another = async () => {
        const other = await backend.reopen(h.clock);
        stores.push(other);
        return other;
      };
    });
    afterEach(async () => {
      for (const store of stores.splice(0)) await store.close().catch(() => undefined);
      await backend.cleanup();
    });
    const authOn = (store: Store, options: Partial<AdminAuthOptions> = {}) =>
      createAdminAuth({
        token: TOKEN,
        sessions: store.sessions,
        clock: h.clock,
        sessionTtlMs: TTL_MS,
        ...options,
      });

    /** Logs in at `server` from `address`; resolves the cookie header value and the session id. */
    async function login(server: FastifyInstance, address = '203.0.113.7') {
      const response = await server.inject({ method: 'POST', url: '/login', remoteAddress: address });
      expect(response.statusCode).toBe(200);
      const setCookie = (response.json() as { cookie: string }).cookie;
      const id = COOKIE.exec(setCookie)?.[1];
      expect([setCookie, id]).toEqual([setCookie, expect.any(String)]);
      return { cookie: `breakwater_admin=${id!}`, id: id! };
    }
    const read = async (server: FastifyInstance, cookie: string, address = '203.0.113.7') => {
      const response = await server.inject({ url: '/admin/x', remoteAddress: address, headers: { cookie } });
      return [response.statusCode, response.json().access ?? response.json().reason];
    };

    it('a login stores only the hash of a random 256-bit id; the cookie reads, and writes with the page header', async () => {
      const server = app(authOn(h.store));
      const { cookie, id } = await login(server);
      expect(await h.store.sessions.get(storedHash(id))).toEqual({
        idHash: storedHash(id),
        principalId: 'admin',
        clientAddress: '203.0.113.7',
        createdAt: h.start,
        expiresAt: h.start + TTL_MS,
        revokedAt: null,
      });
      // Neither the id nor its plain SHA-256 is a stored key.
      expect(await h.store.sessions.get(id)).toBeUndefined();
      expect(await h.store.sessions.get(createHash('sha256').update(id).digest('hex'))).toBeUndefined();
      expect(Buffer.from(id, 'base64url')).toHaveLength(32);
      expect((await login(server)).id).not.toBe(id);

      expect(await read(server, cookie)).toEqual([200, 'session']);
      const bare = await server.inject({ method: 'POST', url: '/admin/x', headers: { cookie } });
      expect([bare.statusCode, bare.json().reason]).toEqual([403, 'csrf_header_missing']);
      const marked = await server.inject({
        method: 'POST',
        url: '/admin/x',
        headers: { cookie, 'x-breakwater-admin': '1' },
      });
      expect(marked.statusCode).toBe(200);
    });

    it('logout revokes the session: the same cookie, copied anywhere, is refused with 401 on every gateway', async () => {
      const server = app(authOn(h.store));
      // Another gateway on the same store (same token).
      const other = app(authOn(await h.another()));
      const { cookie, id } = await login(server);
      expect(await read(other, cookie)).toEqual([200, 'session']);
      h.clock.tick(5);

      const logout = await server.inject({ method: 'POST', url: '/logout', headers: { cookie } });
      expect(logout.json()).toEqual({ ended: true });
      expect((await h.store.sessions.get(storedHash(id)))!.revokedAt).toBe(h.start + 5);
      const refused = await server.inject({ url: '/admin/x', headers: { cookie } });
      expect([refused.statusCode, refused.json(), refused.headers['www-authenticate']]).toEqual([
        401,
        {
          type: 'urn:breakwater:error:unauthorized',
          title: 'Unauthorized',
          status: 401,
          code: 'unauthorized',
          detail:
            'This admin session was ended (logged out, or replaced by newer logins beyond the 100 allowed at once); log in again at /admin/login.',
          reason: 'session_revoked',
          instance: '/admin/x',
          outcome: 'failed',
          retry_after_ms: null,
          retryable: false,
        },
        'Bearer realm="breakwater-admin"',
      ]);
      // The copied cookie, from another address and through the other gateway.
      expect(await read(server, cookie, '198.51.100.20')).toEqual([401, 'session_revoked']);
      expect(await read(other, cookie)).toEqual([401, 'session_revoked']);
      // A second logout ends nothing; one without a cookie neither.
      expect((await server.inject({ method: 'POST', url: '/logout', headers: { cookie } })).json()).toEqual({
        ended: false,
      });
      expect((await server.inject({ method: 'POST', url: '/logout' })).json()).toEqual({ ended: false });
    });

    it('a session ends at its expiry on the clock: 59 999 ms after login it reads, at 60 000 ms it is 401', async () => {
      const server = app(authOn(h.store));
      const { cookie } = await login(server);
      h.clock.tick(TTL_MS - 1);
      expect(await read(server, cookie)).toEqual([200, 'session']);
      h.clock.tick(1);
      expect(await read(server, cookie)).toEqual([401, 'session_expired']);
      expect((await server.inject({ method: 'POST', url: '/logout', headers: { cookie } })).json()).toEqual({
        ended: false,
      });
    });

    it('a new admin token ends every session; the old one on another gateway still reads', async () => {
      const { cookie } = await login(app(authOn(h.store)));
      const renewed = app(authOn(await h.another(), { token: 'the-next-admin-token-4f1d2c' }));
      expect(await read(renewed, cookie)).toEqual([401, 'session_unknown']);
      expect(await read(app(authOn(await h.another())), cookie)).toEqual([200, 'session']);
    });

    it('at most maxSessions live at once: a login beyond them revokes the oldest; each login prunes ended rows', async () => {
      const server = app(authOn(h.store, { maxSessions: 3 }));
      const logins = [];
      for (let i = 0; i < 4; i++) {
        logins.push(await login(server));
        h.clock.tick(1);
      }
      expect(await Promise.all(logins.map((l) => read(server, l.cookie)))).toEqual([
        [401, 'session_revoked'],
        [200, 'session'],
        [200, 'session'],
        [200, 'session'],
      ]);
      const logout = await server.inject({
        method: 'POST',
        url: '/logout',
        headers: { cookie: logins[1]!.cookie },
      });
      expect(logout.json()).toEqual({ ended: true });
      // The next login deletes both ended rows: their cookies are now simply unknown.
      const fifth = await login(server);
      expect(await h.store.sessions.get(storedHash(logins[0]!.id))).toBeUndefined();
      expect(await h.store.sessions.get(storedHash(logins[1]!.id))).toBeUndefined();
      expect(await Promise.all([...logins, fifth].map((l) => read(server, l.cookie)))).toEqual([
        [401, 'session_unknown'],
        [401, 'session_unknown'],
        [200, 'session'],
        [200, 'session'],
        [200, 'session'],
      ]);
    });

    it('an unknown, malformed or old-format cookie is 401 session_unknown; an empty one is no cookie', async () => {
      const server = app(authOn(h.store));
      for (const value of ['A'.repeat(43), 'short', `${h.start + TTL_MS}.${'a'.repeat(43)}`, 'a%00b']) {
        expect([value, ...(await read(server, `breakwater_admin=${value}`))]).toEqual([
          value,
          401,
          'session_unknown',
        ]);
      }
      expect(await read(server, 'breakwater_admin=')).toEqual([401, 'credentials_missing']);
    });

    it('the cookie is Secure when the request came over TLS through a trusted proxy, not when a stranger says so', async () => {
      const server = app(authOn(h.store), { trustProxy: '127.0.0.1' });
      const viaProxy = await server.inject({
        method: 'POST',
        url: '/login',
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.8' },
      });
      expect(viaProxy.json().cookie).toMatch(
        /^breakwater_admin=[\w-]{43}; Path=\/; Max-Age=60; HttpOnly; SameSite=Strict; Secure$/,
      );
      const id = /=([\w-]{43});/.exec(viaProxy.json().cookie)![1]!;
      // The client's address behind the trusted proxy is what the session records.
      expect((await h.store.sessions.get(storedHash(id)))!.clientAddress).toBe('203.0.113.8');
      const forged = await server.inject({
        method: 'POST',
        url: '/login',
        remoteAddress: '198.51.100.9',
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(forged.json().cookie).toMatch(COOKIE);
    });

    it('a failing session store refuses cookies with 503 and lets no one in; the bearer token needs no store', async () => {
      const other = await h.another();
      const server = app(authOn(other));
      const { cookie } = await login(server);
      await other.close();
      const refused = await server.inject({ url: '/admin/x', headers: { cookie } });
      expect([refused.statusCode, refused.json().code, refused.json().detail]).toEqual([
        503,
        'upstream_unavailable',
        'The admin session store is unavailable; try again shortly.',
      ]);
      const failedLogin = await server.inject({ method: 'POST', url: '/login' });
      expect([failedLogin.statusCode, failedLogin.json().code]).toEqual([503, 'upstream_unavailable']);
      const bearer = await server.inject({ url: '/admin/x', headers: { authorization: `Bearer ${TOKEN}` } });
      expect([bearer.statusCode, bearer.json()]).toEqual([200, { access: 'bearer' }]);
    });
  });
}
