import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { Client } from 'undici';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineWebhookSource,
  onWebhook,
  standardWebhooksVerifier,
  stripeVerifier,
  type WebhookContext,
} from '../../src/webhooks/index.js';
import {
  STRIPE_SECRET,
  deliverStripe,
  post,
  startIngress,
  stripeEvent,
  stripeSignature,
  until,
  untilJobsFinished,
  useCleanups,
} from './support.js';

/**
 * The pipeline end to end (docs/webhooks.md): real HTTP to the ingress mounted on the real server, real
 * signatures, a SQLite store and a worker running the handlers as jobs.
 */

const defer = useCleanups();
const PROBLEM = 'application/problem+json; charset=utf-8';

function payments(options: Partial<Parameters<typeof defineWebhookSource>[0]> = {}) {
  return defineWebhookSource({
    name: 'payments',
    verifier: stripeVerifier({ secrets: [STRIPE_SECRET] }),
    schema: z.object({
      id: z.string(),
      type: z.string(),
      created: z.number(),
      data: z.object({ object: z.record(z.string(), z.unknown()) }),
    }),
    ...options,
  });
}

/** A handler that records each run. */
function recorder() {
  const runs: WebhookContext<unknown>[] = [];
  return { runs, handler: onWebhook('payments', '*', (ctx) => void runs.push(ctx)) };
}

