/**
 * The webhook ingress (docs/webhooks.md): sources, their admission control, the pipeline from raw bytes to
 * a stored event and its job, and replay. `routes` mounts it on Fastify (see routes.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  EventSource,
  classify,
  defineOptions,
  isBreakwaterError,
  o,
  type Clock,
  type Disposable,
} from '../core/index.js';
import type { RateLimitStore } from '../policy/index.js';
import { Admission, defaultRateLimitStore } from './admission.js';
import {
  HandlerTable,
  buildJob,
  invalidPayload,
  parseEvent,
  runWebhookJob,
  webhookJobType,
  type WebhookJobs,
} from './dispatch.js';
import type { AnyWebhookHandler } from './handlers.js';
import type { InboxRecord, WebhookHeaders, WebhookInboxStore } from './ports.js';
import { webhookRoutes } from './routes.js';
import type { AnyWebhookSource, DeliveryInfo } from './source.js';

/** Options of {@link createWebhookIngress}; validated at construction (an OptionsError names every bad one). */
export interface WebhookIngressOptions {
  /** The inbox (the SQLite or PostgreSQL store). Required. */
  store: WebhookInboxStore;
  /** The declared sources (`defineWebhookSource`); names must differ. */
  sources: readonly AnyWebhookSource[];
  /** The declared handlers (`onWebhook`), at most one per source and event type. */
  handlers?: readonly AnyWebhookHandler[];
  /**
   * The jobs runtime that runs the handlers (`createJobs(...)`): one job type per source, `webhook.<source>`,
   * is defined on it. Leave it out in a process that only receives (its events are handled by workers that
   * declare the same sources and handlers).
   */
  jobs?: WebhookJobs;
  /** How long a source's backlog count is reused before it is read again, ms (integer >= 1, default 1 000). */
  backlogCacheMs?: number;
  /** Where the per-source rate-limit counters live (default: a memory store of this ingress). */
  rateLimitStore?: RateLimitStore;
  /** Mount the admin routes (`/admin/webhooks…`, loopback only) with `routes` (default true). */
  admin?: boolean;
  /**
   * The check in front of the admin routes, as a Fastify `onRequest` hook that throws a BreakwaterError to
   * refuse (the gateway passes its admin auth: token or loopback). Default: loopback clients only (403).
   */
  adminGuard?: AdminGuard;
  clock?: Clock;
}

/** An admin check as a Fastify `onRequest` hook: resolves to let the request in, throws to refuse it. */
export type AdminGuard = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** An application's webhooks as it declares them (`AppParts.webhooks`): sources and their handlers. */
export interface WebhookDeclarations {
  sources: readonly AnyWebhookSource[];
  handlers?: readonly AnyWebhookHandler[];
}

/** Defaults of {@link WebhookIngressOptions}. */
export const WEBHOOK_INGRESS_DEFAULTS = { backlogCacheMs: 1_000, admin: true } as const;

const isSource = (value: unknown): boolean =>
  typeof (value as Partial<AnyWebhookSource> | undefined)?.verifier?.verify === 'function' &&
  typeof (value as Partial<AnyWebhookSource>).name === 'string';

