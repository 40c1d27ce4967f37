/**
 * The admin JSON API behind the dashboard (docs/http.md#admin-api-and-dashboard) against a real GiftGenius
 * gateway: who may call it (bearer token, the login form's cookie, loopback without a token) and each
 * endpoint's answer, exactly.
 */
import { describe, expect, it } from 'vitest';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import type { Gateway } from '../../src/gateway/index.js';
import { connect, startBackends, tempDb, until, useCleanups, type Backends } from '../e2e/support.js';
import { REPORT_JOB, reportBroken, startDashboardGateway } from './support.js';

const defer = useCleanups();
const TOKEN = 'dashboard-test-token-5b1f0c2e';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read answers freely
type Json = any;

async function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Headers; body: Json }> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  const text = await response.text();
  const json = (response.headers.get('content-type') ?? '').includes('json') && text !== '';
  return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) : text };
}

const post = (url: string, headers: Record<string, string> = {}) => call(url, { method: 'POST', headers });

async function start(options: { token?: string } = {}): Promise<{ gw: Gateway; backends: Backends }> {
  const backends = await startBackends(defer);
  const gw = await startDashboardGateway(defer, backends, {
    dbPath: tempDb(defer),
    gateway:
      options.token === undefined ? {} : { env: { ...process.env, BREAKWATER_ADMIN_TOKEN: options.token } },
  });
  return { gw, backends };
}

/** The admin actions in the gateway's audit log, in order (`{ actor, action, target, … }`). */
async function adminAudit(gw: Gateway): Promise<Json[]> {
  await gw.audit.flush();
  return (await gw.store.audit.read(0, 10_000))
    .map((record) => JSON.parse(record.body))
    .filter((entry) => String(entry.action).startsWith('admin.'));
}

const closedBreaker = (name: string) => ({
  name,
  kind: 'upstream',
  state: 'closed',
  opened_at: null,
  retry_after_ms: null,
  consecutive_opens: 0,
  last_transition: null,
});

