/**
 * The ingress over HTTP: `POST /webhooks/:source` and the admin routes (loopback-only unless given a guard),
 * as Fastify plugins. Their errors are answered by the edge's one handler (`installErrorRenderer`) as
 * problem+json, on a Breakwater server and on any other Fastify app alike; the delivery route reads a request
 * timeout as its own 408 and counts every refused delivery ({@link deliveryErrors}).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BreakwaterError, DRAIN_LIMIT_BYTES, type EventSource, isRequestTimeout } from '../core/index.js';
import {
  PROBLEM_RENDERER,
  installErrorRenderer,
  isLocalClient,
  refuseRepeatedQuery,
  type ErrorRenderer,
} from '../http/index.js';
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
    installErrorRenderer(child, deliveryErrors(ingress, rejected));
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
  // Problem+json, as on every route of a Breakwater server; the call makes it so on any Fastify app.
  installErrorRenderer(app, PROBLEM_RENDERER);
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
      // A repeated parameter (`?source=a&source=b`, an array) is named, before the schema's type message
      // (a Breakwater server checks every route so; this holds on any Fastify app).
      preValidation: refuseRepeatedQuery,
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
 * The delivery route's errors, problem+json like every route's, with two readings of its own:
 * - a request timeout, mostly a body that arrives too slowly, is 408 `timeout` with `Retry-After: 1` and
 *   `Connection: close`: nothing was acknowledged, so the sender sends again (a duplicate is recognized), and
 *   a half-read connection cannot carry another request;
 * - every refused delivery (unknown source, size, admission, signature, payload, store) is logged at `warn`
 *   with its source, code and status (never the headers or body: the request's logger is the server's pino,
 *   which redacts signature headers) and emitted on `rejected`.
 */
function deliveryErrors(ingress: WebhookIngress, rejected: EventSource<WebhookRejection>): ErrorRenderer {
  return {
    body: PROBLEM_RENDERER.body,
    read(cause: unknown, _request: FastifyRequest, reply: FastifyReply) {
      if (!isRequestTimeout(cause)) return undefined;
      void reply.header('connection', 'close');
      return new BreakwaterError('timeout', {
        status: 408,
        message: 'The webhook was not received and stored in time, so it was not accepted; send it again.',
        retryAfterMs: 1_000,
        source: 'webhooks',
      });
    },
    answered(error: BreakwaterError, request: FastifyRequest) {
      const name = (request.params as { source?: string } | undefined)?.source ?? '';
      const source = ingress.source(name) === undefined ? undefined : name;
      request.log.warn(
        { source: source ?? null, code: error.code, status: error.status },
        'webhook delivery rejected',
      );
      if (rejected.hasListeners) rejected.emit({ source, code: error.code, status: error.status });
    },
  };
}
