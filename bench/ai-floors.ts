/**
 * The AI bench's floors: two pass-through proxies with no logic in front of the same provider, the least a
 * Node.js gateway (and one built on Fastify) adds on this machine.
 */
import { createServer as createHttpServer } from 'node:http';
import type { Pool } from 'undici';

/**
 * The floor: a proxy with no logic at all (node:http, one undici Pool to the provider, the body passed
 * through), the least any Node.js gateway adds on this machine. What a gateway adds beyond it is its own.
 * `stream`: the answer is piped to the client as it arrives instead of read whole.
 */
export async function startBareProxy(providerUrl: string, stream = false): Promise<string> {
  const { pool, path } = await providerPool(providerUrl);
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      pool
        .request({ path, method: 'POST', headers: JSON_HEADERS, body: Buffer.concat(chunks) })
        .then(async (answer) => {
          if (stream) {
            res.writeHead(answer.statusCode, { 'content-type': 'text/event-stream' });
            answer.body.pipe(res);
            return;
          }
          const body = await answer.body.text();
          res.writeHead(answer.statusCode, { 'content-type': 'application/json' }).end(body);
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
}

/**
 * The same pass-through as a Fastify route (Fastify's defaults: its JSON body parser, its reply): what the
 * server Breakwater is built on costs by itself, so the gateway's own layers are what remains above it.
 * `stream`: the answer's body stream is the reply (Fastify pipes it).
 */
export async function startFastifyProxy(providerUrl: string, stream = false): Promise<string> {
  const { pool, path } = await providerPool(providerUrl);
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  app.post('/v1/chat/completions', async (request, reply) => {
    const answer = await pool.request({
      path,
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify(request.body),
    });
    reply.code(answer.statusCode);
    if (stream) return reply.header('content-type', 'text/event-stream').send(answer.body);
    return reply.header('content-type', 'application/json').send(await answer.body.text());
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1`;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The floors' provider connection: one undici Pool, and the completions path under `providerUrl`. */
async function providerPool(providerUrl: string): Promise<{ pool: Pool; path: string }> {
  const { Pool: UndiciPool } = await import('undici');
  const target = new URL(providerUrl);
  return { pool: new UndiciPool(target.origin), path: `${target.pathname}/chat/completions` };
}
