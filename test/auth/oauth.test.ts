/**
 * MCP authorization end to end, with real parts only (docs/security.md#oauth): a real authorization server
 * (`oidc-provider`, in process), the official MCP SDK client with its OAuth client provider, and the real
 * gateway (`startGateway`, on a temporary SQLite store) accepting that server's tokens as a resource server
 * (the MCP authorization spec, 2025-11-25). The verifier runs on the gateway's fake clock.
 */
import { request } from 'node:http';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineApp } from '../../src/gateway/app.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { FakeClock, PrincipalContext } from '../../src/core/index.js';
import { resilientTool } from '../../src/mcp/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';
import { startAuthorizationServer, type AuthorizationServer } from './authorization-server.js';
import { TestOAuthProvider, recordingFetch, type Exchange } from './client.js';

const defer = useCleanups();

/** The texts `echo` was called with, in order (reset before each test). */
const echoed: string[] = [];

/** `echo` needs only `mcp`; `read_secret` also needs `secrets:read`. */
const app = defineApp({
  setup: () => ({
    name: 'oauth-test-gateway',
    version: '1.0.0',
    tools: [
      resilientTool({
        name: 'echo',
        description: 'Says the text back, with who called.',
        inputSchema: { text: z.string() },
        handler: ({ text }) => {
          echoed.push(text);
          const caller = PrincipalContext.get()!;
          return `${caller.name} (${caller.metadata.team}): ${text}`;
        },
        toText: (line: string) => line,
      }),
      resilientTool({
        name: 'read_secret',
        description: 'Tells the secret.',
        inputSchema: {},
        scopes: ['secrets:read'],
        handler: () => 'the secret is 42',
        toText: (line: string) => line,
      }),
    ],
  }),
});

let as: AuthorizationServer;
let gateway: Gateway;
/** The gateway's clock, the OAuth verifier's too (starts at the real time, moves only when a test moves it). */
let clock: FakeClock;

beforeAll(async () => {
  as = await startAuthorizationServer();
});
afterAll(async () => {
  await as.close();
});
beforeEach(async () => {
  echoed.length = 0;
  clock = new FakeClock(Date.now());
  gateway = await startGateway({
    app,
    store: `sqlite:${tempDb(defer, 'breakwater-oauth')}`,
    port: 0,
    worker: false,
    clock,
    env: {},
    log: () => undefined,
    oauth: { issuer: as.issuer, tokenType: 'at+jwt', metadataClaims: { user: 'sub', team: 'org_id' } },
  });
  defer(() => gateway.close());
});

interface Session {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

function session(provider: TestOAuthProvider, log: Exchange[]): Session {
  const transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), {
    authProvider: provider,
    fetch: recordingFetch(log),
  });
  return { client: new Client({ name: 'oauth-test-client', version: '1.0.0' }), transport };
}

/** The SDK's whole authorization-code flow: a 401, discovery, registration, login and consent, the code exchange. */
async function signIn(provider: TestOAuthProvider, log: Exchange[]): Promise<Session> {
  const first = session(provider, log);
  await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
  await first.transport.finishAuth(provider.codes.at(-1)!);
  await first.client.close();
  const second = session(provider, log);
  await second.client.connect(second.transport);
  return second;
}

function where(url: string): string {
  return url.replace(gateway.url, 'gw').replace(as.issuer, 'as');
}

/** The challenge every 401 starts with, at this gateway. */
function prm(): string {
  return `Bearer resource_metadata="${gateway.url}/.well-known/oauth-protected-resource/mcp"`;
}

