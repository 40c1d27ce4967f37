/**
 * The front door attacked from outside over real HTTP (part 3), gaps found after parts 1 and 2: the admin
 * token sent as `x-api-key` (what the edge accepts for every other credential) was refused on the admin
 * routes; a repeated query parameter the route does not declare (`/admin/api/operations?status=a&status=b`),
 * or on a route without a querystring schema, passed as an array and answered 200; an oversized request
 * header answered 400, not Node's own 431. A GiftGenius gateway on a temporary SQLite file (see
 * front-door-support.ts).
 */
import { connect } from 'node:net';
import { maxHeaderSize } from 'node:http';
import { describe, expect, it } from 'vitest';
import { useCleanups } from '../e2e/support.js';
import { ADMIN_TOKEN, INITIALIZE, MCP_POST_HEADERS, bearer, frontDoor, raw } from './front-door-support.js';

const defer = useCleanups();

const PROBLEM = 'application/problem+json; charset=utf-8';

describe('the admin token as x-api-key', () => {
  it('opens every admin route as a bearer does; a wrong one is 401 and counts against the address', async () => {
    const { gw, a } = await frontDoor(defer);
    const asKey = { 'x-api-key': ADMIN_TOKEN };
    for (const path of ['/admin/api/overview', '/admin/webhooks', '/admin/ai/routes', '/admin/api/keys']) {
      const answer = await raw(`${gw.url}${path}`, { headers: asKey });
      expect([path, answer.status]).toEqual([path, 200]);
    }
    // A change too (a bearer's way: no cookie, so no CSRF header needed).
    const made = await raw(`${gw.url}/admin/api/keys`, {
      method: 'POST',
      headers: { ...asKey, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'via-x-api-key', scopes: ['jobs'] }),
    });
    expect([made.status, made.json.name]).toEqual([201, 'via-x-api-key']);
    // The same token in both headers is one credential.
    const both = await raw(`${gw.url}/admin/api/overview`, { headers: { ...asKey, ...bearer(ADMIN_TOKEN) } });
    expect(both.status).toBe(200);

    const refusals: Record<string, Record<string, string>> = {
      'a wrong token': { 'x-api-key': 'wrong-admin-token-0123456789' },
      'an API key without admin': { 'x-api-key': a.key },
      'two different credentials': { ...asKey, ...bearer('another-admin-token-0123456789') },
    };
    for (const [what, headers] of Object.entries(refusals)) {
      const answer = await raw(`${gw.url}/admin/api/overview`, { headers });
      expect({
        what,
        status: answer.status,
        type: answer.headers['content-type'],
        code: answer.json.code,
        reason: answer.json.reason,
        challenge: answer.headers['www-authenticate'],
      }).toEqual({
        what,
        status: 401,
        type: PROBLEM,
        code: 'unauthorized',
        reason: 'invalid_token',
        challenge: 'Bearer realm="breakwater-admin"',
      });
    }
    // Wrong tokens sent as x-api-key are throttled like any other: 3 above, 7 more, then even the right one.
    for (let i = 0; i < 7; i++) {
      const wrong = await raw(`${gw.url}/admin/api/overview`, {
        headers: { 'x-api-key': `wrong-${i}-xxxxxxxxxxxxxx` },
      });
      expect(wrong.status).toBe(401);
    }
    const throttled = await raw(`${gw.url}/admin/api/overview`, { headers: asKey });
    expect([throttled.status, throttled.json.code]).toEqual([429, 'rate_limited']);
  });
});

