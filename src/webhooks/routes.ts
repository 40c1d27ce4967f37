/**
 * The ingress over HTTP: `POST /webhooks/:source` and the admin routes (loopback-only unless given a guard),
 * as Fastify plugins.
 * webhooks/ cannot import server/, so errors are answered here as problem+json through core's `toProblem`,
 * in the same shape as the server's own.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  DRAIN_LIMIT_BYTES,
  PROBLEM_CONTENT_TYPE,
  type EventSource,
  checkSingleValued,
  isBreakwaterError,
  isRequestTimeout,
  retryAfterHeader,
  singleValuedParameters,
  toProblem,
} from '../core/index.js';
import { isLocalClient } from '../http/index.js';
import { payloadTooLarge, readRawBody } from './body.js';
import type { AdminGuard, WebhookIngress, WebhookRejection } from './ingress.js';
import type { InboxRecord } from './ports.js';

type SourceRequest = FastifyRequest<{ Params: { source: string } }>;

const ACCEPTED_SCHEMA = {
  200: {
    type: 'object',
    properties: {
      ok: { type: 'boolean' },
      duplicate: { type: 'boolean' },
      event_id: { type: 'string' },
    },
  },
} as const;

/** The query of `GET /admin/webhooks`: each parameter once; `limit` 1 to 1000 (default 50). */
const LIST_QUERY = {
  type: 'object',
  properties: {
    source: { type: 'string', minLength: 1, maxLength: 255 },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
    before_id: { type: 'string', minLength: 1, maxLength: 255 },
  },
} as const;

/**
 * Registers the routes, each group in its own encapsulated plugin: the webhook route replaces every body
 * parser with one that keeps the raw bytes, which must not leak to the host's other routes.
 */
export async function webhookRoutes(
  app: FastifyInstance,
  ingress: WebhookIngress,
  options: { admin: boolean; guard?: AdminGuard; rejected: EventSource<WebhookRejection> },
): Promise<void> {
  const { rejected } = options;
  await app.register(async (child) => {
    child.setErrorHandler((error: FastifyError | BreakwaterError, request, reply) => {
      const answered = answerError(error, request, reply);
      // Every refusal of a delivery passes here (unknown source, size, admission, signature, payload, store).
      if (answered === undefined) return;
      const name = (request.params as { source?: string } | undefined)?.source ?? '';
      const source = ingress.source(name) === undefined ? undefined : name;
      // The request's logger (the server's pino, redacting signature headers); never the headers or body.
      request.log.warn(
        { source: source ?? null, code: answered.code, status: answered.status },
        'webhook delivery rejected',
      );
      if (rejected.hasListeners) rejected.emit({ source, code: answered.code, status: answered.status });
    });
    child.removeAllContentTypeParsers();
    // Every media type, and none: the bytes are what the signature covers; JSON parsing comes after it.
    child.addContentTypeParser('*', (request, payload, done) => {
      const name = (request.params as { source?: string }).source ?? '';
      const source = ingress.source(name);
      const limit = source?.maxBodyBytes ?? 0;
      readRawBody(payload, limit, () => payloadTooLarge(name, limit), done);
    });
    child.post<{ Params: { source: string } }>('/webhooks/:source', {
      schema: { response: ACCEPTED_SCHEMA },
      // Before the body is read: an unknown source, a body declared too large, a rate limit or a full backlog
      // is refused without reading (or storing) a byte of it.
      onRequest: async (request: SourceRequest, reply) => {
        const name = request.params.source;
        const source = ingress.source(name);
        if (source === undefined) {
          throw new BreakwaterError('not_found', {
            message: `There is no webhook source named ${JSON.stringify(name)}.`,
          });
        }
        const declared = Number(request.headers['content-length']);
        if (declared > source.maxBodyBytes) {
          // Answered before a byte of the body is read; the body is then drained to nowhere, unless it is
          // over DRAIN_LIMIT_BYTES (see there). Breakwater's server applies the same rule to every 413; this
          // guard is for a plain Fastify host, where nothing else bounds the draining.
          if (declared > DRAIN_LIMIT_BYTES) void reply.header('connection', 'close');
          throw payloadTooLarge(name, source.maxBodyBytes);
        }
        const refused = await ingress.admit(name);
        if (refused !== undefined) throw refused;
      },
      handler: async (request: SourceRequest, reply) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const receipt = await ingress.receive(request.params.source, raw, request.headers);
        // Only now, with the event and its job committed, does the sender learn it may stop retrying.
        return reply.code(200).send({ ok: true, duplicate: receipt.duplicate, event_id: receipt.eventId });
      },
    });
  });
  if (options.admin) await app.register(async (child) => adminRoutes(child, ingress, options.guard));
}

/**
 * `GET /admin/webhooks`, `GET /admin/webhooks/:source/:eventId` and
 * `POST /admin/webhooks/:source/:eventId/replay`, behind `guard` (the gateway's admin auth), by default
 * answered only to loopback clients (403 otherwise).
 */
