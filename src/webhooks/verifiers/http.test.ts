import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { standardWebhooksVerifier } from './index.js';
import { ODD_BODY, T } from './test-support.js';

/**
 * Over a real socket: the verifier sees headers as Node's http parser gives them (latin1-decoded values) and
 * the body as the Buffer of received bytes. A sender signs its message id as UTF-8 bytes; the verifier must
 * hash those same bytes, not a re-encoding of Node's latin1 string.
 */

const SECRET = 'whsec_' + Buffer.alloc(32, 0x5a).toString('base64');
const KEY = Buffer.alloc(32, 0x5a);

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

/** Starts a server that hands each request's headers and raw body to `seen`, and sends `head` + `body`. */
async function deliver(head: Buffer, body: Buffer): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  let resolveSeen!: (value: { headers: IncomingHttpHeaders; body: Buffer }) => void;
  const seen = new Promise<{ headers: IncomingHttpHeaders; body: Buffer }>(
    (resolve) => (resolveSeen = resolve),
  );
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      resolveSeen({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(Buffer.concat([head, body]));
  socket.on('data', () => socket.end());
  return seen;
}

describe('standardWebhooksVerifier over a real HTTP request', () => {
  it('a UTF-8 message id and the odd body verify as Node delivers them', async () => {
    const id = 'msg_Köln_東京';
    const signature = createHmac('sha256', KEY)
      .update(Buffer.from(`${id}.${T}.`, 'utf8'))
      .update(ODD_BODY)
      .digest('base64');
    const head = Buffer.from(
      'POST /webhooks/test HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${ODD_BODY.length}\r\nWebhook-Id: ${id}\r\nWebhook-Timestamp: ${T}\r\n` +
        `Webhook-Signature: v1,${signature}\r\nConnection: close\r\n\r\n`,
      'utf8',
    );
    const received = await deliver(head, ODD_BODY);
    expect(received.body.equals(ODD_BODY)).toBe(true);
    expect(received.headers['webhook-id']).toBe(Buffer.from(id, 'utf8').toString('latin1'));
    const verifier = standardWebhooksVerifier({ secrets: [SECRET] });
    expect(verifier.verify(received.body, received.headers, T * 1000)).toStrictEqual({
      eventId: Buffer.from(id, 'utf8').toString('latin1'),
      timestampMs: T * 1000,
    });
  });
});
