/**
 * A webhook source: who sends, how its deliveries are verified, how big they may be, how to read the event id,
 * type and time, and the admission limits that protect the gateway from it (docs/webhooks.md#sources).
 */
import { defineOptions, o } from '../core/index.js';
import type { Backoff, RateLimitConfig } from '../policy/index.js';
import type { VerifiedWebhook, WebhookHeaders, WebhookVerifier } from './ports.js';

/**
 * A schema the parsed body must pass: anything with zod's `safeParse` (zod 4 schemas fit as they are). Its
 * output is the event the readers and handlers see.
 */
export interface WebhookSchema<E> {
  safeParse(data: unknown): { success: true; data: E } | { success: false; error: unknown };
}

/** What the readers get besides the event: the request headers and what the verifier learned. */
export interface DeliveryInfo {
  readonly headers: WebhookHeaders;
  readonly verified: VerifiedWebhook;
}

/** A per-source rate limit: at most `limit` deliveries per `windowMs` (ms), over one gateway process. */
export interface WebhookRateLimit {
  /** Deliveries per window (integer >= 1). */
  limit: number;
  /** Window in ms (integer >= 1). */
  windowMs: number;
  /**
   * `token_bucket` (default: a burst of `limit`, refilled continuously at `limit` per `windowMs`, O(1) per
   * delivery), `fixed_window`, or `sliding_window` (exact, but keeps `limit` timestamps: keep `limit` small).
   */
  algorithm?: 'token_bucket' | 'fixed_window' | 'sliding_window';
}

/**
 * Options of {@link defineWebhookSource}; validated when the source is defined (an OptionsError names the source
 * and every bad option).
 */
export interface WebhookSourceOptions<E = unknown> {
  /** The path segment of `POST /webhooks/:source`: 1..64 of `a-z 0-9 _ -`, starting with a letter or digit. */
  name: string;
  /** Checks the signature over the exact received bytes (see `webhooks/verifiers`). */
  verifier: WebhookVerifier;
  /** Largest body in bytes (integer >= 1, default 1 048 576); counted while it streams in: 413 past it. */
  maxBodyBytes?: number;
  /** Validates the parsed JSON body (400 `invalid_payload` when it fails); its output is the event. */
  schema?: WebhookSchema<E>;
  /** The event id deliveries are deduplicated on (1..255 characters). Default per scheme, see the docs. */
  eventId?: (event: E, delivery: DeliveryInfo) => string | undefined;
  /** The event type handlers are chosen by (1..255 characters). Default per scheme. */
  eventType?: (event: E, delivery: DeliveryInfo) => string | undefined;
  /** When the event happened, ms since the epoch, or null when the payload does not say. Default per scheme. */
  occurredAt?: (event: E, delivery: DeliveryInfo) => number | null | undefined;
  /** Deliveries allowed per window, per gateway process; over it 429 with `Retry-After`. Default: none. */
  rateLimit?: WebhookRateLimit;
  /** Most stored events whose handling has not finished (integer >= 1); at or over it 503. Default: none. */
  maxBacklog?: number;
  /** `Retry-After` of a 503 for the backlog, ms (integer >= 1000, default 30 000). */
  backlogRetryAfterMs?: number;
  /**
   * Events with the same key are handled one at a time, in the order they were stored (for example the order
   * id). Keys are shared by every job type in the store: prefix them if two sources must not wait on each other.
   */
  orderingKey?: (event: E, meta: { eventId: string; eventType: string }) => string | undefined;
  /** Handlers of this source running at once in one worker process (integer >= 1, default 4). */
  concurrency?: number;
  /** Delay before each retry of a failed handler. Default: the jobs runtime's (exponential from 1 s, ×2, jitter). */
  backoff?: Backoff;
}

/** Defaults of {@link WebhookSourceOptions}. */
export const WEBHOOK_SOURCE_DEFAULTS = {
  maxBodyBytes: 1_048_576,
  backlogRetryAfterMs: 30_000,
  concurrency: 4,
  rateLimitAlgorithm: 'token_bucket',
} as const;

/** A declared source, options resolved. Declare it with {@link defineWebhookSource}. */
export interface WebhookSource<E = unknown> {
  readonly name: string;
  readonly verifier: WebhookVerifier;
  readonly maxBodyBytes: number;
  readonly schema: WebhookSchema<E> | undefined;
  readonly eventId: (event: E, delivery: DeliveryInfo) => string | undefined;
  readonly eventType: (event: E, delivery: DeliveryInfo) => string | undefined;
  readonly occurredAt: (event: E, delivery: DeliveryInfo) => number | null | undefined;
  /** The rate limit as a policy algorithm config, or undefined. */
  readonly rateLimit: RateLimitConfig | undefined;
  readonly maxBacklog: number | undefined;
  readonly backlogRetryAfterMs: number;
  readonly orderingKey:
    ((event: E, meta: { eventId: string; eventType: string }) => string | undefined) | undefined;
  readonly concurrency: number;
  readonly backoff: Backoff | undefined;
}

