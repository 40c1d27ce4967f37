/** The signing schemes Breakwater verifies (docs/webhooks.md#verifiers). */
export type WebhookScheme = 'standard-webhooks' | 'stripe' | 'github' | 'hmac';

/**
 * Request headers as Node's `IncomingMessage.headers` (and Fastify's `request.headers`) give them: lowercase
 * names, values decoded as latin1. A name in another case is still found (a slower scan, only on a miss).
 */
export type WebhookHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** What a successful verification learned from the signed request. */
export interface VerifiedWebhook {
  /**
   * The event id from a header, when the scheme carries one (`webhook-id`, `X-GitHub-Delivery`, the generic
   * verifier's `eventIdHeader`). Absent for Stripe, whose event id is the body's `id`. Only Standard Webhooks
   * signs its id; the others' id headers are not covered by the signature.
   */
  readonly eventId?: string;
  /** The signed timestamp in ms since the epoch (a whole number of seconds), when the scheme has one. */
  readonly timestampMs?: number;
}

/**
 * Checks a webhook's signature over the exact received bytes, before anything parses them.
 *
 * `verify` is synchronous (every scheme here is an HMAC, which `node:crypto` computes synchronously; an async
 * contract would only add a promise per delivery on the hot path). It never parses the body.
 *
 * @throws BreakwaterError `invalid_signature` (401; `details.reason` is `missing_header`, `malformed_header`
 *   or `no_match`) or `stale_timestamp` (401; `details` `{ timestamp_ms, now_ms, tolerance_ms }`). Built
 *   without a stack trace: rejections are expected traffic, not bugs.
 */
export interface WebhookVerifier {
  readonly scheme: WebhookScheme;
  /**
   * @param rawBody the request body exactly as received (a `Buffer`), before any decoding.
   * @param nowMs the current time in ms since the epoch, from the caller's `Clock`.
   */
  verify(rawBody: Uint8Array, headers: WebhookHeaders, nowMs: number): VerifiedWebhook;
}
