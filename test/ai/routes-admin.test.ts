/**
 * The routes' admin API over real HTTP (loopback), next to the gateway on one Fastify app and one SQLite
 * store: create a draft, deploy it, roll back, each taking effect on `dynamic/<name>` at once in this process;
 * a bad definition is a 400 `invalid_route` naming the field; a non-loopback client gets 403.
 */
import { describe, expect, it } from 'vitest';
import { routeAdminRoutes } from '../../src/ai/routes/index.js';
import { routeGateway, sqliteStore, step } from './routes-support.js';
import { ask, startSim, useCleanups } from './support.js';

const defer = useCleanups();

/** What the admin API answers (only the members the tests read are typed). */
interface AdminBody extends Record<string, unknown> {
  version?: number;
  deployed?: number | null;
  detail?: string;
  routes?: unknown[];
  versions?: { version: number; deployed: boolean }[];
}

async function setup() {
  const sim = await startSim(defer);
  const store = await sqliteStore(defer);
  const running = await routeGateway(defer, { sim }, store);
  // The gateway's app is listening already: a second one for the admin API, as `serve` mounts both on one.
  const { fastify } = await import('fastify');
  const admin = fastify();
  await routeAdminRoutes(admin, { routes: store.routes, resolver: running.resolver, providers: ['sim'] });
  await admin.listen({ host: '127.0.0.1', port: 0 });
  defer(() => admin.close());
  const address = admin.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: (await response.json()) as AdminBody,
    };
  };
  const served = async () => {
    const { response } = await running.client.chat.completions.create(ask('dynamic/gifts')).withResponse();
    return `${response.headers.get('x-breakwater-route')} ${response.headers.get('x-breakwater-step')}`;
  };
  return { store, admin, call, served };
}