/** A source of any event type, as the ingress holds them side by side. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each source has its own event type
export type AnyWebhookSource = WebhookSource<any>;

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const RATE_LIMIT_ALGORITHMS = ['token_bucket', 'fixed_window', 'sliding_window'] as const;

/** Checks {@link WebhookSourceOptions} and applies {@link WEBHOOK_SOURCE_DEFAULTS}. */
const SHAPE = {
  name: o.custom<string>(
    (v) => typeof v === 'string' && NAME.test(v),
    '1..64 of a-z, 0-9, _ and -, starting with a letter or digit',
  ),
  verifier: o.methods<WebhookVerifier>('a WebhookVerifier with verify()', 'verify'),
  maxBodyBytes: o.number().int().min(1).default(WEBHOOK_SOURCE_DEFAULTS.maxBodyBytes),
  schema: o.methods<WebhookSchema<unknown>>('a schema with safeParse() (zod)', 'safeParse').optional(),
  eventId: o.fn<Reader<string | undefined>>().optional(),
  eventType: o.fn<Reader<string | undefined>>().optional(),
  occurredAt: o.fn<Reader<number | null | undefined>>().optional(),
  rateLimit: o
    .object(
      {
        limit: o.number().int().min(1),
        windowMs: o.number().int().min(1),
        algorithm: o.enum(RATE_LIMIT_ALGORITHMS).default(WEBHOOK_SOURCE_DEFAULTS.rateLimitAlgorithm),
      },
      'an object { limit, windowMs, algorithm? } or left out',
    )
    .optional(),
  maxBacklog: o.number().int().min(1).optional(),
  backlogRetryAfterMs: o.number().int().min(1000).default(WEBHOOK_SOURCE_DEFAULTS.backlogRetryAfterMs),
  orderingKey: o
    .fn<(event: unknown, meta: { eventId: string; eventType: string }) => string | undefined>()
    .optional(),
  concurrency: o.number().int().min(1).default(WEBHOOK_SOURCE_DEFAULTS.concurrency),
  backoff: o.methods<Backoff>('a Backoff with next(retry, previousMs)', 'next').optional(),
};
type Reader<T> = (event: unknown, delivery: DeliveryInfo) => T;

/**
 * Declares a webhook source. Mount it with `createWebhookIngress({ sources: [source], … })`.
 *
 * Readers left out default by the verifier's scheme:
 *
 * | scheme | event id | event type | occurred at |
 * |---|---|---|---|
 * | Stripe | `body.id` | `body.type` | `body.created` × 1000 |
 * | GitHub | `X-GitHub-Delivery` | `X-GitHub-Event` | none |
 * | Standard Webhooks | `webhook-id` | `body.type` | `body.timestamp` (ISO 8601), else `webhook-timestamp` |
 * | other (HMAC) | the verifier's event id header, else `body.id` | `body.type` | the signed timestamp, else none |
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option; its owner is
 *   `defineWebhookSource(<name>)`, or `defineWebhookSource` when the name itself is bad.
 */
export function defineWebhookSource<E = unknown>(options: WebhookSourceOptions<E>): WebhookSource<E> {
  const given: unknown = (options as { name?: unknown } | null | undefined)?.name;
  const owner =
    typeof given === 'string' && NAME.test(given) ? `defineWebhookSource(${given})` : 'defineWebhookSource';
  // The owner names the source, so the parser is made per call: once per declaration, never per delivery.
  const parsed = defineOptions<WebhookSourceOptions>()(owner, SHAPE)(
    options as unknown as WebhookSourceOptions,
  );
  const readers = defaultReaders(String(parsed.verifier.scheme ?? ''));
  return Object.freeze({
    ...parsed,
    eventId: parsed.eventId ?? readers.eventId,
    eventType: parsed.eventType ?? readers.eventType,
    occurredAt: parsed.occurredAt ?? readers.occurredAt,
    rateLimit: rateLimitConfig(parsed.rateLimit),
  }) as WebhookSource<E>;
}

/** The rate limit as the policy's algorithm config. */
function rateLimitConfig(
  given: { limit: number; windowMs: number; algorithm: WebhookRateLimit['algorithm'] & string } | undefined,
): RateLimitConfig | undefined {
  if (given === undefined) return undefined;
  const { limit, windowMs, algorithm } = given;
  if (algorithm === 'token_bucket') {
    return { type: 'token_bucket', capacity: limit, refillTokens: limit, refillIntervalMs: windowMs };
  }
  return { type: algorithm, limit, windowMs };
}

type Readers = Pick<WebhookSource<unknown>, 'eventId' | 'eventType' | 'occurredAt'>;

/** The readers of a scheme (see the table on {@link defineWebhookSource}). */
function defaultReaders(scheme: string): Readers {
  const kind = scheme.toLowerCase().replace(/[^a-z]/g, '');
  if (kind === 'stripe') {
    return {
      eventId: (body) => stringMember(body, 'id'),
      eventType: (body) => stringMember(body, 'type'),
      occurredAt: (body) => {
        const created = member(body, 'created');
        return typeof created === 'number' && Number.isFinite(created) ? created * 1000 : null;
      },
    };
  }
  if (kind === 'github') {
    return {
      eventId: (_body, d) => d.verified.eventId ?? header(d.headers, 'x-github-delivery'),
      eventType: (_body, d) => header(d.headers, 'x-github-event'),
      occurredAt: () => null,
    };
  }
  if (kind === 'standardwebhooks' || kind === 'standard') {
    return {
      eventId: (_body, d) => d.verified.eventId ?? header(d.headers, 'webhook-id'),
      eventType: (body) => stringMember(body, 'type'),
      occurredAt: (body, d) => {
        const at = stringMember(body, 'timestamp');
        const parsed = at === undefined ? NaN : Date.parse(at);
        return Number.isFinite(parsed) ? parsed : (d.verified.timestampMs ?? null);
      },
    };
  }
  return {
    eventId: (body, d) => d.verified.eventId ?? stringMember(body, 'id'),
    eventType: (body) => stringMember(body, 'type'),
    occurredAt: (_body, d) => d.verified.timestampMs ?? null,
  };
}

function member(body: unknown, key: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[key]
    : undefined;
}

function stringMember(body: unknown, key: string): string | undefined {
  const value = member(body, key);
  return typeof value === 'string' ? value : undefined;
}

/** A header's single value (a repeated header is not an id). */
function header(headers: WebhookHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}
