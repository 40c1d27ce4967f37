/**
 * The front door attacked from outside over real HTTP (part 2): DNS rebinding on every route,
 * forged proxy headers, one principal exhausting its MCP sessions and event streams, the startup refusal, and
 * malformed input. A GiftGenius gateway on a temporary SQLite file (see front-door-support.ts).
 */
import { request as httpRequestFn } from 'node:http';
import { describe, expect, it } from 'vitest';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { startGateway } from '../../src/gateway/index.js';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { FAST_SETTINGS, startBackends, startGiftGenius, tempDb, useCleanups } from '../e2e/support.js';
import {
  ADMIN_TOKEN,
  ANALYSIS,
  INITIALIZE,
  MCP_POST_HEADERS,
  bearer,
  connectAs,
  frontDoor,
  raw,
} from './front-door-support.js';

const defer = useCleanups();

const EVIL_HOST = { host: 'evil.example' };

describe('DNS rebinding', () => {
  it('a foreign Host or Origin is 403 on every route but /mcp, before any effect', async () => {
    const { gw, a } = await frontDoor(defer, { stepMs: 1_500 });
    const port = new URL(gw.url).port;
    const mcpA = await connectAs(defer, gw.mcpUrl, a.key);
    const jobId: string = (await mcpA.call('start_deep_analysis', ANALYSIS)).structuredContent.job_id;
    const delivery = paymentDelivery(DEMO_WEBHOOK_SECRET, {
      id: 'evt_rebound',
      type: 'payment_intent.payment_failed',
      orderId: 'ord_x',
      customerId: 'cus_x',
      amountCents: 100,
    });
    const json = { 'content-type': 'application/json' };
    const routes: Array<[string, string, Record<string, string>, string | undefined]> = [
      ['POST', '/v1/chat/completions', json, JSON.stringify({ model: 'x', messages: [] })],
      ['GET', '/jobs', {}, undefined],
      ['GET', `/jobs/${jobId}`, {}, undefined],
      ['POST', `/jobs/${jobId}/cancel`, {}, undefined],
      ['GET', '/metrics', {}, undefined],
      ['GET', '/healthz', {}, undefined],
      ['POST', '/webhooks/payments', delivery.headers, delivery.body],
      ['GET', '/admin/api/overview', {}, undefined],
      ['GET', '/', {}, undefined],
    ];
    const rebinds: Array<[string, Record<string, string>, string]> = [
      ['host', EVIL_HOST, 'host_not_allowed'],
      ['host and origin', { ...EVIL_HOST, origin: 'http://evil.example' }, 'host_not_allowed'],
      ['origin', { host: `127.0.0.1:${port}`, origin: 'http://evil.example' }, 'origin_not_allowed'],
      ['null origin', { host: `127.0.0.1:${port}`, origin: 'null' }, 'origin_not_allowed'],
    ];
    for (const [method, path, headers, body] of routes) {
      for (const [what, forged, reason] of rebinds) {
        // The admin token rides along: what refuses the request is the name, not a missing credential.
        const answer = await raw(`${gw.url}${path}`, {
          method,
          headers: { ...headers, ...bearer(ADMIN_TOKEN), ...forged },
          body,
        });
        expect({
          route: `${method} ${path}`,
          what,
          status: answer.status,
          reason: answer.json?.reason,
        }).toEqual({
          route: `${method} ${path}`,
          what,
          status: 403,
          reason,
        });
      }
      const malformed = await raw(`${gw.url}${path}`, {
        method,
        headers: { ...headers, ...bearer(ADMIN_TOKEN), host: '[::1]evil.example' },
        body,
      });
      expect([`${method} ${path}`, malformed.status, malformed.json?.reason]).toEqual([
        `${method} ${path}`,
        400,
        'host_malformed',
      ]);
    }
    // Nothing took effect: the job runs on, and no webhook job was made.
    expect((await gw.jobs.get(jobId))!.cancelRequestedAt).toBeNull();
    expect(await gw.jobs.list({ owner: 'webhook:payments', limit: 10 })).toEqual([]);
  });

  it('/mcp: a rebound initialize and tools/call checkout place no order', async () => {
    const { gw, backends, a } = await frontDoor(defer);
    const port = new URL(gw.url).port;
    const orders = async () =>
      ((await (await fetch(`${backends.services.commerce.url}/orders`)).json()) as { orders: unknown[] })
        .orders;
    for (const forged of [EVIL_HOST, { host: `127.0.0.1:${port}`, origin: 'http://evil.example' }]) {
      const answer = await raw(gw.mcpUrl, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, ...bearer(a.key), ...forged },
        body: INITIALIZE,
      });
      expect(answer.status).not.toBe(200);
      expect(answer.headers['mcp-session-id']).toBeUndefined();
    }
    // A session opened properly, then used under the attacker's name.
    const opened = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key) },
      body: INITIALIZE,
    });
    const session = opened.headers['mcp-session-id'] as string;
    const call = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key), ...EVIL_HOST, 'mcp-session-id': session },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'checkout', arguments: { product_id: 'p001', customer_id: 'cus_evil' } },
      }),
    });
    expect(call.status).not.toBe(200);
    expect(await orders()).toEqual([]);
  });

  // Found by this suite (500 "Internal error" before): the route's own error handler read `statusCode`, a
  // BreakwaterError carries `status`.
  it('/mcp: a rebound initialize is 403 host_not_allowed, a malformed Host 400 (MCP conformance)', async () => {
    const { gw, a } = await frontDoor(defer);
    const rebound = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key), ...EVIL_HOST, origin: 'http://evil.example' },
      body: INITIALIZE,
    });
    expect(rebound.status).toBe(403);
    const malformed = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key), host: '[::1]evil.example' },
      body: INITIALIZE,
    });
    expect(malformed.status).toBe(400);
  });
});

