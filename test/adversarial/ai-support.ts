/**
 * Helpers shared by the AI gateway's adversarial suites (ai-hot-path, ai-whole-answer, ai-connection-cap,
 * ai-stream-push-attacks): a hand-written node:http provider, one raw completion
 * request over undici, a loop that moves a fake clock while real sockets deliver, and a provider answer's body
 * read to its end.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';
import type { FakeClock } from '../../src/core/index.js';
import type { BodySource } from '../../src/ai/step/attempt.js';

/** What {@link post} got back. */
export interface Posted {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Sends one completion request to `${url}/v1/chat/completions` with its own undici client. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Posted> {
  const client = new Client(url);
  try {
    const answer = await client.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
    return { status: answer.statusCode, headers: answer.headers, text: await answer.body.text() };
  } finally {
    await client.destroy();
  }
}

/**
 * Moves `clock` by 0 (retry waits of 0 ms fire) and lets sockets deliver for 2 ms, until `done()`.
 * @throws Error after 5 s of real time: the condition was never met.
 */
export async function tickUntil(clock: FakeClock, done: () => boolean): Promise<void> {
  const end = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await clock.tickAsync(0);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Reads a provider answer's body to its end: its text, and the error it broke off with, if it did. */
export function readBody(body: BodySource): Promise<{ text: string; error: unknown }> {
  return new Promise((resolve) => {
    let text = '';
    body.read({
      onChunk: (chunk) => {
        text += chunk.toString();
        return true;
      },
      onEnd: (error) => resolve({ text, error }),
    });
  });
}

/**
 * A node:http provider whose `answer` writes each response by hand (now, or later: it may hold it); keeps
 * every request body, and counts TCP connections and closed responses.
 */
export async function scriptedProvider(
  defer: (cleanup: () => unknown) => void,
  answer: (res: ServerResponse, body: string, req: IncomingMessage) => void,
): Promise<{ server: Server; url: string; sockets: () => number; closed: () => number; bodies: string[] }> {
  let sockets = 0;
  let closed = 0;
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      answer(res, body, req);
    });
    res.on('close', () => closed++);
  });
  server.on('connection', () => sockets++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  defer(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { server, url, sockets: () => sockets, closed: () => closed, bodies };
}

/**
 * Writes `pieces` to `res` one per macrotask (separate TCP segments, mostly), then ends it. `written()` says
 * how many were written so far.
 */
export function writeApart(
  res: ServerResponse,
  pieces: readonly (string | Buffer)[],
  then = (): void => void res.end(),
): { written: () => number } {
  let i = 0;
  const next = (): void => {
    if (res.destroyed) return;
    if (i === pieces.length) return then();
    res.write(pieces[i++]!);
    setTimeout(next, 1);
  };
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  next();
  return { written: () => i };
}
