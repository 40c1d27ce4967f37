/**
 * An app's own HTTP routes (`AppParts.routes`), mounted by a real gateway and called over real HTTP: who may
 * call them, the edge's Host/Origin check, the inbound `Idempotency-Key` bound to the calling principal, and
 * the startup refusal of paths the gateway serves itself. Then GiftGenius's `POST /giftgenius/orders`.
 */
import { describe, expect, it } from 'vitest';
import {
  defineApp,
  startGateway,
  type AppParts,
  type BreakwaterApp,
  type Gateway,
} from '../../src/entries/gateway.js';
import { ADMIN_TOKEN, bearer, createKey, raw, type RawAnswer } from '../adversarial/front-door-support.js';
import { startBackends, startGiftGenius, tempDb, useCleanups } from './support.js';

const defer = useCleanups();
const JSON_TYPE = { 'content-type': 'application/json' };

/** A shop whose `POST /shop/orders` counts its runs; `GET /shop/status` is public. */
function shopApp(runs: string[]): BreakwaterApp {
  return defineApp({
    setup: (): AppParts => ({
      name: 'shop',
      version: '1.0.0',
      routes: {
        prefix: '/shop',
        plugin: async (app) => {
          app.post<{ Body: { item: string } }>(
            '/orders',
            { config: { idempotency: true } },
            async (request, reply) => {
              runs.push(request.principal.id);
              return reply.code(201).send({ order: runs.length, item: request.body.item });
            },
          );
          app.get('/status', { config: { access: 'public' } }, async () => ({ open: true }));
        },
      },
    }),
  });
}

async function startShop(runs: string[], adminToken?: string): Promise<Gateway> {
  const gw = await startGateway({
    app: shopApp(runs),
    store: tempDb(defer),
    port: 0,
    log: () => undefined,
    graceMs: 200,
    ...(adminToken === undefined ? {} : { adminToken }),
  });
  defer(() => gw.close());
  return gw;
}

const order = (
  gw: Gateway,
  headers: Record<string, string>,
  body: Record<string, unknown> = { item: 'tea' },
): Promise<RawAnswer> =>
  raw(`${gw.url}/shop/orders`, {
    method: 'POST',
    headers: { ...JSON_TYPE, ...headers },
    body: JSON.stringify(body),
  });