describe('forged proxy headers', () => {
  it('loopback mode: a request from 127.0.0.1 with any forwarding header is not local (403)', async () => {
    const backends = await startBackends(defer);
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer), gateway: { env: {} } });
    expect(gw.authMode).toBe('loopback');
    expect((await raw(`${gw.url}/jobs`)).status).toBe(200);
    for (const header of [
      { 'x-forwarded-for': '127.0.0.1' } as Record<string, string>,
      { 'x-real-ip': '127.0.0.1' },
      { forwarded: 'for=127.0.0.1' },
      { via: '1.1 nginx' },
    ]) {
      for (const path of ['/jobs', '/metrics']) {
        const answer = await raw(`${gw.url}${path}`, { headers: header });
        expect([path, header, answer.status, answer.json?.reason]).toEqual([
          path,
          header,
          403,
          'loopback_only',
        ]);
      }
      const admin = await raw(`${gw.url}/admin/api/overview`, { headers: header });
      expect([header, admin.status]).toEqual([header, 403]);
    }
  });

  it('with trustedProxies, X-Forwarded-For from an untrusted peer does not spread the login throttle', async () => {
    const wrongThenRight = async (trustedProxies: string[]) => {
      const backends = await startBackends(defer);
      const gw = await startGiftGenius(defer, backends, {
        dbPath: tempDb(defer),
        gateway: { adminToken: ADMIN_TOKEN, trustedProxies, env: {} },
      });
      for (let i = 0; i < 10; i++) {
        const wrong = await raw(`${gw.url}/admin/api/overview`, {
          headers: { ...bearer(`wrong-admin-token-${i}-xxxxxxxx`), 'x-forwarded-for': `203.0.113.${i + 1}` },
        });
        expect(wrong.status).toBe(401);
      }
      return raw(`${gw.url}/admin/api/overview`, {
        headers: { ...bearer(ADMIN_TOKEN), 'x-forwarded-for': '203.0.113.200' },
      });
    };
    // 127.0.0.1 is not a trusted proxy: every wrong token counts against 127.0.0.1, whatever XFF says.
    const untrusted = await wrongThenRight(['10.0.0.0/8']);
    expect(untrusted.status).toBe(429);
    expect(untrusted.json.code).toBe('rate_limited');
    // The same with 127.0.0.1 trusted: each address is its own, and the right token is served.
    const trusted = await wrongThenRight(['127.0.0.1']);
    expect(trusted.status).toBe(200);
  });
});