describe('POST /webhooks/:source: each answer', () => {
  it('200 for a new event, stored with its job, handled once', async () => {
    const { runs, handler } = recorder();
    const { url, store } = await startIngress(defer, { sources: [payments()], handlers: [handler] });
    const created = Math.floor(Date.now() / 1000) - 60;
    const body = stripeEvent('evt_new', 'payment_intent.succeeded', { id: 'pi_1' }, created);
    const answer = await deliverStripe(url, 'payments', body);
    expect(answer).toMatchObject({ status: 200, body: { ok: true, duplicate: false, event_id: 'evt_new' } });
    // Durable before the answer: the row and its job are there the moment the 200 is read.
    const record = await store.getWebhook('payments', 'evt_new');
    expect(record).toMatchObject({ eventType: 'payment_intent.succeeded', occurredAt: created * 1000, body });
    const job = await store.get(record!.jobId);
    expect(job).toMatchObject({ type: 'webhook.payments', maxAttempts: 5 });
    await until(
      () => runs.length,
      (n) => n === 1,
    );
    expect(runs[0]).toMatchObject({
      eventId: 'evt_new',
      eventType: 'payment_intent.succeeded',
      occurredAt: created * 1000,
      source: 'payments',
      attempt: 1,
      jobId: record!.jobId,
      event: { id: 'evt_new', data: { object: { id: 'pi_1' } } },
    });
    expect(runs[0]!.receivedAt).toBe(record!.receivedAt);
  });

  it('onAccepted hears a first delivery once, before its 200, and never its duplicate', async () => {
    const { url, store, ingress } = await startIngress(defer, { sources: [payments()] });
    const heard: [string, boolean, boolean][] = [];
    ingress.onAccepted((receipt) => {
      heard.push([receipt.eventId, receipt.duplicate, receipt.record.jobId.startsWith('job_')]);
    });
    const body = stripeEvent('evt_heard', 'payment_intent.succeeded', { id: 'pi_2' });
    expect((await deliverStripe(url, 'payments', body)).status).toBe(200);
    expect(heard).toEqual([['evt_heard', false, true]]);
    expect((await deliverStripe(url, 'payments', body)).body).toMatchObject({ duplicate: true });
    expect(heard).toHaveLength(1);
    expect(await store.getWebhook('payments', 'evt_heard')).toBeDefined();
  });

  it('onReceipt hears firsts and duplicates; onRejected hears each refusal with its code and status', async () => {
    const { url, ingress } = await startIngress(defer, { sources: [payments({ maxBodyBytes: 300 })] });
    const receipts: [string, string, boolean][] = [];
    const rejections: unknown[] = [];
    ingress.onReceipt((r) => receipts.push([r.source, r.eventId, r.duplicate]));
    ingress.onRejected((r) => rejections.push(r));
    const body = stripeEvent('evt_counted', 'payment_intent.succeeded');
    expect((await deliverStripe(url, 'payments', body)).status).toBe(200);
    expect((await deliverStripe(url, 'payments', body)).status).toBe(200);
    expect((await deliverStripe(url, 'payments', body, 'whsec_someone_else')).status).toBe(401);
    expect((await deliverStripe(url, 'payments', '{"id": 1')).status).toBe(400);
    expect(
      (await deliverStripe(url, 'payments', stripeEvent('evt_big', 'x', { pad: 'y'.repeat(300) }))).status,
    ).toBe(413);
    expect((await post(`${url}/webhooks/nope`, '{}')).status).toBe(404);
    expect(receipts).toEqual([
      ['payments', 'evt_counted', false],
      ['payments', 'evt_counted', true],
    ]);
    expect(rejections).toEqual([
      { source: 'payments', code: 'invalid_signature', status: 401 },
      { source: 'payments', code: 'invalid_payload', status: 400 },
      { source: 'payments', code: 'payload_too_large', status: 413 },
      { source: undefined, code: 'not_found', status: 404 },
    ]);
  });

  it('404 for an unknown source, before reading the body', async () => {
    const { url } = await startIngress(defer, { sources: [payments()] });
    const answer = await post(`${url}/webhooks/nope`, '{}');
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe(PROBLEM);
    expect(answer.body).toMatchObject({
      code: 'not_found',
      detail: 'There is no webhook source named "nope".',
      instance: '/webhooks/nope',
    });
  });

  it('413 for a body over maxBodyBytes: declared by Content-Length, or counted while it streams', async () => {
    const { url, store } = await startIngress(defer, { sources: [payments({ maxBodyBytes: 200 })] });
    const big = stripeEvent('evt_big', 'x', { pad: 'y'.repeat(300) });
    const declared = await deliverStripe(url, 'payments', big);
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ code: 'payload_too_large', max_body_bytes: 200 });
    expect(declared.headers.connection).toBe('keep-alive'); // the body is drained, not left unread

    // Chunked: no Content-Length to trust; refused once 201 bytes have arrived.
    const client = new Client(url);
    defer(() => client.close());
    const chunks = Readable.from(Array.from({ length: 10 }, () => Buffer.from('x'.repeat(50))));
    const streamed = await client.request({
      path: '/webhooks/payments',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignature(big) },
      body: chunks,
    });
    expect(streamed.statusCode).toBe(413);
    expect(await streamed.body.json()).toMatchObject({ code: 'payload_too_large' });
    expect(await store.listWebhooks()).toEqual([]);
  });

  // Found by a fresh user: the 413 went out with `Connection: close` before the body was read, and closing a
  // socket with unread bytes makes the kernel reset it, so a sender still writing its body saw EPIPE or
  // ECONNRESET instead of the 413 (2 of 12 tries with a 5 MB body), and would send again. The body is now
  // drained: this sender reads the 413 first, then writes its 5 MB, then asks again on the same connection.
  it('413 for a body declared too large keeps the connection: the body is drained, the next request served', async () => {
    const { url, store } = await startIngress(defer, { sources: [payments({ maxBodyBytes: 1_024 })] });
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    defer(() => socket.destroy());
    let received = '';
    let failure: string | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (received += text));
    socket.on('error', (error: NodeJS.ErrnoException) => (failure = error.code));
    const head = (path: string, length: number) =>
      `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Stripe-Signature: t=1,v1=00\r\nContent-Length: ${length}\r\n\r\n`;
    socket.write(head('/webhooks/payments', 5_000_000));
    await until(
      () => received,
      (text) => text.includes('payload_too_large'),
    );
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).not.toMatch(/connection: close/i);
    await new Promise<void>((resolve) => socket.write(Buffer.alloc(5_000_000, 'x'), () => resolve()));
    socket.write(`${head('/webhooks/nope', 2)}{}`);
    await until(
      () => received,
      (text) => text.includes('HTTP/1.1 404 ') || failure !== undefined,
    );
    expect(failure).toBeUndefined();
    expect(received).toContain('There is no webhook source named \\"nope\\".');
    expect(await store.listWebhooks()).toEqual([]);
  });

  // Found by a fresh user: an event id over 100 characters was accepted (ids may have 255) but its admin
  // view and replay answered 414, Fastify's default limit on a path parameter.
  it('an event id of 255 characters can be shown and replayed through the admin API', async () => {
    const { url } = await startIngress(defer, { sources: [payments()] });
    const id = `evt_${'L'.repeat(251)}`;
    expect((await deliverStripe(url, 'payments', stripeEvent(id, 'x'))).status).toBe(200);
    const show = await fetch(`${url}/admin/webhooks/payments/${id}`);
    expect(show.status).toBe(200);
    expect(await show.json()).toMatchObject({ event_id: id });
    const replay = await post(`${url}/admin/webhooks/payments/${id}/replay`, '');
    expect(replay).toMatchObject({ status: 202, body: { event_id: id } });
  });

  it('401 for a bad signature, a stale timestamp or no signature at all; nothing stored', async () => {
    const { url, store } = await startIngress(defer, { sources: [payments()] });
    const body = stripeEvent('evt_1', 'x');
    const wrongSecret = await deliverStripe(url, 'payments', body, 'whsec_someone_else');
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toMatchObject({ code: 'invalid_signature', retryable: false });
    const stale = await post(`${url}/webhooks/payments`, body, {
      'stripe-signature': stripeSignature(body, STRIPE_SECRET, Date.now() - 301_000),
    });
    expect(stale.status).toBe(401);
    expect(stale.body).toMatchObject({ code: 'stale_timestamp' });
    const unsigned = await post(`${url}/webhooks/payments`, body);
    expect(unsigned.body).toMatchObject({ code: 'invalid_signature', status: 401 });
    expect(await store.listWebhooks()).toEqual([]);
  });

  it('400 invalid_payload for a signed body that is not JSON, fails the schema, or has no event id', async () => {
    const { url, store } = await startIngress(defer, { sources: [payments()] });
    const notJson = await deliverStripe(url, 'payments', '{"id": "evt_1",');
    expect(notJson).toMatchObject({
      status: 400,
      body: { code: 'invalid_payload', detail: 'The payments webhook body is not valid JSON.' },
    });
    const noData = await deliverStripe(
      url,
      'payments',
      JSON.stringify({ id: 'evt_2', type: 'x', created: 1 }),
    );
    expect(noData.status).toBe(400);
    expect(noData.body).toMatchObject({ code: 'invalid_payload', issues: [{ path: '/data' }] });
    const free = await startIngress(defer, { sources: [payments({ schema: undefined })] });
    const noId = await deliverStripe(free.url, 'payments', JSON.stringify({ type: 'x' }));
    expect(noId.body).toMatchObject({
      status: 400,
      detail: 'The payments webhook has no event id (a string of 1 to 255 characters).',
    });
    const badUtf8 = await deliverStripe(free.url, 'payments', Buffer.from([0x7b, 0xff, 0x7d]));
    expect(badUtf8.body).toMatchObject({
      status: 400,
      detail: 'The payments webhook body is not valid UTF-8.',
    });
    const malformedType = await post(`${free.url}/webhooks/payments`, '{}', { 'content-type': '/;' });
    expect(malformedType).toMatchObject({ status: 415, body: { code: 'invalid_payload', status: 415 } });
    expect(malformedType.headers['content-type']).toBe(PROBLEM);
    expect(await store.listWebhooks()).toEqual([]);
  });
});