describe('repeated query parameters on every route', () => {
  it('a parameter the route does not declare, or any on a route without a query schema: 400 repeated_parameter', async () => {
    const { gw, a } = await frontDoor(defer);
    const admin = bearer(ADMIN_TOKEN);
    const cases: Array<[string, string, Record<string, string>, string]> = [
      // The two found: `status` is not a parameter of the operations list, nor `owner` of the admin jobs list.
      ['GET', '/admin/api/operations?status=a&status=b', admin, 'status'],
      ['GET', '/admin/api/jobs?owner=a&owner=b', admin, 'owner'],
      // Routes without a querystring schema.
      ['GET', '/admin/api/overview?x=1&x=2', admin, 'x'],
      ['GET', '/admin/api/keys/k_1?all=1&all=2', admin, 'all'],
      ['GET', '/healthz?probe=1&probe=2', {}, 'probe'],
      ['GET', '/metrics?name=a&name=b', admin, 'name'],
      ['GET', '/jobs/job_x?fields=a&fields=b', bearer(a.key), 'fields'],
    ];
    for (const [method, path, headers, parameter] of cases) {
      const answer = await raw(`${gw.url}${path}`, { method, headers });
      expect({
        path,
        status: answer.status,
        type: answer.headers['content-type'],
        code: answer.json.code,
        reason: answer.json.reason,
        parameter: answer.json.parameter,
        detail: answer.json.detail,
      }).toEqual({
        path,
        status: 400,
        type: PROBLEM,
        code: 'invalid_payload',
        reason: 'repeated_parameter',
        parameter,
        detail: `The query parameter ${parameter} was given 2 times; it takes one value.`,
      });
    }
    // Where several values are declared, they are still taken.
    const states = await raw(`${gw.url}/admin/api/operations?state=unknown&state=failed`, { headers: admin });
    expect([states.status, states.json.operations]).toEqual([200, []]);
  });

  it('in the shape each front answers: OpenAI-style on /v1, JSON-RPC on /mcp', async () => {
    const { gw, a } = await frontDoor(defer);
    const ai = await raw(`${gw.url}/v1/chat/completions?user=a&user=b`, {
      method: 'POST',
      headers: { ...bearer(a.key), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/gift-ranker', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect([ai.status, ai.headers['content-type'], ai.json.code, ai.json.error]).toEqual([
      400,
      PROBLEM,
      'invalid_payload',
      {
        message: 'The query parameter user was given 2 times; it takes one value.',
        type: 'invalid_payload',
        code: 'repeated_parameter',
        param: null,
      },
    ]);
    const mcp = await raw(`${gw.mcpUrl}?session=a&session=b`, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...bearer(a.key) },
      body: INITIALIZE,
    });
    expect([mcp.status, mcp.headers['content-type'], mcp.json]).toEqual([
      400,
      'application/json; charset=utf-8',
      {
        jsonrpc: '2.0',
        error: {
          code: -32600,
          message: 'The query parameter session was given 2 times; it takes one value.',
        },
        id: null,
      },
    ]);
    expect(mcp.headers['mcp-session-id']).toBeUndefined();
  });
});

describe('an oversized request header', () => {
  it('431 Request Header Fields Too Large as problem+json, then the connection closes', async () => {
    const { gw, a } = await frontDoor(defer);
    const target = new URL(gw.url);
    const socket = connect({ host: target.hostname, port: Number(target.port) });
    defer(() => socket.destroy());
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `GET /jobs HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${a.key}\r\n` +
        `X-Big: ${'a'.repeat(maxHeaderSize + 1)}\r\n\r\n`,
    );
    await closed;
    const [head, body] = received.split('\r\n\r\n');
    const lines = head!.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(lines.map((l) => l.toLowerCase())).toEqual(
      expect.arrayContaining([`content-type: ${PROBLEM}`, 'connection: close']),
    );
    expect(JSON.parse(body!)).toEqual({
      type: 'urn:breakwater:error:invalid_payload',
      title: 'Invalid payload',
      status: 431,
      detail: `The request's header fields are too large: at most ${maxHeaderSize} bytes of headers are accepted.`,
      code: 'invalid_payload',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
      reason: 'headers_too_large',
      max_header_bytes: maxHeaderSize,
    });
    // The gateway serves the next client as before.
    expect((await raw(`${gw.url}/jobs`, { headers: bearer(a.key) })).status).toBe(200);
  });
});