describe('exhaustion by one principal leaves the other served', () => {
  it('A holding all its MCP sessions (each with a stream open) is refused 503; B initializes and calls a tool', async () => {
    const { gw, a, b } = await frontDoor(defer);
    const held: Array<() => void> = [];
    defer(() => held.forEach((drop) => drop()));
    const openStream = (session: string) =>
      new Promise<void>((resolve, reject) => {
        const url = new URL(gw.mcpUrl);
        const req = requestStream(url, {
          ...bearer(a.key),
          accept: 'text/event-stream',
          'mcp-session-id': session,
        });
        req.on('response', (res) => {
          if (res.statusCode !== 200) reject(new Error(`stream ${res.statusCode}`));
          held.push(() => req.destroy());
          resolve();
        });
        req.on('error', reject);
        req.end();
      });
    for (let i = 0; i < 100; i++) {
      const init = await raw(gw.mcpUrl, {
        method: 'POST',
        headers: { ...MCP_POST_HEADERS, ...bearer(a.key) },
        body: INITIALIZE,
      });
      expect(init.status).toBe(200);
      await openStream(init.headers['mcp-session-id'] as string);
    }
    const refused = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key) },
      body: INITIALIZE,
    });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');

    const mcpB = await connectAs(defer, gw.mcpUrl, b.key);
    const gifts = await mcpB.call('suggest_gifts', ANALYSIS);
    expect(gifts.isError).toBeFalsy();
    expect(gifts.structuredContent.gifts.length).toBeGreaterThan(0);
  });

  it('A at its 16 job event streams gets 429; B still follows its own job', async () => {
    const { gw, a, b } = await frontDoor(defer, { stepMs: 2_000 });
    const jobA: string = (
      await (await connectAs(defer, gw.mcpUrl, a.key)).call('start_deep_analysis', ANALYSIS)
    ).structuredContent.job_id;
    const jobB: string = (
      await (await connectAs(defer, gw.mcpUrl, b.key)).call('start_deep_analysis', ANALYSIS)
    ).structuredContent.job_id;
    const streams: AbortController[] = [];
    defer(() => streams.forEach((c) => c.abort()));
    const follow = async (key: string, job: string) => {
      const controller = new AbortController();
      streams.push(controller);
      const response = await fetch(`${gw.url}/jobs/${job}/events`, {
        headers: bearer(key),
        signal: controller.signal,
      });
      return response.status;
    };
    for (let i = 0; i < 16; i++) expect(await follow(a.key, jobA)).toBe(200);
    expect(await follow(a.key, jobA)).toBe(429);
    expect(await follow(b.key, jobB)).toBe(200);
  });
});

describe('startup without credentials', () => {
  it('refuses 0.0.0.0 with ERR_BREAKWATER_NO_AUTH; starts with insecureNoAuth', async () => {
    const backends = await startBackends(defer);
    const app = () => createGiftGeniusApp({ ...FAST_SETTINGS, ...backends.urls });
    const base = { port: 0, host: '0.0.0.0', env: {}, log: () => undefined, graceMs: 200 };
    await expect(startGateway({ ...base, app: app(), store: tempDb(defer) })).rejects.toMatchObject({
      code: 'ERR_BREAKWATER_NO_AUTH',
    });
    const open = await startGateway({ ...base, app: app(), store: tempDb(defer), insecureNoAuth: true });
    defer(() => open.close());
    expect(open.authMode).toBe('insecure');
    expect((await raw(`${open.url}/jobs`)).status).toBe(200);
  });
});

function requestStream(url: URL, headers: Record<string, string>) {
  return httpRequestFn({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'GET',
    headers,
    agent: false,
  });
}