describe('routes admin API', () => {
  it('creates drafts, deploys, rolls back (to the version below, or any earlier one), lists', async () => {
    const { call, served } = await setup();
    const created = await call('POST', '/admin/ai/routes/gifts/versions', {
      definition: step('a'),
      note: 'first',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'gifts',
      version: 1,
      deployed: false,
      note: 'first',
      definition: step('a'),
    });
    expect(
      (await call('POST', '/admin/ai/routes/gifts/versions', { definition: step('b') })).body.version,
    ).toBe(2);
    expect(
      (await call('POST', '/admin/ai/routes/gifts/versions', { definition: step('c') })).body.version,
    ).toBe(3);

    const first = await call('POST', '/admin/ai/routes/gifts/deploy', { version: 1 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ name: 'gifts', deployed: 1, latest: 3, previous: null });
    expect(await served()).toBe('gifts@1 a');

    expect((await call('POST', '/admin/ai/routes/gifts/deploy', { version: 3 })).body).toMatchObject({
      deployed: 3,
      previous: 1,
    });
    expect(await served()).toBe('gifts@3 c');

    const back = await call('POST', '/admin/ai/routes/gifts/rollback', {});
    expect(back.body).toMatchObject({ deployed: 2, previous: 3 }); // the version below the deployed one
    expect(await served()).toBe('gifts@2 b');
    expect((await call('POST', '/admin/ai/routes/gifts/deploy', { version: 1 })).body.deployed).toBe(1); // any earlier one
    expect(await served()).toBe('gifts@1 a');

    const list = await call('GET', '/admin/ai/routes');
    expect(list.status).toBe(200);
    expect(list.body.routes).toEqual([
      { name: 'gifts', deployed: 1, latest: 3, deployed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    ]);
    const show = await call('GET', '/admin/ai/routes/gifts');
    expect(show.body).toMatchObject({ name: 'gifts', deployed: 1, latest: 3 });
    expect(show.body.versions!.map((v) => [v.version, v.deployed])).toEqual([
      [3, false],
      [2, false],
      [1, true],
    ]);
  });

  it('404 for an unknown version or route; nothing changes', async () => {
    const { call, served } = await setup();
    await call('POST', '/admin/ai/routes/gifts/versions', { definition: step('a') });
    await call('POST', '/admin/ai/routes/gifts/deploy', { version: 1 });
    const missing = await call('POST', '/admin/ai/routes/gifts/deploy', { version: 7 });
    expect(missing.status).toBe(404);
    expect(missing.type).toContain('application/problem+json');
    expect(missing.body).toMatchObject({ code: 'not_found', reason: 'unknown_version' });
    expect((await call('POST', '/admin/ai/routes/gifts/rollback', {})).body).toMatchObject({
      code: 'not_found',
      reason: 'no_earlier_version',
    });
    expect((await call('GET', '/admin/ai/routes/other')).status).toBe(404);
    expect((await call('POST', '/admin/ai/routes/other/deploy', { version: 1 })).status).toBe(404);
    expect(await served()).toBe('gifts@1 a');
  });

  it('400 invalid_route with the JSON path of the bad field; nothing is stored', async () => {
    const { call, store } = await setup();
    const bad = await call('POST', '/admin/ai/routes/gifts/versions', {
      definition: {
        type: 'fallback',
        chain: [
          step('a'),
          { type: 'split', splits: [{ weight: 100, then: { ...step('b'), maxAttempts: 9 } }] },
        ],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.type).toContain('application/problem+json');
    expect(bad.body).toMatchObject({
      code: 'invalid_payload',
      reason: 'invalid_route',
      path: '$.chain[1].splits[0].then.maxAttempts',
      error: { code: 'invalid_route' },
    });
    expect(bad.body.detail).toContain('$.chain[1].splits[0].then.maxAttempts');

    const provider = await call('POST', '/admin/ai/routes/gifts/versions', {
      definition: step('a', { provider: 'opneai' }),
    });
    expect(provider.body).toMatchObject({ reason: 'invalid_route', path: '$.provider' });
    const noDefinition = await call('POST', '/admin/ai/routes/gifts/versions', {});
    expect(noDefinition.body).toMatchObject({ reason: 'invalid_body', field: 'definition' });
    const notObject = await call('POST', '/admin/ai/routes/gifts/versions', { definition: [step('a')] });
    expect(notObject.body).toMatchObject({ reason: 'invalid_route', path: '$' });
    const badBody = await call('POST', '/admin/ai/routes/gifts/deploy', { version: 'one' });
    expect(badBody.body).toMatchObject({ status: 400, reason: 'invalid_body', field: 'version' });
    const badName = await call('POST', '/admin/ai/routes/bad%20name/versions', { definition: step('a') });
    expect(badName.body).toMatchObject({ status: 400, reason: 'invalid_name' });
    expect(await store.routes.heads()).toEqual([]);
  });

  it('refuses a stored version whose definition is invalid (written around the API)', async () => {
    const { call, store } = await setup();
    await store.routes.create('gifts', { type: 'model', name: 'a', provider: 'sim' });
    const refused = await call('POST', '/admin/ai/routes/gifts/deploy', { version: 1 });
    expect(refused.body).toMatchObject({ status: 400, reason: 'invalid_route', path: '$.model' });
    expect((await store.routes.heads())[0]!.deployed).toBeNull();
  });

  it('answers 403 to a client that is not on this machine', async () => {
    const { admin, store } = await setup();
    for (const [method, url] of [
      ['GET', '/admin/ai/routes'],
      ['GET', '/admin/ai/routes/gifts'],
      ['POST', '/admin/ai/routes/gifts/versions'],
      ['POST', '/admin/ai/routes/gifts/deploy'],
      ['POST', '/admin/ai/routes/gifts/rollback'],
    ] as const) {
      const response = await admin.inject({
        method,
        url,
        remoteAddress: '203.0.113.9',
        ...(method === 'POST' ? { payload: { definition: step('a'), version: 1 } } : {}),
      });
      expect(response.statusCode).toBe(403);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ code: 'unauthorized', status: 403 });
    }
    expect(await store.routes.heads()).toEqual([]);
    const local = await admin.inject({
      method: 'GET',
      url: '/admin/ai/routes',
      remoteAddress: '::ffff:127.0.0.1',
    });
    expect(local.statusCode).toBe(200);
  });
});
