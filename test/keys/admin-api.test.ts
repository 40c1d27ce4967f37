/**
 * The API keys' admin API (`/admin/api/keys…`) on a real gateway over HTTP: behind the admin check, answers
 * exact, the key shown once, refusals as problem+json naming the field, and every change audited without
 * the secret.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { createApiKeys } from '../../src/http/keys/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';

const defer = useCleanups();
const TOKEN = 'keys-admin-test-token-7c41e9';
const AUTH = { authorization: `Bearer ${TOKEN}` };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read answers freely
type Json = any;

/** A gateway on a fresh database; `token` null: loopback mode. */
async function start(token: string | null = TOKEN): Promise<Gateway> {
  const env = { ...process.env, BREAKWATER_ADMIN_TOKEN: token ?? '' };
  const gw = await startGateway({
    app: { setup: () => ({ name: 'keys-test', version: '1.0.0' }) },
    store: tempDb(defer, 'breakwater-keys-api'),
    port: 0,
    worker: false,
    log: () => undefined,
    graceMs: 100,
    env,
  });
  defer(() => gw.close());
  return gw;
}

async function call(
  gw: Gateway,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; raw?: string } = {},
): Promise<{ status: number; headers: Headers; body: Json }> {
  const json = init.body !== undefined;
  const response = await fetch(`${gw.url}${path}`, {
    method: init.method ?? (json || init.raw !== undefined ? 'POST' : 'GET'),
    headers: { ...AUTH, ...(json ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: json ? JSON.stringify(init.body) : init.raw,
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text,
  };
}

async function adminAudit(gw: Gateway): Promise<Json[]> {
  await gw.audit.flush();
  return (await gw.store.audit.read(0, 1000))
    .map((record) => JSON.parse(record.body))
    .filter((entry) => String(entry.action).startsWith('admin.key'));
}

describe('admin API: /admin/api/keys', () => {
  it('create answers 201 with the key once; list and get show it without secret or hash; revoke; all audited', async () => {
    const gw = await start();
    const created = await call(gw, '/admin/api/keys', {
      body: {
        name: 'billing-backend',
        scopes: ['ai', 'jobs'],
        metadata: { team: 'billing' },
        trusted_backend: true,
        expires_in_ms: 86_400_000,
        ai: { allowed_models: ['openai/gpt-4o-mini'], budgets: [{ limit_usd: 5, window_ms: 86_400_000 }] },
      },
    });
    expect(created.status).toBe(201);
    const { key, ...view } = created.body;
    const [, id, secret] = /^bw_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(key)!;
    expect(created.headers.get('location')).toBe(`/admin/api/keys/${id}`);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const expected = {
      id,
      principal_id: `key:${id}`,
      name: 'billing-backend',
      scopes: ['ai', 'jobs'],
      metadata: { team: 'billing' },
      trusted_backend: true,
      ai: {
        allowed_models: ['openai/gpt-4o-mini'],
        budgets: [{ limit_usd: 5, window_ms: 86_400_000, window: 'fixed' }],
      },
      state: 'active',
      created_at: view.created_at,
      expires_at: new Date(Date.parse(view.created_at) + 86_400_000).toISOString(),
      revoked_at: null,
    };
    expect(view).toEqual(expected);
    const record = (await gw.store.keys.get(id!))!;
    expect(record.hash).toBe(createHash('sha256').update(secret!).digest('hex'));
    expect(await createApiKeys({ store: gw.store }).verify(key)).toMatchObject({ id: `key:${id}` });

    const list = await call(gw, '/admin/api/keys');
    expect([list.status, list.headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(list.body).toEqual({ keys: [expected], next_before_id: null });
    expect(JSON.stringify(list.body)).not.toContain(record.hash);
    expect((await call(gw, `/admin/api/keys/${id}`)).body).toEqual(expected);

    const revoked = await call(gw, `/admin/api/keys/${id}/revoke`, { method: 'POST' });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ ...expected, state: 'revoked', revoked_at: revoked.body.revoked_at });
    expect(Date.parse(revoked.body.revoked_at)).toBeGreaterThanOrEqual(Date.parse(view.created_at));
    expect((await call(gw, '/admin/api/keys')).body).toEqual({ keys: [], next_before_id: null });
    expect((await call(gw, '/admin/api/keys?all=true')).body.keys.map((k: Json) => k.state)).toEqual([
      'revoked',
    ]);
    // A revoke with a JSON body (an empty one too) or any other is the same action.
    const again = await call(gw, `/admin/api/keys/${id}/revoke`, {
      raw: '',
      headers: { 'content-type': 'application/json' },
    });
    expect([again.status, again.body.revoked_at]).toEqual([200, revoked.body.revoked_at]);

    const audited = await adminAudit(gw);
    expect(audited.map((e) => [e.action, e.target, e.actor])).toEqual([
      ['admin.key_create', `/admin/api/keys/${id}`, 'http:127.0.0.1'],
      ['admin.key_revoke', `/admin/api/keys/${id}/revoke`, 'http:127.0.0.1'],
      ['admin.key_revoke', `/admin/api/keys/${id}/revoke`, 'http:127.0.0.1'],
    ]);
    expect(JSON.stringify(await gw.store.audit.read(0, 1000))).not.toContain(secret);
  });

  it('pages newest first with limit and before_id', async () => {
    const gw = await start();
    for (const name of ['a', 'b', 'c'])
      await call(gw, '/admin/api/keys', { body: { name, scopes: ['mcp'] } });
    const whole = (await call(gw, '/admin/api/keys')).body.keys.map((k: Json) => k.id);
    expect(whole).toHaveLength(3);
    const first = (await call(gw, '/admin/api/keys?limit=2')).body;
    expect(first.next_before_id).toBe(whole[1]);
    const second = (await call(gw, `/admin/api/keys?limit=2&before_id=${first.next_before_id}`)).body;
    expect([...first.keys, ...second.keys].map((k: Json) => k.id)).toEqual(whole);
    expect(second.next_before_id).toBeNull();
  });

  it('refuses without the admin token, cross-site, or with bad input: problem+json, nothing stored', async () => {
    const gw = await start();
    for (const [method, path] of [
      ['GET', '/admin/api/keys'],
      ['POST', '/admin/api/keys'],
      ['GET', '/admin/api/keys/0123456789abcdef'],
      ['POST', '/admin/api/keys/0123456789abcdef/revoke'],
    ] as const) {
      const none = await call(gw, path, { method, headers: { authorization: '' } });
      expect([method, path, none.status, none.body.code]).toEqual([method, path, 401, 'unauthorized']);
    }
    const crossSite = await call(gw, '/admin/api/keys', {
      body: { name: 'k', scopes: ['mcp'] },
      headers: { origin: 'https://evil.example' },
    });
    expect([crossSite.status, crossSite.body.code]).toEqual([403, 'unauthorized']);

    const bad: [Parameters<typeof call>[2], number, string][] = [
      [
        { body: { name: 'k', scopes: ['root'] } },
        400,
        `The key's scopes.0 is invalid: Invalid option: expected one of "mcp"|"ai"|"jobs"|"metrics"|"admin".`,
      ],
      [
        { body: { name: 'k', scopes: ['mcp'], expiresInMs: 5 } },
        400,
        "The key's expiresInMs is invalid: is not a field a key has.",
      ],
      [{ body: { scopes: ['mcp'] } }, 400, "The key's name is invalid: is required."],
      [
        { body: ['k'] },
        400,
        "The key's body must be a JSON object (Invalid input: expected object, received array).",
      ],
      [
        { raw: 'name=k', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        400,
        "The key's body must be a JSON object (Invalid input: expected object, received undefined).",
      ],
      [{ raw: '{"name":', headers: { 'content-type': 'application/json' } }, 400, ''],
      [
        {
          raw: '{"name":"k","scopes":["mcp"],"metadata":{"__proto__":{"x":1}}}',
          headers: { 'content-type': 'application/json' },
        },
        400,
        '',
      ],
      [{ body: { name: 'k'.repeat(20_000), scopes: ['mcp'] } }, 413, ''],
    ];
    for (const [init, status, message] of bad) {
      const answer = await call(gw, '/admin/api/keys', init);
      expect([init, answer.status, answer.headers.get('content-type')]).toEqual([
        init,
        status,
        'application/problem+json; charset=utf-8',
      ]);
      if (message !== '') expect(answer.body.detail ?? answer.body.message).toBe(message);
    }
    expect(await gw.store.keys.list({ includeRevoked: true })).toEqual([]);

    expect((await call(gw, '/admin/api/keys/ffffffffffffffff')).status).toBe(404);
    const unknown = await call(gw, '/admin/api/keys/ffffffffffffffff/revoke', { method: 'POST' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
    expect((await call(gw, '/admin/api/keys/not%20an%20id')).status).toBe(400);
    expect((await call(gw, '/admin/api/keys?limit=0')).status).toBe(400);
    expect((await call(gw, '/admin/api/keys?all=maybe')).status).toBe(400);
    expect((await call(gw, '/admin/api/keys?all=true&all=false')).status).toBe(400);
    expect(await adminAudit(gw)).toEqual([]);
  });

  it('in loopback mode (no admin token) clients on this machine manage keys', async () => {
    const gw = await start(null);
    expect(gw.adminMode).toBe('loopback');
    const created = await call(gw, '/admin/api/keys', {
      body: { name: 'local', scopes: ['mcp'] },
      headers: { authorization: '' },
    });
    expect([created.status, created.body.name]).toEqual([201, 'local']);
    const remote = await gw.http.inject({ url: '/admin/api/keys', remoteAddress: '203.0.113.9' });
    expect(remote.statusCode).toBe(403);
  });
});