describe('POST /webhooks/:source: when the store fails', () => {
  it('503 upstream_unavailable: nothing was accepted, so the sender sends again', async () => {
    const { url, store } = await startIngress(defer, { sources: [payments()], worker: false });
    await store.close();
    const answer = await deliverStripe(url, 'payments', stripeEvent('evt_lost', 'x'));
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.body).toMatchObject({
      code: 'upstream_unavailable',
      retryable: true,
      retry_after_ms: 5000,
      detail: 'The webhook could not be stored, so it was not accepted; send it again shortly.',
    });
  });
});

describe('POST /webhooks/:source: a body that arrives too slowly', () => {
  it('408 timeout problem+json with Retry-After, the connection closed, nothing stored', async () => {
    const { url, store } = await startIngress(defer, {
      sources: [payments()],
      worker: false,
      requestTimeoutMs: 300,
    });
    const { connect } = await import('node:net');
    const target = new URL(url);
    const socket = connect({ host: target.hostname, port: Number(target.port) });
    defer(() => socket.destroy());
    let raw = '';
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `POST /webhooks/payments HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nStripe-Signature: t=1,v1=00\r\n\r\n{"id":`,
    );
    await closed;
    const [head, body] = raw.split('\r\n\r\n');
    expect(head!.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(head!.toLowerCase()).toContain('connection: close');
    expect(head!.toLowerCase()).toContain('retry-after: 1');
    expect(JSON.parse(body!)).toMatchObject({
      code: 'timeout',
      status: 408,
      detail: 'The webhook was not received and stored in time, so it was not accepted; send it again.',
    });
    expect(await store.listWebhooks({})).toEqual([]);
  });
});

