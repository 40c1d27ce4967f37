/**
 * A real HTTP server on 127.0.0.1 for the upstream tests: each path answers with a script of behaviours
 * (the last one repeats), and every request is recorded. Test-only; not exported from the folder.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the server saw it. */
export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** What the server does with one request (its body has already been read). */
export type Behaviour = (req: IncomingMessage, res: ServerResponse, server: TestServer) => void;

export class TestServer {
  readonly seen: Seen[] = [];
  /** Responses whose connection closed before they were answered (the client gave up). */
  abandoned = 0;
  url = '';
  private readonly scripts = new Map<string, Behaviour[]>();
  private readonly server: Server;

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const url = req.url ?? '/';
        this.seen.push({
          method: req.method ?? '',
          url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const path = url.split('?')[0]!;
        const script = this.scripts.get(path);
        const behaviour = script === undefined ? notFound : script.length > 1 ? script.shift()! : script[0]!;
        behaviour(req, res, this);
      });
    });
  }

  static async start(): Promise<TestServer> {
    const server = new TestServer();
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve));
    const { port } = server.server.address() as AddressInfo;
    server.url = `http://127.0.0.1:${port}`;
    return server;
  }

  /** Answers requests to `path` with `behaviours` in turn; the last one repeats. */
  on(path: string, ...behaviours: Behaviour[]): this {
    this.scripts.set(path, behaviours);
    return this;
  }

  /** Requests seen, all or to `path`. */
  count(path?: string): number {
    return path === undefined
      ? this.seen.length
      : this.seen.filter((s) => s.url.split('?')[0] === path).length;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Answers `status` with a JSON body (content type `type`, default `application/json`). */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  type = 'application/json',
): Behaviour {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': type, ...headers });
    res.end(JSON.stringify(body));
  };
}

/** Answers `status` with a text body. */
export function text(status: number, body: string, headers: Record<string, string> = {}): Behaviour {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
    res.end(body);
  };
}

/** Never answers; counts the connection closing from the client's side. */
export const hang: Behaviour = (_req, res, server) => {
  res.on('close', () => {
    if (!res.writableEnded) server.abandoned++;
  });
};

/** Drops the connection after reading the whole request: the request reached the server, no answer left. */
export const reset: Behaviour = (req) => {
  req.socket.destroy();
};

const notFound = json(404, { title: 'no route' });

/** Polls `condition` every millisecond until it holds (I/O to land, not time to pass); gives up after `turns`. */
export async function until(condition: () => boolean, turns = 2000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return;
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
  throw new Error('until: condition never held');
}

/** The rejection of `promise` (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
