/**
 * The front door attacked from outside over real HTTP (part 1): one principal against another's
 * jobs, tasks and operations, and the credentials themselves. A GiftGenius gateway on a temporary SQLite file
 * with the admin token and two API keys A and B (scopes mcp, jobs, ai) made through the admin API.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { until, useCleanups } from '../e2e/support.js';
import {
  ADMIN_TOKEN,
  ANALYSIS,
  bearer,
  connectAs,
  createKey,
  frontDoor,
  INITIALIZE,
  MCP_POST_HEADERS,
  raw,
  type RawAnswer,
} from './front-door-support.js';

const defer = useCleanups();

const UNKNOWN_JOB = 'job_00000000-0000-7000-8000-000000000000';

/** What an answer tells a client, without the parts that name the id asked for. */
const shape = (answer: RawAnswer, id: string) => ({
  status: answer.status,
  type: answer.headers['content-type'],
  body: answer.text.replaceAll(id, '<id>'),
});

const rpcError = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected an error');
    },
    (error: unknown) => ({ code: (error as McpError).code, message: (error as McpError).message }),
  );

describe('cross-principal: B against what A started', () => {
  it('B reading, following and cancelling A’s job gets the 404 of an unknown id, and A’s job runs on', async () => {
    const { gw, a, b } = await frontDoor(defer, { stepMs: 1_500 });
    const mcpA = await connectAs(defer, gw.mcpUrl, a.key);
    const started = await mcpA.call('start_deep_analysis', ANALYSIS);
    const jobId: string = started.structuredContent.job_id;
    expect(started.structuredContent.status_url).toBe(`${gw.url}/jobs/${jobId}`);
    expect((await gw.jobs.get(jobId))!.owner).toBe(`key:${a.id}`);

    for (const [method, path] of [
      ['GET', `/jobs/:id`],
      ['GET', `/jobs/:id/events`],
      ['POST', `/jobs/:id/cancel`],
    ] as const) {
      const theirs = await raw(`${gw.url}${path.replace(':id', jobId)}`, { method, headers: bearer(b.key) });
      const unknown = await raw(`${gw.url}${path.replace(':id', UNKNOWN_JOB)}`, {
        method,
        headers: bearer(b.key),
      });
      expect(theirs.status, `${method} ${path}`).toBe(404);
      expect(theirs.json).toMatchObject({ code: 'not_found', detail: `There is no job ${jobId}.` });
      expect(shape(theirs, jobId)).toEqual(shape(unknown, UNKNOWN_JOB));
    }
    // x-api-key is the same principal: no other answer through the other header.
    const viaApiKey = await raw(`${gw.url}/jobs/${jobId}`, { headers: { 'x-api-key': b.key } });
    expect(viaApiKey.status).toBe(404);

    const job = await gw.jobs.get(jobId);
    expect(job).toMatchObject({ owner: `key:${a.id}`, cancelRequestedAt: null });
    expect(['pending', 'in_progress']).toContain(job!.status);
    // A still reads it.
    const mine = await raw(`${gw.url}/jobs/${jobId}`, { headers: bearer(a.key) });
    expect(mine.status).toBe(200);
    expect(mine.json.id).toBe(jobId);
  });

  it('B’s MCP session neither lists nor reads, awaits, cancels or asks after A’s task', async () => {
    const { gw, a, b } = await frontDoor(defer, { stepMs: 1_500 });
    const mcpA = await connectAs(defer, gw.mcpUrl, a.key);
    const created = await mcpA.client.request(
      { method: 'tools/call', params: { name: 'start_deep_analysis', arguments: ANALYSIS } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const taskId = created.task.taskId;
    const mcpB = await connectAs(defer, gw.mcpUrl, b.key);
    const tasks = mcpB.client.experimental.tasks;

    expect((await tasks.listTasks()).tasks).toEqual([]);
    expect(await rpcError(tasks.getTask(taskId))).toEqual(await rpcError(tasks.getTask(UNKNOWN_JOB)));
    expect(await rpcError(tasks.getTask(taskId))).toMatchObject({ code: -32602 });
    const result = (id: string) => tasks.getTaskResult(id, CallToolResultSchema);
    expect(await rpcError(result(taskId))).toEqual({
      code: -32602,
      message: `MCP error -32602: MCP error -32602: Task not found: ${taskId}`,
    });
    expect(await rpcError(tasks.cancelTask(taskId))).toEqual({
      code: -32602,
      message: `MCP error -32602: MCP error -32602: Task not found: ${taskId}`,
    });
    for (const tool of ['get_job_status', 'cancel_job']) {
      const answer = await mcpB.call(tool, { job_id: taskId });
      expect(answer).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: `There is no job ${taskId}.` }],
      });
    }
    const job = await gw.jobs.get(taskId);
    expect(job).toMatchObject({ owner: `key:${a.id}`, cancelRequestedAt: null });
    expect((await mcpA.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([taskId]);
  });

  it('B resuming A’s checkout operation_id gets not_found and no order is placed', async () => {
    const { gw, backends, a, b } = await frontDoor(defer);
    const orders = async () =>
      ((await (await fetch(`${backends.services.commerce.url}/orders`)).json()) as { orders: unknown[] })
        .orders;
    const mcpA = await connectAs(defer, gw.mcpUrl, a.key);
    const placed = await mcpA.call('checkout', { product_id: 'p001', customer_id: 'cus_a' });
    const operationId: string = placed.structuredContent.operation_id;
    expect(await orders()).toHaveLength(1);

    const mcpB = await connectAs(defer, gw.mcpUrl, b.key);
    const stolen = await mcpB.call('checkout', {
      product_id: 'p001',
      customer_id: 'cus_a',
      operation_id: operationId,
    });
    expect(stolen.isError).toBe(true);
    expect(stolen.structuredContent).toMatchObject({ error: { code: 'not_found' } });
    expect(await orders()).toHaveLength(1);
  });

  it('GET /jobs lists each key’s own jobs; a webhook’s job is admin’s alone to see', async () => {
    const { gw, a, b } = await frontDoor(defer);
    const mcpA = await connectAs(defer, gw.mcpUrl, a.key);
    const mcpB = await connectAs(defer, gw.mcpUrl, b.key);
    const jobA: string = (await mcpA.call('start_deep_analysis', ANALYSIS)).structuredContent.job_id;
    const jobB: string = (await mcpB.call('start_deep_analysis', ANALYSIS)).structuredContent.job_id;

    const delivery = paymentDelivery(DEMO_WEBHOOK_SECRET, {
      id: 'evt_front_door_1',
      type: 'payment_intent.payment_failed',
      orderId: 'ord_unknown',
      customerId: 'cus_a',
      amountCents: 1_000,
    });
    const accepted = await raw(`${gw.url}/webhooks/payments`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    expect(accepted.status).toBe(200);
    let webhookJob = '';
    await until(async () => {
      const found = await gw.jobs.list({ owner: 'webhook:payments', limit: 10 });
      webhookJob = found[0]?.id ?? '';
      return webhookJob !== '';
    }, 'the webhook job');

    const ids = async (credential: string, query = '') =>
      (
        (await raw(`${gw.url}/jobs${query}`, { headers: bearer(credential) })).json.jobs as Array<{
          id: string;
        }>
      )
        .map((job) => job.id)
        .sort();
    expect(await ids(a.key)).toEqual([jobA]);
    expect(await ids(b.key)).toEqual([jobB]);
    // Naming another owner lists nothing for a non-admin.
    expect(await ids(b.key, `?owner=key:${a.id}`)).toEqual([]);
    expect(await ids(a.key, '?owner=webhook:payments')).toEqual([]);
    expect(await ids(ADMIN_TOKEN)).toEqual([jobA, jobB, webhookJob].sort());

    for (const key of [a.key, b.key]) {
      expect((await raw(`${gw.url}/jobs/${webhookJob}`, { headers: bearer(key) })).status).toBe(404);
      const cancel = await raw(`${gw.url}/jobs/${webhookJob}/cancel`, {
        method: 'POST',
        headers: bearer(key),
      });
      expect(cancel.status).toBe(404);
    }
    expect((await gw.jobs.get(webhookJob))!.cancelRequestedAt).toBeNull();
    const seen = await raw(`${gw.url}/jobs/${webhookJob}`, { headers: bearer(ADMIN_TOKEN) });
    expect(seen.status).toBe(200);
    expect(seen.json.id).toBe(webhookJob);
  });
});

describe('credentials', () => {
  const challenge = 'Bearer realm="breakwater"';

  it('no credential: 401 with the challenge on /mcp, /v1, /jobs and /metrics; wrong key: invalid_token', async () => {
    const { gw } = await frontDoor(defer);
    for (const [method, path] of [
      ['POST', '/v1/chat/completions'],
      ['GET', '/jobs'],
      ['GET', '/metrics'],
    ] as const) {
      const answer = await raw(`${gw.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(answer.status, path).toBe(401);
      expect(answer.headers['www-authenticate'], path).toBe(challenge);
    }
    const wrong = await raw(`${gw.url}/jobs`, { headers: bearer('bw_notakey_0000000000000000') });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe(`${challenge}, error="invalid_token"`);
    const notOurs = await raw(`${gw.url}/jobs`, { headers: bearer('sk-something') });
    expect(notOurs.status).toBe(401);
    expect(notOurs.headers['www-authenticate']).toBe(`${challenge}, error="invalid_token"`);
  });

  it('a key revoked through the admin API fails on the very next request; an expired key fails', async () => {
    const { gw, a } = await frontDoor(defer);
    expect((await raw(`${gw.url}/jobs`, { headers: bearer(a.key) })).status).toBe(200);
    const revoked = await raw(`${gw.url}/admin/api/keys/${a.id}/revoke`, {
      method: 'POST',
      headers: bearer(ADMIN_TOKEN),
    });
    expect(revoked.status).toBe(200);
    const next = await raw(`${gw.url}/jobs`, { headers: bearer(a.key) });
    expect(next.status).toBe(401);
    expect(next.json).toMatchObject({ code: 'unauthorized', detail: `The API key ${a.id} was revoked.` });
    expect(next.headers['www-authenticate']).toBe(`${challenge}, error="invalid_token"`);

    const short = await createKey(gw, { name: 'short', scopes: ['jobs'], expires_in_ms: 200 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const expired = await raw(`${gw.url}/jobs`, { headers: { 'x-api-key': short.key } });
    expect(expired.status).toBe(401);
    expect(expired.json.detail).toMatch(new RegExp(`^The API key ${short.id} expired at `));
  });

  it('a key without the route’s scope: 403 insufficient_scope; /metrics needs metrics or admin', async () => {
    const { gw, a } = await frontDoor(defer);
    const jobsOnly = await createKey(gw, { name: 'jobs-only', scopes: ['jobs'] });
    const scraper = await createKey(gw, { name: 'scraper', scopes: ['metrics'] });
    const noAi = await raw(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(jobsOnly.key), 'content-type': 'application/json' },
      body: '{}',
    });
    expect(noAi.status).toBe(403);
    expect(noAi.json).toMatchObject({ code: 'unauthorized', reason: 'insufficient_scope', scope: 'ai' });
    expect(noAi.headers['www-authenticate']).toBe(`${challenge}, error="insufficient_scope", scope="ai"`);
    const noMcp = await raw(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { ...bearer(jobsOnly.key), 'content-type': 'application/json' },
      body: '{}',
    });
    // /mcp: see the test below.
    expect(noMcp.status).not.toBe(200);
    expect((await raw(`${gw.url}/metrics`, { headers: bearer(a.key) })).status).toBe(403);
    expect((await raw(`${gw.url}/metrics`, { headers: { 'x-api-key': scraper.key } })).status).toBe(200);
    expect((await raw(`${gw.url}/metrics`, { headers: bearer(ADMIN_TOKEN) })).status).toBe(200);
    // The scraper's key opens nothing else.
    expect((await raw(`${gw.url}/jobs`, { headers: bearer(scraper.key) })).status).toBe(403);
  });

  it('an API key, even one with every scope but admin, opens no admin route', async () => {
    const { gw, a } = await frontDoor(defer);
    for (const path of ['/admin/api/overview', '/admin/api/keys', '/admin/webhooks']) {
      const answer = await raw(`${gw.url}${path}`, { headers: bearer(a.key) });
      expect(answer.status, path).toBe(401);
    }
    // The page sends a stranger to the login form.
    const page = await raw(`${gw.url}/`, { headers: bearer(a.key) });
    expect([page.status, page.headers.location]).toEqual([303, '/admin/login']);
    const mint = await raw(`${gw.url}/admin/api/keys`, {
      method: 'POST',
      headers: { ...bearer(a.key), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'escalated', scopes: ['admin'] }),
    });
    expect(mint.status).toBe(401);
  });

  it('two different credentials at once, a malformed scheme, a long or non-ASCII key: 401, never 5xx', async () => {
    const { gw, a, b } = await frontDoor(defer);
    const both = await raw(`${gw.url}/jobs`, { headers: { ...bearer(a.key), 'x-api-key': b.key } });
    expect(both.status).toBe(401);
    expect(both.json.reason).toBe('invalid_request');
    expect((await raw(`${gw.url}/jobs`, { headers: { authorization: `Basic ${a.key}` } })).status).toBe(401);
    expect((await raw(`${gw.url}/jobs`, { headers: bearer(`bw_${'x'.repeat(9_000)}`) })).status).toBe(401);
    // A key with a non-ASCII letter in it, sent as UTF-8 bytes (Node refuses to, so it goes raw as latin1).
    const unicode = Buffer.from(`${a.key.slice(0, -1)}é`, 'utf8').toString('latin1');
    const answer = await raw(`${gw.url}/jobs`, { headers: { authorization: `Bearer ${unicode}` } });
    expect(answer.status).toBe(401);
  });

  // Found by this suite (500 JSON-RPC -32603 before): the edge's refusals must keep their status on /mcp, or
  // an MCP client's OAuth flow (which starts on 401) never starts.
  it('/mcp without a credential is 401 with the challenge; with a key lacking mcp, 403', async () => {
    const { gw } = await frontDoor(defer);
    const jobsOnly = await createKey(gw, { name: 'jobs-only', scopes: ['jobs'] });
    const none = await raw(gw.mcpUrl, { method: 'POST', headers: MCP_POST_HEADERS, body: INITIALIZE });
    expect(none.headers['www-authenticate']).toBe(challenge);
    expect(none.status).toBe(401);
    const noScope = await raw(gw.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(jobsOnly.key) },
      body: INITIALIZE,
    });
    expect(noScope.status).toBe(403);
  });
});