describe('raw bytes', () => {
  // Unusual number formatting, non-ASCII text (2-, 3- and 4-byte UTF-8), irregular whitespace, key order.
  const odd =
    '{ "type":"payment_intent.succeeded" ,\t"id" : "evt_odd",\r\n  "created": 1.7672256E9, ' +
    '"data": {"object": {"amount": 1.0e3, "note": "Grüße, 日本, 🎁", "zero": -0.0 }}}\n';

  it('a body no serializer reproduces verifies; the same event re-serialized does not; one flipped byte is 401', async () => {
    const { runs, handler } = recorder();
    const { url, store } = await startIngress(defer, { sources: [payments()], handlers: [handler] });
    const signature = stripeSignature(odd);

    const reserialized = JSON.stringify(JSON.parse(odd));
    expect(reserialized).not.toBe(odd);
    expect(
      (await post(`${url}/webhooks/payments`, reserialized, { 'stripe-signature': signature })).status,
    ).toBe(401);

    const flipped = Buffer.from(odd, 'utf8');
    const at = flipped.indexOf('1.0e3');
    flipped[at] = flipped[at]! ^ 0x01; // '1' → '0'
    expect((await post(`${url}/webhooks/payments`, flipped, { 'stripe-signature': signature })).status).toBe(
      401,
    );

    const ok = await post(`${url}/webhooks/payments`, odd, { 'stripe-signature': signature });
    expect(ok).toMatchObject({ status: 200, body: { ok: true, duplicate: false, event_id: 'evt_odd' } });
    // Stored exactly as received, and the handler sees the parsed event.
    expect((await store.getWebhook('payments', 'evt_odd'))!.body).toBe(odd);
    await until(
      () => runs.length,
      (n) => n === 1,
    );
    expect(runs[0]!.event).toMatchObject({ data: { object: { amount: 1000, note: 'Grüße, 日本, 🎁' } } });
    expect(runs[0]!.occurredAt).toBe(1_767_225_600_000);
  });

  it('Standard Webhooks signed with the official library', async () => {
    const secret = 'whsec_' + Buffer.from('a 32-byte key for the e2e tests!').toString('base64');
    const runs: WebhookContext<unknown>[] = [];
    const { url } = await startIngress(defer, {
      sources: [
        defineWebhookSource({ name: 'std', verifier: standardWebhooksVerifier({ secrets: [secret] }) }),
      ],
      handlers: [onWebhook('std', 'invoice.paid', (ctx) => void runs.push(ctx))],
    });
    const body = '{"type":"invoice.paid",  "timestamp":"2026-01-01T00:00:00Z", "data":{"n": 1E2}}';
    const now = new Date();
    const headers = {
      'webhook-id': 'msg_2Lmk',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign('msg_2Lmk', now, body),
    };
    const ok = await post(`${url}/webhooks/std`, body, headers);
    expect(ok).toMatchObject({ status: 200, body: { event_id: 'msg_2Lmk', duplicate: false } });
    const tampered = await post(`${url}/webhooks/std`, body.replace('1E2', '100'), headers);
    expect(tampered.status).toBe(401);
    await until(
      () => runs.length,
      (n) => n === 1,
    );
    expect(runs[0]).toMatchObject({
      eventId: 'msg_2Lmk',
      eventType: 'invoice.paid',
      occurredAt: Date.UTC(2026, 0, 1),
    });
  });
});

describe('duplicates', () => {
  it('the same event twice 400 ms apart: both 200, one job, the handler runs once', async () => {
    const { runs, handler } = recorder();
    const { url, store } = await startIngress(defer, { sources: [payments()], handlers: [handler] });
    const body = stripeEvent('evt_dup', 'charge.succeeded');
    const first = await deliverStripe(url, 'payments', body);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await deliverStripe(url, 'payments', body);
    expect(first.body).toEqual({ ok: true, duplicate: false, event_id: 'evt_dup' });
    expect(second).toMatchObject({ status: 200, body: { ok: true, duplicate: true, event_id: 'evt_dup' } });
    await untilJobsFinished(store, 'webhook.payments', 1);
    expect(runs.length).toBe(1);
  });

  it('the same event at the same instant on separate connections: both 200, one job, the handler runs once', async () => {
    const { runs, handler } = recorder();
    const { url, store } = await startIngress(defer, { sources: [payments()], handlers: [handler] });
    const body = stripeEvent('evt_same', 'charge.succeeded');
    const headers = {
      'content-type': 'application/json',
      'stripe-signature': stripeSignature(body),
    };
    const clients = Array.from({ length: 8 }, () => new Client(url));
    for (const c of clients) defer(() => c.close());
    // Connect every client first, so the eight requests leave together.
    await Promise.all(
      clients.map((c) => c.request({ path: '/healthz', method: 'GET' }).then((r) => r.body.dump())),
    );
    const answers = await Promise.all(
      clients.map(async (c) => {
        const response = await c.request({ path: '/webhooks/payments', method: 'POST', headers, body });
        return { status: response.statusCode, body: (await response.body.json()) as { duplicate: boolean } };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
    await untilJobsFinished(store, 'webhook.payments', 1);
    expect(runs.length).toBe(1);
  });
});