/** Checks {@link WebhookIngressOptions} and applies {@link WEBHOOK_INGRESS_DEFAULTS}. */
const parseOptions = defineOptions<WebhookIngressOptions>()(
  'createWebhookIngress',
  {
    store: o.methods<WebhookInboxStore>(
      'a store with the webhook inbox (acceptWebhook, getWebhook, …)',
      'acceptWebhook',
      'getWebhook',
    ),
    sources: o.custom<readonly AnyWebhookSource[]>(Array.isArray, 'an array of sources'),
    handlers: o.custom<readonly AnyWebhookHandler[]>(Array.isArray, 'an array of handlers').default([]),
    jobs: o.methods<WebhookJobs>('a jobs runtime with defineJob (createJobs)', 'defineJob').optional(),
    backlogCacheMs: o.number().int().min(1).default(WEBHOOK_INGRESS_DEFAULTS.backlogCacheMs),
    rateLimitStore: o.methods<RateLimitStore>('a RateLimitStore with consume()', 'consume').optional(),
    admin: o.boolean().default(WEBHOOK_INGRESS_DEFAULTS.admin),
    adminGuard: o.fn<AdminGuard>().optional(),
    clock: o.clock(),
  },
  ({ sources }, report) => {
    if (!Array.isArray(sources)) return;
    const names = new Set<string>();
    for (const source of sources) {
      if (!isSource(source)) return report('sources', 'sources made by defineWebhookSource', source);
      if (names.has(source.name)) {
        return report('sources', 'sources with distinct names', `two named ${source.name}`);
      }
      names.add(source.name);
    }
  },
);

/** What the pipeline did with a delivery it accepted. */
export interface WebhookReceipt {
  /** The source's name. */
  source: string;
  /** True when the event id was stored before: nothing was enqueued. */
  duplicate: boolean;
  eventId: string;
  eventType: string;
  /** The inbox row (the first delivery's when a duplicate). */
  record: InboxRecord;
}

/**
 * A delivery the ingress refused over HTTP (`POST /webhooks/:source` answered with an error): `code` and
 * `status` as answered, e.g. `invalid_signature` 401, `stale_timestamp` 401, `invalid_payload` 400,
 * `payload_too_large` 413, `rate_limited` 429, `overloaded` 503, `upstream_unavailable` 503 (the store
 * failed), `timeout` 408, `not_found` 404.
 */
export interface WebhookRejection {
  /** The declared source's name; `undefined` when the path names no declared source (`not_found`). */
  readonly source: string | undefined;
  readonly code: string;
  readonly status: number;
}

/** A running ingress. */
export interface WebhookIngress {
  /** The declared source names. */
  readonly sources: readonly string[];
  /** Mounts `POST /webhooks/:source` and, unless `admin: false`, the admin routes; pass it to `createServer({ routes })`. */
  readonly routes: (app: FastifyInstance) => Promise<void>;
  /** The declared source of that name, or undefined. */
  source(name: string): AnyWebhookSource | undefined;
  /**
   * Admission of a delivery to `source`, before its body is read: undefined to go on, else `rate_limited`
   * (429) or `overloaded` (503) with `retryAfterMs`. Counts towards the rate limit.
   */
  admit(source: string): Promise<BreakwaterError | undefined>;
  /**
   * The pipeline after admission: verify the signature over `rawBody`, parse, validate, read id and type, and
   * store the event with its job in one transaction. Resolves once the store has committed.
   * @throws BreakwaterError `not_found` (unknown source), `invalid_signature` / `stale_timestamp` (401),
   *   `invalid_payload` (400), `upstream_unavailable` (503) when the store failed (nothing was accepted).
   */
  receive(source: string, rawBody: Buffer, headers: WebhookHeaders): Promise<WebhookReceipt>;
  /**
   * Enqueues a stored event's handler again (its current handler and settings). Resolves with the inbox row
   * (its `jobId` the new job).
   * @throws BreakwaterError `not_found` when the source or the event is unknown; `invalid_payload` when the
   *   stored body no longer passes the source's schema.
   */
  replay(source: string, eventId: string): Promise<InboxRecord>;
  /**
   * Hears each delivery stored for the first time (not duplicates), right after its commit and before the
   * 2xx is sent: for audit logs and metrics. A listener that throws breaks nothing.
   */
  onAccepted(listener: (receipt: WebhookReceipt) => void): Disposable;
  /**
   * Hears each delivery the pipeline stored or recognized, first deliveries and duplicates alike (tell them
   * apart by `duplicate`), right after the store answered: for metrics. A listener that throws breaks nothing.
   */
  onReceipt(listener: (receipt: WebhookReceipt) => void): Disposable;
  /**
   * Hears each delivery refused over HTTP, as it is answered (see {@link WebhookRejection}): for metrics.
   * Calls of {@link WebhookIngress.receive} outside the route are not reported. A listener that throws breaks
   * nothing.
   */
  onRejected(listener: (rejection: WebhookRejection) => void): Disposable;
  /** The store, for the admin routes. */
  readonly store: WebhookInboxStore;
}

