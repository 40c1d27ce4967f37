/**
 * The gateway side of the OAuth end-to-end test: a Fastify server on a loopback port that serves the
 * protected resource metadata and an MCP endpoint (the official SDK's `McpServer`, stateless Streamable HTTP)
 * guarded by the OAuth verifier. The guard is a minimal `onRequest` hook standing in for the HTTP edge: no
 * credential → 401, a token → `verify`, a tool call → its scopes, every refusal → problem+json with the
 * verifier's `WWW-Authenticate`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import {
  BreakwaterError,
  FakeClock,
  PROBLEM_CONTENT_TYPE,
  isBreakwaterError,
  toProblem,
} from '../../src/core/index.js';
import '../../src/http/request.js';
import {
  assertCanCallTool,
  createOAuthVerifier,
  missingToken,
  oauthMetadataRoutes,
  parseBearer,
  type OAuthVerifier,
  type ScopedTool,
} from '../../src/http/oauth/index.js';

/** The tools the gateway serves: `echo` needs only `mcp`; `read_secret` also needs `secrets:read`. */
export const TOOLS: readonly ScopedTool[] = [
  { name: 'echo' },
  { name: 'read_secret', scopes: ['secrets:read'] },
];

export interface TestGateway {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** `<origin>/mcp`: the canonical MCP URL, the tokens' audience. */
  readonly mcpUrl: string;
  /** The verifier's clock (starts at the real time, moves only when the test moves it). */
  readonly clock: FakeClock;
  readonly verifier: OAuthVerifier;
  close(): Promise<void>;
}

/** Starts a gateway whose tokens come from `issuer`. */
export async function startGateway(issuer: string): Promise<TestGateway> {
  // Listen first: the audience (and so the verifier) needs the port before the routes are registered.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${origin}/mcp`;
  const clock = new FakeClock(Date.now());
  const verifier = createOAuthVerifier({
    issuer,
    audience: mcpUrl,
    clock,
    tokenType: 'at+jwt',
    metadataClaims: { user: 'sub', team: 'org_id' },
  });
  const app: FastifyInstance = Fastify({
    serverFactory: (handler) => server.on('request', handler),
  });
  oauthMetadataRoutes(verifier)(app);

  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.url !== '/mcp') return;
    const token = parseBearer(request.headers.authorization);
    if (token === undefined) throw missingToken();
    request.principal = await verifier.verify(token);
  });
  app.setErrorHandler((error, request, reply) => {
    const err = isBreakwaterError(error) ? error : new BreakwaterError('internal_error', { cause: error });
    const challenge = verifier.challengeFor(err, request.principal);
    if (challenge !== undefined) void reply.header('www-authenticate', challenge);
    return reply.code(err.status).type(PROBLEM_CONTENT_TYPE).send(toProblem(err, request.url));
  });

  app.post('/mcp', async (request, reply) => {
    const { principal } = request;
    const message = request.body as { method?: unknown; params?: { name?: unknown } } | null;
    if (message?.method === 'tools/call') {
      const tool = TOOLS.find((t) => t.name === message.params?.name);
      if (tool !== undefined) assertCanCallTool(principal, tool);
    }
    const mcp = new McpServer({ name: 'oauth-test-gateway', version: '1.0.0' });
    mcp.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
      content: [{ type: 'text', text: `${principal.name} (${principal.metadata.team}): ${text}` }],
    }));
    mcp.registerTool('read_secret', {}, () => ({ content: [{ type: 'text', text: 'the secret is 42' }] }));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
  // Stateless: no SSE stream to open, no session to end.
  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    handler: async (_request, reply) => reply.code(405).header('allow', 'POST').send(),
  });
  await app.ready();

  return {
    origin,
    mcpUrl,
    clock,
    verifier,
    close: async () => {
      await app.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