describe('admin auth over HTTP', () => {
  it('with BREAKWATER_ADMIN_TOKEN: bearer works from anywhere; none or a wrong one is 401 on every admin route', async () => {
    const { gw } = await start({ token: TOKEN });
    expect(gw.adminMode).toBe('token');
    for (const path of ['/admin/api/overview', '/admin/api/series', '/admin/webhooks', '/admin/ai/routes']) {
      const none = await call(`${gw.url}${path}`);
      expect([path, none.status, none.body.code, none.body.reason]).toEqual([
        path,
        401,
        'unauthorized',
        'credentials_missing',
      ]);
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="breakwater-admin"');
      const wrong = await call(`${gw.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}-not` } });
      expect([wrong.status, wrong.body.reason]).toEqual([401, 'invalid_token']);
      const right = await call(`${gw.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect([path, right.status]).toEqual([path, 200]);
    }
    // A client that is not on this machine gets in with the token (what the token is for).
    const remote = await gw.http.inject({
      url: '/admin/api/overview',
      remoteAddress: '203.0.113.9',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([remote.statusCode, remote.json().admin]).toEqual([200, { mode: 'token', access: 'bearer' }]);
    // The page sends a browser without a session to the login form.
    const page = await call(`${gw.url}/`);
    expect([page.status, page.headers.get('location')]).toEqual([303, '/admin/login']);
    const form = await call(`${gw.url}/admin/login`);
    expect([form.status, form.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect(form.body).toContain('<form id="login" method="post" action="/admin/login">');
    // No other page may frame the dashboard (clickjacking).
    for (const answer of [form, page]) {
      expect([answer.headers.get('content-security-policy'), answer.headers.get('x-frame-options')]).toEqual([
        "frame-ancestors 'none'",
        'DENY',
      ]);
    }
  });

  it('the login form sets an HttpOnly SameSite=Strict cookie; the cookie reads, and writes with the page header', async () => {
    const { gw } = await start({ token: TOKEN });
    const wrong = await call(`${gw.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'not-the-token-at-all' }),
    });
    expect([wrong.status, wrong.body.code, wrong.body.reason, wrong.headers.get('set-cookie')]).toEqual([
      401,
      'unauthorized',
      'invalid_token',
      null,
    ]);
    const login = await call(`${gw.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect([login.status, login.body]).toEqual([200, { ok: true }]);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(
      /^breakwater_admin=[\w-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/,
    );
    const cookie = setCookie.split(';')[0]!;

    const overview = await call(`${gw.url}/admin/api/overview`, { headers: { cookie } });
    expect([overview.status, overview.body.admin]).toEqual([200, { mode: 'token', access: 'session' }]);
    const page = await call(`${gw.url}/`, { headers: { cookie } });
    expect([page.status, page.headers.get('cache-control')]).toEqual([200, 'no-store']);

    const isolate = `${gw.url}/admin/api/breakers/gift/isolate`;
    const noHeader = await post(isolate, { cookie });
    expect([noHeader.status, noHeader.body.reason]).toEqual([403, 'csrf_header_missing']);
    const crossSite = await post(isolate, {
      cookie,
      'x-breakwater-admin': '1',
      origin: 'http://evil.example',
    });
    // The edge refuses a foreign Origin before the admin check's own cross-site rule.
    expect([crossSite.status, crossSite.body.reason]).toEqual([403, 'origin_not_allowed']);
    expect(gw.parts.upstreams![0]!.breaker!.state().state).toBe('closed');
    const done = await post(isolate, { cookie, 'x-breakwater-admin': '1' });
    expect([done.status, done.body.state]).toEqual([200, 'isolated']);

    // Without script, the form posts itself and lands on the dashboard.
    const plain = await call(`${gw.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${encodeURIComponent(TOKEN)}`,
    });
    expect([plain.status, plain.headers.get('location')]).toEqual([303, '/']);
    const logout = await post(`${gw.url}/admin/logout`, { cookie });
    expect([logout.status, logout.headers.get('set-cookie')]).toEqual([
      204,
      'breakwater_admin=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    ]);
    // The session is revoked server-side: the same cookie, kept by anyone, no longer opens anything.
    const replayed = await call(`${gw.url}/admin/api/overview`, { headers: { cookie } });
    expect([replayed.status, replayed.body.reason]).toEqual([401, 'session_revoked']);
    const replayedWrite = await post(isolate, { cookie, 'x-breakwater-admin': '1' });
    expect([replayedWrite.status, replayedWrite.body.reason]).toEqual([401, 'session_revoked']);
    const replayedPage = await call(`${gw.url}/`, { headers: { cookie } });
    expect([replayedPage.status, replayedPage.headers.get('location')]).toEqual([303, '/admin/login']);
    // The form's own session still works; a logout without a live session clears the cookie and is no action.
    const formCookie = plain.headers.get('set-cookie')!.split(';')[0]!;
    expect((await call(`${gw.url}/admin/api/overview`, { headers: { cookie: formCookie } })).status).toBe(
      200,
    );
    const again = await post(`${gw.url}/admin/logout`, { cookie });
    expect([again.status, again.headers.get('set-cookie')]).toEqual([
      204,
      'breakwater_admin=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    ]);
    // The audit log names the wrong login first, then the logins, the isolate and the one real logout.
    const audited = (await adminAudit(gw)).map((r) => [r.action, r.target, r.actor]);
    expect(audited).toEqual([
      ['admin.login_failed', '/admin/login', 'http:127.0.0.1'],
      ['admin.login', '/admin/login', 'http:127.0.0.1'],
      ['admin.breaker_isolate', '/admin/api/breakers/gift/isolate', 'http:127.0.0.1'],
      ['admin.login', '/admin/login', 'http:127.0.0.1'],
      ['admin.logout', '/admin/logout', 'http:127.0.0.1'],
    ]);
  });

  it('a gateway restarted with a new BREAKWATER_ADMIN_TOKEN refuses every session of the old one', async () => {
    const backends = await startBackends(defer);
    const dbPath = tempDb(defer);
    const login = async (gw: Gateway, token: string) => {
      const answer = await call(`${gw.url}/admin/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      });
      return answer.headers.get('set-cookie')!.split(';')[0]!;
    };
    const first = await startDashboardGateway(defer, backends, { dbPath, gateway: { adminToken: TOKEN } });
    const cookie = await login(first, TOKEN);
    expect((await call(`${first.url}/admin/api/overview`, { headers: { cookie } })).status).toBe(200);
    await first.close();

    const next = 'dashboard-next-token-9e4a7b13';
    const second = await startDashboardGateway(defer, backends, { dbPath, gateway: { adminToken: next } });
    const refused = await call(`${second.url}/admin/api/overview`, { headers: { cookie } });
    expect([refused.status, refused.body.reason]).toEqual([401, 'session_unknown']);
    const fresh = await login(second, next);
    expect((await call(`${second.url}/admin/api/overview`, { headers: { cookie: fresh } })).status).toBe(200);
  });

  it('without a token: loopback clients only (403 otherwise), on the dashboard and the older admin routes alike', async () => {
    const { gw } = await start();
    expect(gw.adminMode).toBe('loopback');
    for (const url of ['/', '/admin/api/overview', '/admin/webhooks', '/admin/ai/routes']) {
      const remote = await gw.http.inject({ url, remoteAddress: '203.0.113.9' });
      expect([url, remote.statusCode, remote.json().code, remote.json().reason]).toEqual([
        url,
        403,
        'unauthorized',
        'not_loopback',
      ]);
      const local = await gw.http.inject({ url, remoteAddress: '127.0.0.1' });
      expect([url, local.statusCode]).toEqual([url, 200]);
    }
    const login = await call(`${gw.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect([login.status, login.body.reason]).toEqual([409, 'no_token_configured']);
  });

  it('refuses to start with a token shorter than 16 characters, naming the variable', async () => {
    const backends = await startBackends(defer);
    await expect(
      startDashboardGateway(defer, backends, {
        dbPath: tempDb(defer),
        gateway: { env: { ...process.env, BREAKWATER_ADMIN_TOKEN: 'too-short' } },
      }),
    ).rejects.toThrow('BREAKWATER_ADMIN_TOKEN must be at least 16 characters without whitespace');
  });
});

describe('the admin JSON API', () => {
  it('GET /admin/api/overview: breakers, bulkheads, jobs, dead letters, operations, webhooks and spend', async () => {
    const { gw } = await start();
    // The pruner measures the store once at start, in the background.
    await expect.poll(() => gw.pruner.size).toBeDefined();
    const { status, body, headers } = await call(`${gw.url}/admin/api/overview`);
    expect([status, headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(body).toEqual({
      generated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      admin: { mode: 'loopback', access: 'loopback' },
      breakers: [closedBreaker('gift'), closedBreaker('commerce'), closedBreaker('analytics')],
      bulkheads: [
        { name: 'gift', in_use: 0, queued: 0, max_concurrent: 10, max_queue: 20 },
        { name: 'commerce', in_use: 0, queued: 0, max_concurrent: 3, max_queue: 5 },
        { name: 'analytics', in_use: 0, queued: 0, max_concurrent: 50, max_queue: 0 },
      ],
      jobs: {
        counts: { pending: 0, in_progress: 0, input_required: 0, completed: 0, failed: 0, canceled: 0 },
        queue_depth: 0,
        oldest_pending_age_ms: null,
        dead_letters: 0,
        queues: [],
        queues_complete: true,
        recent: [],
      },
      dead_letters: [],
      operations: [],
      webhooks: { sources: [{ name: 'payments', accepted: 0, duplicate: 0, rejected: 0, backlog: 0 }] },
      spend: {
        rules: [
          {
            name: 'daily',
            budget_usd: 5,
            window_ms: 86_400_000,
            scope: { by: 'provider' },
            window_start: expect.stringMatching(/T00:00:00\.000Z$/),
            window_end: expect.stringMatching(/T00:00:00\.000Z$/),
            counters: [{ scope: 'sim', spent_usd: 0, reserved_usd: 0, remaining_usd: 5, used_ratio: 0 }],
            complete: true,
          },
        ],
      },
      store: {
        measured_at: new Date(gw.pruner.size!.measuredAt).toISOString(),
        rows: {
          jobs: 0,
          job_events: 0,
          webhook_inbox: 0,
          stream_events: 0,
          idempotency: 0,
          operations: 0,
          audit: 0,
        },
        bytes: gw.pruner.size!.bytes,
        last_prune: null,
      },
    });
  });

  it('counts webhook deliveries per source and spend per rule from the real requests', async () => {
    const { gw } = await start();
    const event = {
      id: 'evt_dash_1',
      type: 'payment_intent.created',
      orderId: 'o1',
      customerId: 'c1',
      amountCents: 100,
    };
    const delivery = paymentDelivery(DEMO_WEBHOOK_SECRET, event);
    const send = (headers: Record<string, string>) =>
      call(`${gw.url}/webhooks/payments`, { method: 'POST', headers, body: delivery.body });
    expect((await send(delivery.headers)).status).toBe(200);
    expect((await send(delivery.headers)).body.duplicate).toBe(true);
    expect((await send({ ...delivery.headers, 'stripe-signature': 't=1,v1=00' })).status).toBe(401);

    const ai = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-breakwater-metadata': '{"user":"sam"}' },
      body: JSON.stringify({
        model: 'sim/gift-ranker',
        max_tokens: 40,
        messages: [{ role: 'user', content: 'Three gift ideas for a coffee lover.' }],
      }),
    });
    expect(ai.status).toBe(200);
    const cost = Number(ai.headers.get('x-breakwater-cost-usd'));
    expect(cost).toBeGreaterThan(0);

    await until(async () => (await gw.jobs.stats()).counts.completed === 1, 'the webhook job to finish');
    const { body } = await call(`${gw.url}/admin/api/overview`);
    expect(body.webhooks).toEqual({
      sources: [{ name: 'payments', accepted: 1, duplicate: 1, rejected: 1, backlog: 0 }],
    });
    // Spend is kept in whole micro-USD, each request's cost rounded up (never under-counted).
    const micro = Math.ceil(Math.round(cost * 1e12) / 1e6);
    expect(body.spend.rules[0].counters).toEqual([
      {
        scope: 'sim',
        spent_usd: micro / 1e6,
        reserved_usd: 0,
        remaining_usd: (5_000_000 - micro) / 1e6,
        used_ratio: micro / 5_000_000,
      },
    ]);
  });

  it('isolates and resets a breaker, with its last transition; an unknown name is 404', async () => {
    const { gw } = await start();
    const isolated = await post(`${gw.url}/admin/api/breakers/commerce/isolate`);
    expect(isolated.status).toBe(200);
    expect(isolated.body).toEqual({
      name: 'commerce',
      kind: 'upstream',
      state: 'isolated',
      opened_at: expect.any(String),
      retry_after_ms: null,
      consecutive_opens: 0,
      last_transition: { from: 'closed', to: 'isolated', reason: 'isolated', at: isolated.body.opened_at },
    });
    const reset = await post(`${gw.url}/admin/api/breakers/commerce/reset`);
    expect(reset.body).toEqual({
      ...closedBreaker('commerce'),
      opened_at: null,
      last_transition: { from: 'isolated', to: 'closed', reason: 'reset', at: expect.any(String) },
    });
    const unknown = await post(`${gw.url}/admin/api/breakers/nope/isolate`);
    expect([unknown.status, unknown.body.code, unknown.body.detail]).toEqual([
      404,
      'not_found',
      'There is no breaker named "nope".',
    ]);
    const actions = (await adminAudit(gw)).map((r) => [r.action, r.target]);
    expect(actions).toEqual([
      ['admin.breaker_isolate', '/admin/api/breakers/commerce/isolate'],
      ['admin.breaker_reset', '/admin/api/breakers/commerce/reset'],
    ]);
  });

  it('lists dead letters and retries one (the same action as `breakwater jobs retry`)', async () => {
    const { gw } = await start();
    reportBroken.value = true;
    const jobId = await gw.jobs.enqueue(REPORT_JOB, { week: 1 });
    await until(async () => (await gw.jobs.get(jobId))?.status === 'failed', 'the job to fail');
    const listed = await call(`${gw.url}/admin/api/jobs?status=failed`);
    expect(listed.body).toEqual({
      jobs: [
        expect.objectContaining({
          id: jobId,
          type: REPORT_JOB,
          status: 'failed',
          attempts: 1,
          max_attempts: 1,
          error: {
            code: 'invalid_payload',
            message: 'The report template is missing.',
            kind: 'permanent',
            userFacing: true,
            retry_at: null,
            retry_after_ms: null,
          },
          status_url: `${gw.url}/jobs/${jobId}`,
        }),
      ],
      next_before_id: null,
    });
    const overview = await call(`${gw.url}/admin/api/overview`);
    expect([overview.body.jobs.dead_letters, overview.body.dead_letters.map((j: Json) => j.id)]).toEqual([
      1,
      [jobId],
    ]);

    reportBroken.value = false;
    const retried = await post(`${gw.url}/admin/api/jobs/${jobId}/retry`);
    expect([retried.status, retried.body.id, retried.body.status, retried.body.attempts]).toEqual([
      200,
      jobId,
      'pending',
      0,
    ]);
    await until(
      async () => (await gw.jobs.get(jobId))?.status === 'completed',
      'the retried job to complete',
    );
    const again = await post(`${gw.url}/admin/api/jobs/${jobId}/retry`);
    expect([again.status, again.body.code, again.body.status]).toEqual([400, 'invalid_payload', 400]);
    const missing = await post(`${gw.url}/admin/api/jobs/job_missing/retry`);
    expect([missing.status, missing.body.code]).toEqual([404, 'not_found']);
    const running = await call(`${gw.url}/admin/api/jobs?status=completed&type=${REPORT_JOB}&limit=1`);
    expect(running.body.jobs.map((j: Json) => [j.id, j.status, j.result])).toEqual([
      [jobId, 'completed', { summary: 'The weekly report was sent.' }],
    ]);
  });

  it('lists unknown operations and reconciles one (the same action as `breakwater ops reconcile`)', async () => {
    const { gw, backends } = await start();
    const mcp = await connect(defer, gw.mcpUrl);
    const commerce = backends.services.commerce;
    commerce.faults.set({ hang: true });
    const lost = await mcp.call('checkout', { product_id: 'p009', quantity: 2, customer_id: 'cus_api' });
    const id = lost.structuredContent.error.operation_id as string;
    await until(() => commerce.faults.hanging() === 0, 'the hanging requests to end');
    commerce.faults.clear();

    const listed = await call(`${gw.url}/admin/api/operations?state=unknown&state=needs_attention`);
    expect(listed.body).toEqual({
      operations: [
        {
          id,
          action: 'commerce.create_order',
          target: 'POST commerce /orders',
          state: 'unknown',
          attempts: 1,
          retry_allowed: true,
          observation: 'timeout',
          reconcile: { method: 'GET', path: `/orders?idempotency_key=${id}` },
          result: null,
          error: null,
          evidence: expect.objectContaining({ last_lookup: 'lookup failed: timeout' }),
          created_at: expect.any(String),
          updated_at: expect.any(String),
          recovery_deadline_at: expect.any(String),
          next_check_at: expect.any(String),
          settled_at: null,
        },
      ],
      next_before_id: null,
    });
    // The commerce breaker, opened by the hang, lets a trial through after its 200 ms.
    await until(() => gw.parts.upstreams![1]!.breaker!.state().state !== 'open', 'the commerce breaker');
    const done = await post(`${gw.url}/admin/api/operations/${id}/reconcile`);
    expect([
      done.status,
      done.body.outcome,
      done.body.operation.state,
      done.body.operation.settled_at,
    ]).toEqual([200, 'settled', expect.any(String), expect.any(String)]);
    const orders = (await call(`${commerce.url}/orders`)).body.orders;
    expect([done.body.operation.state, orders.length]).toEqual(['succeeded', 1]);
    const again = await post(`${gw.url}/admin/api/operations/${id}/reconcile`);
    expect([again.status, again.body.outcome]).toEqual([200, 'settled']);
    const missing = await post(`${gw.url}/admin/api/operations/op_missing/reconcile`);
    expect([missing.status, missing.body.code]).toEqual([404, 'not_found']);
    const audited = (await adminAudit(gw)).filter((r) => r.action === 'admin.operation_reconcile');
    expect(audited.map((r) => r.target)).toEqual([
      `/admin/api/operations/${id}/reconcile`,
      `/admin/api/operations/${id}/reconcile`,
    ]);
  });

  it('GET /admin/api/series: intervals of 2 s over 10 minutes, each point with every field', async () => {
    const { gw } = await start();
    const { body } = await call(`${gw.url}/admin/api/series`);
    expect([body.interval_ms, body.window_ms, Array.isArray(body.points)]).toEqual([2_000, 600_000, true]);
    for (const point of body.points) {
      expect(Object.keys(point)).toEqual([
        'at',
        'upstream_calls',
        'upstream_failures',
        'webhook_deliveries',
        'ai_requests',
        'job_runs',
        'rejections',
        'latency_ms',
      ]);
    }
  });
});