const MAX_ID_LENGTH = 255;

/**
 * Creates the webhook ingress over an inbox store: validates the declarations, defines one job type per
 * source on `jobs` (so handlers run as jobs: retries with backoff, dead letter, replay), and returns the
 * pipeline and its Fastify routes.
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option (two sources with one name
 *   included); RangeError for a handler of an undeclared source or a second handler for one type.
 */
export function createWebhookIngress(options: WebhookIngressOptions): WebhookIngress {
  const { store, clock, backlogCacheMs, ...parsed } = parseOptions(options);
  const rateLimitStore = parsed.rateLimitStore ?? defaultRateLimitStore();
  const sources = new Map<string, { source: AnyWebhookSource; admission: Admission }>();
  for (const source of parsed.sources) {
    const admission = new Admission(source, {
      backlog: (name) => store.webhookBacklog(name),
      backlogCacheMs,
      rateLimitStore,
      clock,
    });
    sources.set(source.name, { source, admission });
  }
  const handlers = new HandlerTable(new Set(sources.keys()), parsed.handlers);
  const accepted = new EventSource<WebhookReceipt>();
  const receipts = new EventSource<WebhookReceipt>();
  const rejected = new EventSource<WebhookRejection>();
  if (parsed.jobs !== undefined) {
    for (const { source } of sources.values()) {
      parsed.jobs.defineJob(webhookJobType(source.name), runWebhookJob(store, source, handlers), {
        concurrency: source.concurrency,
        ...(source.backoff === undefined ? {} : { backoff: source.backoff }),
      });
    }
  }

  const find = (name: string) => {
    const found = sources.get(name);
    if (found === undefined) {
      throw new BreakwaterError('not_found', {
        message: `There is no webhook source named ${JSON.stringify(name)}.`,
      });
    }
    return found;
  };

  async function receive(name: string, rawBody: Buffer, headers: WebhookHeaders): Promise<WebhookReceipt> {
    const { source, admission } = find(name);
    const receivedAt = clock.now();
    // Verify first, over the bytes as received: nothing of an unverified body is parsed or trusted.
    const verified = source.verifier.verify(rawBody, headers, receivedAt);
    const body = decodeUtf8(rawBody, source.name);
    const event = parseEvent(source, body);
    const info: DeliveryInfo = { headers, verified };
    const eventId = readId(source, 'event id', () => source.eventId(event, info));
    const eventType = readId(source, 'event type', () => source.eventType(event, info));
    const occurredAt = readTime(source, () => source.occurredAt(event, info));
    const orderingKey =
      source.orderingKey === undefined
        ? undefined
        : readOptionalId(source, 'ordering key', () => source.orderingKey!(event, { eventId, eventType }));
    const handler = handlers.find(source.name, eventType);
    let result: { duplicate: boolean; record: InboxRecord };
    try {
      result = await store.acceptWebhook(
        { source: source.name, eventId, eventType, receivedAt, occurredAt, body },
        (inboxId) => buildJob(source, handler, { eventId, eventType, orderingKey }, inboxId, receivedAt),
      );
    } catch (error) {
      throw storeFailed(error);
    }
    const receipt = {
      source: source.name,
      duplicate: result.duplicate,
      eventId,
      eventType,
      record: result.record,
    };
    if (!result.duplicate) {
      admission.accepted();
      if (accepted.hasListeners) accepted.emit(receipt);
    }
    if (receipts.hasListeners) receipts.emit(receipt);
    return receipt;
  }

  async function replay(name: string, eventId: string): Promise<InboxRecord> {
    const { source } = find(name);
    const record = await store.getWebhook(source.name, eventId);
    const missing = () =>
      new BreakwaterError('not_found', {
        message: `There is no ${source.name} webhook event ${JSON.stringify(eventId)}.`,
      });
    if (record === undefined) throw missing();
    const event = parseEvent(source, record.body);
    const orderingKey =
      source.orderingKey === undefined
        ? undefined
        : readOptionalId(source, 'ordering key', () =>
            source.orderingKey!(event, { eventId: record.eventId, eventType: record.eventType }),
          );
    const handler = handlers.find(source.name, record.eventType);
    const now = clock.now();
    const replayed = await store.replayWebhook(source.name, eventId, (inboxId) =>
      buildJob(
        source,
        handler,
        { eventId: record.eventId, eventType: record.eventType, orderingKey },
        inboxId,
        now,
      ),
    );
    if (replayed === undefined) throw missing();
    return replayed;
  }

  const ingress: WebhookIngress = {
    sources: [...sources.keys()],
    store,
    source: (name) => sources.get(name)?.source,
    admit: (name) => find(name).admission.check(),
    receive,
    replay,
    onAccepted: (listener) => accepted.on(listener),
    onReceipt: (listener) => receipts.on(listener),
    onRejected: (listener) => rejected.on(listener),
    routes: (app) =>
      webhookRoutes(app, ingress, {
        admin: parsed.admin,
        guard: parsed.adminGuard,
        rejected,
      }),
  };
  return ingress;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body as text; JSON is UTF-8 (RFC 8259, section 8.1), so other bytes are refused, not replaced. */
function decodeUtf8(raw: Buffer, source: string): string {
  try {
    return utf8.decode(raw);
  } catch {
    throw invalidPayload(`The ${source} webhook body is not valid UTF-8.`);
  }
}

/** Runs a reader; its failure or a value that is not 1..255 characters is the payload's fault (400). */
function readId(source: AnyWebhookSource, what: string, read: () => unknown): string {
  const value = readOptionalId(source, what, read);
  if (value === undefined) {
    throw invalidPayload(
      `The ${source.name} webhook has no ${what} (a string of 1 to ${MAX_ID_LENGTH} characters).`,
    );
  }
  return value;
}

function readOptionalId(source: AnyWebhookSource, what: string, read: () => unknown): string | undefined {
  let value: unknown;
  try {
    value = read();
  } catch {
    throw invalidPayload(`The ${what} of the ${source.name} webhook could not be read.`);
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw invalidPayload(
      `The ${what} of the ${source.name} webhook must be 1 to ${MAX_ID_LENGTH} characters.`,
    );
  }
  return value;
}

function readTime(source: AnyWebhookSource, read: () => unknown): number | null {
  let value: unknown;
  try {
    value = read();
  } catch {
    throw invalidPayload(`The time of the ${source.name} webhook could not be read.`);
  }
  return typeof value === 'number' && Number.isFinite(value) ? Math.round(value) : null;
}

/** The `Retry-After` of a delivery the store could not take (ms). */
const STORE_FAILED_RETRY_AFTER_MS = 5_000;

/**
 * A store failure while accepting: nothing was acknowledged, so the sender must send again (503). A
 * BreakwaterError (a delivery field the store refuses: 400) and a programming error (500) stay what they are.
 */
function storeFailed(error: unknown): unknown {
  if (isBreakwaterError(error) || classify(error).kind === 'fatal') return error;
  return new BreakwaterError('upstream_unavailable', {
    message: 'The webhook could not be stored, so it was not accepted; send it again shortly.',
    // Every 5xx of the ingress says when to come back: senders that honour it spread their retries.
    retryAfterMs: STORE_FAILED_RETRY_AFTER_MS,
    source: 'webhooks',
    cause: error,
  });
}