async function adminRoutes(
  app: FastifyInstance,
  ingress: WebhookIngress,
  guard: AdminGuard | undefined,
): Promise<void> {
  app.setErrorHandler((error: FastifyError | BreakwaterError, request, reply) => {
    answerError(error, request, reply);
  });
  // No admin route reads a body: whatever a client sends (`curl -X POST -H 'content-type: application/json'`
  // with nothing) is read, up to 1 KiB, and ignored rather than refused as empty JSON.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 }, (_request, _body, done) =>
    done(null, undefined),
  );
  app.addHook(
    'onRequest',
    guard ??
      (async (request) => {
        if (!isLocalClient(request)) {
          throw new BreakwaterError('unauthorized', {
            status: 403,
            message: 'The webhook admin API answers only to clients on this machine (loopback).',
          });
        }
      }),
  );

  app.get<{ Querystring: { source?: string; limit: number; before_id?: string } }>(
    '/admin/webhooks',
    {
      schema: { querystring: LIST_QUERY },
      // A repeated parameter (`?source=a&source=b`, an array) is named, before the schema's type message.
      preValidation: async (request) => checkSingleValued(request.query, singleValuedParameters(LIST_QUERY)),
    },
    async (request, reply) => {
      const { source, limit, before_id: beforeId } = request.query;
      const records = await ingress.store.listWebhooks({ source, limit, beforeId });
      void reply.header('cache-control', 'no-store');
      return {
        webhooks: records.map((r) => toWebhookView(r, false)),
        next_before_id: records.length === limit ? (records.at(-1)?.id ?? null) : null,
      };
    },
  );

  app.get<{ Params: { source: string; eventId: string } }>(
    '/admin/webhooks/:source/:eventId',
    async (request, reply) => {
      const { source, eventId } = request.params;
      const record = await ingress.store.getWebhook(source, eventId);
      if (record === undefined) {
        throw new BreakwaterError('not_found', {
          message: `There is no ${source} webhook event ${JSON.stringify(eventId)}.`,
        });
      }
      void reply.header('cache-control', 'no-store');
      return toWebhookView(record, true);
    },
  );

  app.post<{ Params: { source: string; eventId: string } }>(
    '/admin/webhooks/:source/:eventId/replay',
    async (request, reply) => {
      const record = await ingress.replay(request.params.source, request.params.eventId);
      return reply.code(202).send({ ok: true, ...toWebhookView(record, false) });
    },
  );
}

/** An inbox row as the admin API shows it (times ISO 8601; the body only on the single-event view). */
export function toWebhookView(record: InboxRecord, withBody: boolean): Record<string, unknown> {
  return {
    id: record.id,
    source: record.source,
    event_id: record.eventId,
    event_type: record.eventType,
    received_at: new Date(record.receivedAt).toISOString(),
    occurred_at: record.occurredAt === null ? null : new Date(record.occurredAt).toISOString(),
    job_id: record.jobId,
    replays: record.replays,
    ...(withBody ? { body: record.body } : {}),
  };
}

/**
 * Answers any failure as problem+json (RFC 9457): a BreakwaterError as it is, a client error Fastify raised
 * (a malformed Content-Type, a body whose length does not match) as `invalid_payload` with its status, and
 * anything else as `internal_error` (500, logged; its message is not shown). Returns the error answered, or
 * `undefined` when a reply had already been sent.
 */
function answerError(
  error: FastifyError | BreakwaterError,
  request: FastifyRequest,
  reply: FastifyReply,
): BreakwaterError | undefined {
  let mapped: BreakwaterError;
  if (isBreakwaterError(error)) mapped = error;
  else if (isRequestTimeout(error)) {
    // The inbound timeout: mostly a body that arrives too slowly. Nothing was acknowledged, so the sender
    // sends again (a duplicate is recognized); the half-read connection cannot carry another request.
    void reply.header('connection', 'close');
    mapped = new BreakwaterError('timeout', {
      status: 408,
      message: 'The webhook was not received and stored in time, so it was not accepted; send it again.',
      retryAfterMs: 1_000,
      source: 'webhooks',
    });
  } else {
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    // Fastify's own messages (a schema's "querystring/limit must be <= 1000") say what to fix and hold no state.
    const own = typeof error.code === 'string' && error.code.startsWith('FST_');
    mapped =
      status >= 400 && status < 500
        ? new BreakwaterError(status === 413 ? 'payload_too_large' : 'invalid_payload', {
            status,
            ...(own && status !== 413 ? { message: error.message } : {}),
          })
        : new BreakwaterError('internal_error');
  }
  if (mapped.status >= 500) request.log.error({ err: error, code: mapped.code }, 'webhook request failed');
  if (reply.sent) return undefined;
  const retryAfter = retryAfterHeader(mapped);
  if (retryAfter !== undefined) void reply.header('retry-after', retryAfter);
  const url = request.raw.url ?? '/';
  const q = url.indexOf('?');
  void reply
    .code(mapped.status)
    .header('content-type', `${PROBLEM_CONTENT_TYPE}; charset=utf-8`)
    .send(toProblem(mapped, q < 0 ? url : url.slice(0, q)));
  return mapped;
}