/** A raw MCP `initialize` POST to the gateway, with `authorization` if given. */
function initialize(authorization?: string): Promise<Response> {
  return fetch(gateway.mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
}

describe('MCP authorization with the official SDK client', () => {
  it('discovers the metadata from the 401, gets a token for this gateway, and calls a tool with it', async () => {
    const provider = new TestOAuthProvider();
    const log: Exchange[] = [];
    const interactionsBefore = as.interactions.length;
    const { client, transport } = await signIn(provider, log);

    // The SDK followed the challenge: 401 → the metadata it names → the authorization server → register →
    // (login and consent in the "browser") → token. Every MCP request after that carries the token.
    expect(log.map((e) => `${e.method} ${where(e.url)} ${e.status}`).slice(0, 9)).toEqual([
      'POST gw/mcp 401',
      'GET gw/.well-known/oauth-protected-resource/mcp 200',
      'GET as/.well-known/oauth-authorization-server 200',
      'POST as/reg 201',
      'GET gw/.well-known/oauth-protected-resource/mcp 200',
      'GET as/.well-known/oauth-authorization-server 200',
      'POST as/token 200',
      'POST gw/mcp 200',
      'POST gw/mcp 202',
    ]);
    expect(log[0]!.wwwAuthenticate).toBe(`${prm()}, scope="mcp"`);
    expect(as.interactions.slice(interactionsBefore)).toEqual(['login', 'consent']);

    // RFC 8707: the SDK asked for this gateway as the resource, and the token says so.
    const authorizationUrl = provider.authorizationUrls[0]!;
    expect(authorizationUrl.searchParams.get('resource')).toBe(gateway.mcpUrl);
    expect(authorizationUrl.searchParams.get('scope')).toBe('mcp');
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    const accessToken = provider.savedTokens!.access_token;
    expect(decodeProtectedHeader(accessToken).typ).toBe('at+jwt');
    expect(decodeJwt(accessToken)).toMatchObject({
      iss: as.issuer,
      aud: gateway.mcpUrl,
      sub: 'alice',
      scope: 'mcp',
    });
    expect(
      log.filter((e) => where(e.url) === 'gw/mcp' && e.status < 400).map((e) => e.authorization),
    ).toEqual([`Bearer ${accessToken}`, `Bearer ${accessToken}`]);

    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(result.content).toEqual([{ type: 'text', text: 'alice (acme): hello' }]);

    // The same call in the same session without the token is refused at the edge, before any tool runs.
    const bare = await fetch(gateway.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'no token' } },
      }),
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe(`${prm()}, scope="mcp"`);
    expect(echoed).toEqual(['hello']);
    await client.close();
  });

  it('serves the protected resource metadata the challenge names', async () => {
    const response = await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await response.json()).toEqual({
      resource: gateway.mcpUrl,
      authorization_servers: [as.issuer],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
    });
  });

  it('refuses a request without a token: 401 with the resource metadata and the scope to ask for', async () => {
    const response = await initialize();
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`${prm()}, scope="mcp"`);
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(await response.json()).toMatchObject({
      status: 401,
      code: 'unauthorized',
      reason: 'credentials_missing',
      detail: 'This endpoint needs a credential: send Authorization: Bearer <API key or access token>.',
    });
  });

  it('refuses a token the same authorization server issued for another resource (RFC 8707 audience)', async () => {
    const other = `${gateway.url}/other`;
    const provider = new TestOAuthProvider(other);
    const log: Exchange[] = [];
    const first = session(provider, log);
    await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
    await first.transport.finishAuth(provider.codes[0]!);
    const accessToken = provider.savedTokens!.access_token;
    expect(decodeJwt(accessToken)).toMatchObject({ iss: as.issuer, aud: other, sub: 'alice' });

    const refusal = `${prm()}, error="invalid_token", scope="mcp", error_description="The access token was not issued for ${gateway.mcpUrl} (RFC 8707 audience)."`;
    const response = await initialize(`Bearer ${accessToken}`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(refusal);
    expect(await response.json()).toMatchObject({ code: 'unauthorized', reason: 'wrong_audience' });

    // The SDK client, holding only that token, is refused and sent back to the authorization server.
    const second = session(provider, log);
    await expect(second.client.connect(second.transport)).rejects.toBeInstanceOf(UnauthorizedError);
    const refused = log.find((e) => e.authorization === `Bearer ${accessToken}`);
    expect(refused).toMatchObject({ method: 'POST', status: 401, wwwAuthenticate: refusal });
  });

  it('refuses an expired token, on the verifier clock with its 30 s tolerance', async () => {
    const provider = new TestOAuthProvider();
    const log: Exchange[] = [];
    const { client } = await signIn(provider, log);
    const accessToken = provider.savedTokens!.access_token;
    const { exp } = decodeJwt(accessToken);

    clock.tick((exp! + 30) * 1000 - 1 - clock.now());
    expect((await client.callTool({ name: 'echo', arguments: { text: 'still valid' } })).content).toEqual([
      { type: 'text', text: 'alice (acme): still valid' },
    ]);

    clock.tick(1);
    const expired = `${prm()}, error="invalid_token", scope="mcp", error_description="The access token has expired."`;
    const response = await initialize(`Bearer ${accessToken}`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(expired);
    expect(await response.json()).toMatchObject({ code: 'unauthorized', reason: 'expired' });

    // The SDK client sees the 401 and starts a new authorization instead of using the expired token again.
    const before = provider.codes.length;
    await expect(client.callTool({ name: 'echo', arguments: { text: 'late' } })).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(log.filter((e) => e.status === 401).at(-1)).toMatchObject({
      authorization: `Bearer ${accessToken}`,
      wwwAuthenticate: expired,
    });
    expect(provider.codes.length).toBe(before + 1);
    await client.close();
  });

  it('refuses a tool whose scope the token lacks with 403 insufficient_scope; the SDK steps up and the call passes', async () => {
    const provider = new TestOAuthProvider();
    const log: Exchange[] = [];
    const { client, transport } = await signIn(provider, log);
    const firstToken = provider.savedTokens!.access_token;

    await expect(client.callTool({ name: 'read_secret', arguments: {} })).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    const forbidden = log.find((e) => e.status === 403);
    expect(forbidden).toMatchObject({
      method: 'POST',
      authorization: `Bearer ${firstToken}`,
      wwwAuthenticate: `${prm()}, error="insufficient_scope", scope="mcp secrets:read", error_description="The tool read_secret needs the scope secrets:read, which the credential does not hold."`,
    });
    // Step-up (the MCP spec's "Scope Challenge Handling"): the SDK asked for the challenged scopes.
    expect(provider.authorizationUrls.at(-1)!.searchParams.get('scope')).toBe('mcp secrets:read');

    await transport.finishAuth(provider.codes.at(-1)!);
    expect(decodeJwt(provider.savedTokens!.access_token)).toMatchObject({
      aud: gateway.mcpUrl,
      scope: 'mcp secrets:read',
    });
    const result = await client.callTool({ name: 'read_secret', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'the secret is 42' }]);
    await client.close();
  });
});

describe("the edge's refusals on /mcp", () => {
  // /mcp has its own error handler (JSON-RPC errors for bodies Fastify cannot read); the edge's refusals
  // reach it too and must keep their status and problem document (they were answered 500 "Internal error").
  it('a foreign Host is 403 host_not_allowed as a problem document, before any credential is looked at', async () => {
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = request(
        gateway.mcpUrl,
        {
          method: 'POST',
          headers: { host: 'attacker.example', 'content-type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () =>
            resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }),
          );
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(answer.status).toBe(403);
    expect(answer.type).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 403, reason: 'host_not_allowed' });
  });
});
