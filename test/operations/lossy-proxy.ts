/**
 * A lossy HTTP proxy for the lost-response proof: it forwards each request to the target and, as `decide`
 * says, either answers normally, drops the request before it reaches the target (the socket is destroyed
 * once the request was read), or lets the target commit and then drops the response. It logs every
 * request it saw, in order, per `Idempotency-Key` (the key of a POST, the `idempotency_key` query of a GET).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ProxyFate = 'pass' | 'drop_request' | 'drop_response';

export interface LossyProxy {
  url: string;
  /** Per key, what the proxy saw: `POST:drop_request`, `POST:drop_response`, `POST:pass`, `GET:pass`. */
  readonly log: Map<string, string[]>;
  close(): Promise<void>;
}

export async function startLossyProxy(
  target: string,
  decide: (method: string, key: string | undefined) => ProxyFate,
): Promise<LossyProxy> {
  const log = new Map<string, string[]>();
  const targetUrl = new URL(target);
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const key = keyOf(req);
      const fate = decide(req.method ?? 'GET', key);
      if (key !== undefined) {
        const seen = log.get(key) ?? [];
        seen.push(`${req.method}:${fate}`);
        log.set(key, seen);
      }
      if (fate === 'drop_request') {
        req.socket.destroy();
        return;
      }
      const upstream = httpRequest(
        {
          host: targetUrl.hostname,
          port: targetUrl.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: targetUrl.host },
        },
        (answer) => {
          void readBody(answer).then((payload) => {
            if (fate === 'drop_response') {
              // The target committed and answered; the caller never hears it.
              req.socket.destroy();
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(payload);
          });
        },
      );
      upstream.on('error', () => req.socket.destroy());
      upstream.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function keyOf(req: IncomingMessage): string | undefined {
  const header = req.headers['idempotency-key'];
  if (typeof header === 'string') return header;
  const query = new URL(req.url ?? '/', 'http://proxy').searchParams.get('idempotency_key');
  return query ?? undefined;
}

async function readBody(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
