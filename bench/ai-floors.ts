/**
 * The AI bench's floors: two pass-through proxies with no logic in front of the same provider, the least a
 * Node.js gateway (and one built on Fastify) adds on this machine.
 */
import { createServer as createHttpServer } from 'node:http';

/**
 * The floor: a proxy with no logic at all (node:http, one undici Pool to the provider, the body passed
 * through), the least any Node.js gateway adds on this machine. What a gateway adds beyond it is its own.
 */
export async function startBareProxy(providerUrl: string): Promise<string> {
  const forward = await passThrough(providerUrl);
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      forward(Buffer.concat(chunks))
        .then(({ status, body }) => res.writeHead(status, { 'content-type': 'application/json' }).end(body))
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
}

/**
 * The same pass-through as a Fastify route (Fastify's defaults: its JSON body parser, its reply): what the
 * server Breakwater is built on costs by itself, so the gateway's own layers are what remains above it.
 */
export async function startFastifyProxy(providerUrl: string): Promise<string> {
  const forward = await passThrough(providerUrl);
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  app.post('/v1/chat/completions', async (request, reply) => {
    const { status, body } = await forward(JSON.stringify(request.body));
    return reply.code(status).header('content-type', 'application/json').send(body);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1`;
}

/** The floors' provider call: one undici Pool, the body sent as is, the answer read as text. */
async function passThrough(
  providerUrl: string,
): Promise<(body: string | Buffer) => Promise<{ status: number; body: string }>> {
  const { Pool } = await import('undici');
  const target = new URL(providerUrl);
  const pool = new Pool(target.origin);
  const path = `${target.pathname}/chat/completions`;
  return async (body) => {
    const answer = await pool.request({
      path,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: answer.statusCode, body: await answer.body.text() };
  };
}