describe("an app's own routes", () => {
  it('answer the MCP callers; a stranger, a bad credential and a key without the scope are refused', async () => {
    const runs: string[] = [];
    const gw = await startShop(runs, ADMIN_TOKEN);
    expect(gw.appRoutes).toEqual(['POST /shop/orders', 'GET /shop/status']);
    const a = await createKey(gw, { name: 'A', scopes: ['mcp'] });
    const scraper = await createKey(gw, { name: 'scraper', scopes: ['metrics'] });

    const ok = await order(gw, bearer(a.key));
    expect([ok.status, ok.json]).toEqual([201, { order: 1, item: 'tea' }]);
    expect(runs).toEqual([`key:${a.id}`]);

    const stranger = await order(gw, {});
    expect([stranger.status, stranger.json.code, stranger.json.reason]).toEqual([
      401,
      'unauthorized',
      'credentials_missing',
    ]);
    expect(stranger.headers['www-authenticate']).toMatch(/^Bearer /);
    const forged = await order(gw, bearer('bw_not-a-key'));
    expect([forged.status, forged.json.code]).toEqual([401, 'unauthorized']);
    const unscoped = await order(gw, bearer(scraper.key));
    expect([unscoped.status, unscoped.json.code, unscoped.json.reason]).toEqual([
      403,
      'unauthorized',
      'insufficient_scope',
    ]);
    // A route that says it is public is served to anyone.
    const status = await raw(`${gw.url}/shop/status`);
    expect([status.status, status.json]).toEqual([200, { open: true }]);
    expect(runs).toHaveLength(1);
  });

  it('a foreign Host or Origin is refused before the handler runs', async () => {
    const runs: string[] = [];
    const gw = await startShop(runs, ADMIN_TOKEN);
    const a = await createKey(gw, { name: 'A', scopes: ['mcp'] });
    const host = `127.0.0.1:${new URL(gw.url).port}`;
    const foreignHost = await order(gw, { ...bearer(a.key), host: 'evil.example' });
    expect([foreignHost.status, foreignHost.json.reason]).toEqual([403, 'host_not_allowed']);
    const foreignOrigin = await order(gw, { ...bearer(a.key), host, origin: 'http://evil.example' });
    expect([foreignOrigin.status, foreignOrigin.json.reason]).toEqual([403, 'origin_not_allowed']);
    expect(runs).toEqual([]);
  });

  it('in loopback mode: this machine is served, a forwarded client gets 403 loopback_only', async () => {
    const runs: string[] = [];
    const gw = await startShop(runs);
    expect(gw.authMode).toBe('loopback');
    const local = await order(gw, {});
    expect(local.status).toBe(201);
    const forwarded = await order(gw, { 'x-forwarded-for': '203.0.113.9' });
    expect([forwarded.status, forwarded.json.code, forwarded.json.reason]).toEqual([
      403,
      'unauthorized',
      'loopback_only',
    ]);
    expect(runs).toEqual(['local']);
  });

  it('Idempotency-Key replays for the same principal only; another body under the key is 422', async () => {
    const runs: string[] = [];
    const gw = await startShop(runs, ADMIN_TOKEN);
    const a = await createKey(gw, { name: 'A', scopes: ['mcp'] });
    const b = await createKey(gw, { name: 'B', scopes: ['mcp'] });
    const key = { 'idempotency-key': 'order-7' };

    const first = await order(gw, { ...bearer(a.key), ...key });
    expect([first.status, first.json, first.headers['idempotent-replayed']]).toEqual([
      201,
      { order: 1, item: 'tea' },
      undefined,
    ]);
    const again = await order(gw, { ...bearer(a.key), ...key });
    expect([again.status, again.json, again.headers['idempotent-replayed']]).toEqual([
      201,
      { order: 1, item: 'tea' },
      'true',
    ]);
    // B sends the same key and body: its own request, run for it, never A's stored answer.
    const other = await order(gw, { ...bearer(b.key), ...key });
    expect([other.status, other.json, other.headers['idempotent-replayed']]).toEqual([
      201,
      { order: 2, item: 'tea' },
      undefined,
    ]);
    expect(runs).toEqual([`key:${a.id}`, `key:${b.id}`]);

    const mismatch = await order(gw, { ...bearer(a.key), ...key }, { item: 'coffee' });
    expect([mismatch.status, mismatch.json.code]).toEqual([422, 'idempotency_key_mismatch']);
    expect(mismatch.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(runs).toHaveLength(2);
  });

  it('a route or prefix under a path the gateway serves is refused at startup', async () => {
    const apps: Array<[string, AppParts['routes'], RegExp]> = [
      [
        '/mcp/…',
        async (app) => void app.get('/mcp/extra', async () => ({})),
        /route GET \/mcp\/extra is under \/mcp,/,
      ],
      ['/jobs', async (app) => void app.post('/jobs', async () => ({})), /POST \/jobs is under \/jobs/],
      ['/', async (app) => void app.get('/', async () => ({})), /route GET \/ is under \/,/],
      ['/V1 (any case)', async (app) => void app.post('/V1/x', async () => ({})), /is under \/v1/],
      [':param', async (app) => void app.get('/:slug', async () => ({})), /starts with a parameter/],
      [
        'prefix /admin',
        { prefix: '/admin/shop', plugin: async () => undefined },
        /prefix \/admin\/shop is under \/admin/,
      ],
      ['bad prefix', { prefix: 'shop/', plugin: async () => undefined }, /prefix must be a path/],
      ['bad access', { plugin: async () => undefined, access: [] }, /access must be/],
    ];
    for (const [what, routes, message] of apps) {
      const started = startGateway({
        app: defineApp({ setup: () => ({ name: 'bad', version: '1.0.0', routes }) }),
        store: tempDb(defer),
        port: 0,
        log: () => undefined,
      });
      const error = await started.then(
        (gw) => {
          defer(() => gw.close());
          return undefined;
        },
        (refused: Error & { code?: string }) => refused,
      );
      expect(error).toBeInstanceOf(RangeError);
      expect({ what, code: error?.code, message: error?.message }).toEqual({
        what,
        code: 'ERR_BREAKWATER_APP_ROUTES',
        message: expect.stringMatching(message),
      });
    }
  });
});

describe('GiftGenius POST /giftgenius/orders', () => {
  it('orders once per Idempotency-Key; the key is required; a retry replays the order', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, {
      dbPath: tempDb(defer),
      gateway: { adminToken: ADMIN_TOKEN },
    });
    expect(gw.appRoutes).toEqual(['POST /giftgenius/orders']);
    const a = await createKey(gw, { name: 'A', scopes: ['mcp'] });
    const post = (headers: Record<string, string>, body: Record<string, unknown>) =>
      raw(`${gw.url}/giftgenius/orders`, {
        method: 'POST',
        headers: { ...JSON_TYPE, ...bearer(a.key), ...headers },
        body: JSON.stringify(body),
      });
    const body = { product_id: 'p001', customer_id: 'cus_1' };

    const missing = await post({}, body);
    expect([missing.status, missing.json.code]).toEqual([400, 'idempotency_key_missing']);
    const invalid = await post({ 'idempotency-key': 'k1' }, { product_id: 'p001' });
    expect([invalid.status, invalid.json.code]).toEqual([400, 'invalid_payload']);

    const first = await post({ 'idempotency-key': 'checkout-1' }, body);
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({ product_id: 'p001', quantity: 1, status: 'confirmed' });
    expect(first.json.operation_id).toMatch(/^op_/);
    const retry = await post({ 'idempotency-key': 'checkout-1' }, body);
    expect([retry.status, retry.json, retry.headers['idempotent-replayed']]).toEqual([
      201,
      first.json,
      'true',
    ]);
    // One order at commerce, one operation in the ledger, owned by the caller.
    const operations = await gw.store.operations.list({});
    expect(operations.map((op) => [op.id, op.state, op.owner])).toEqual([
      [first.json.operation_id, 'succeeded', `key:${a.id}`],
    ]);
    const stranger = await raw(`${gw.url}/giftgenius/orders`, {
      method: 'POST',
      headers: { ...JSON_TYPE, 'idempotency-key': 'checkout-2' },
      body: JSON.stringify(body),
    });
    expect([stranger.status, stranger.json.code]).toEqual([401, 'unauthorized']);
  });
});