describe('malformed input answers a clear 4xx, never 5xx', () => {
  const deepArray = `${'['.repeat(10_000)}"x"${']'.repeat(10_000)}`;
  const deepObject = `${'{"c":'.repeat(10_000)}{}${'}'.repeat(10_000)}`;

  // `messages` nested 10,000 deep answered 503 "limit store unavailable" (the cost estimate
  // overflowed the stack); the body parser now refuses past 64 levels.
  it('/v1/chat/completions with messages nested 10,000 deep is 4xx', async () => {
    const { gw, a } = await frontDoor(defer);
    for (const messages of [deepArray, `[{"role":"user","content":${deepArray}}]`]) {
      const answer = await raw(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(a.key) },
        body: `{"model":"sim/gift-ranker","messages":${messages}}`,
      });
      expect([answer.status, JSON.parse(answer.text).reason]).toEqual([400, 'too_deep']);
    }
  });

  it('bodies nested 10,000 deep on /mcp and the admin API', async () => {
    const { gw, a } = await frontDoor(defer);
    const json = { 'content-type': 'application/json' };
    const init = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key) },
      body: INITIALIZE,
    });
    const call = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: {
        ...MCP_POST_HEADERS,
        ...bearer(a.key),
        'mcp-session-id': init.headers['mcp-session-id'] as string,
      },
      body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"suggest_gifts","arguments":{"interests":${deepObject}}}}`,
    });
    // Refused before the SDK walks it: 400, JSON-RPC -32600, saying it nests too deep.
    expect(call.status).toBe(400);
    expect(call.text).toContain('-32600');
    expect(call.text).toContain('nests too deep');
    const key = await raw(`${gw.url}/admin/api/keys`, {
      method: 'POST',
      headers: { ...json, ...bearer(ADMIN_TOKEN) },
      body: `{"name":"n","scopes":["jobs"],"metadata":${deepObject}}`,
    });
    expect(key.status).toBe(413);
  });

  it('repeated query parameters, huge headers, a huge credential', async () => {
    const { gw, a } = await frontDoor(defer);
    const status = async (path: string, credential = a.key) =>
      (await raw(`${gw.url}${path}`, { headers: bearer(credential) })).status;
    expect(await status('/jobs?status=pending&status=failed')).toBe(200);
    for (const query of ['type', 'owner', 'limit', 'before_id']) {
      expect([query, await status(`/jobs?${query}=1&${query}=2`)]).toEqual([query, 400]);
    }
    expect(await status('/admin/api/jobs?type=a&type=b', ADMIN_TOKEN)).toBe(400);
    expect(await status('/admin/api/keys?limit=1&limit=2', ADMIN_TOKEN)).toBe(400);
    const bigHeader = await raw(`${gw.url}/jobs`, {
      headers: { ...bearer(a.key), 'x-big': 'a'.repeat(20_000) },
    });
    // Node's own answer to a header overflow is 431 too; front-door-input.test.ts has the whole answer.
    expect([bigHeader.status, bigHeader.json.reason]).toEqual([431, 'headers_too_large']);
    const bigCredential = await raw(`${gw.url}/jobs`, { headers: bearer('a'.repeat(15_000)) });
    expect([bigCredential.status, bigCredential.json.detail]).toEqual([401, 'The credential is too long.']);
    // A key in the query string is not a credential.
    expect(await status(`/jobs?api_key=${a.key}`, '')).toBe(401);
  });

  // Repeated, `source` and `before_id` arrived as arrays and the store threw (500).
  it('GET /admin/webhooks?source=a&source=b (and before_id twice) is 400, not 500', async () => {
    const { gw } = await frontDoor(defer);
    for (const query of ['source=a&source=b', 'before_id=a&before_id=b']) {
      const answer = await raw(`${gw.url}/admin/webhooks?${query}`, { headers: bearer(ADMIN_TOKEN) });
      expect([query, answer.status]).toEqual([query, 400]);
    }
  });
});
