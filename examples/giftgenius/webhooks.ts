/**
 * GiftGenius's payment webhooks: the commerce platform (Stripe-style) tells the gateway when a payment
 * succeeded or failed, at `POST /webhooks/payments`, signed with the endpoint secret
 * (`GIFTGENIUS_WEBHOOK_SECRET`). Breakwater verifies, deduplicates and stores each event before answering;
 * the handlers then run as jobs, one order's events one at a time, and record the outcome with the commerce
 * service, idempotently by event id.
 */
import { z } from 'zod';
import { BreakwaterError, isBreakwaterError } from '../../src/entries/index.js';
import { type Upstream } from '../../src/entries/upstream.js';
import {
  defineWebhookSource,
  onWebhook,
  stripeSignatureHeader,
  stripeVerifier,
  type WebhookDeclarations,
} from '../../src/entries/webhooks.js';

/** The demo's endpoint secret when `GIFTGENIUS_WEBHOOK_SECRET` is unset: printed at startup, never for production. */
export const DEMO_WEBHOOK_SECRET = 'whsec_giftgenius_demo_only_8f2d41c7';

/** A payment intent event as the platform sends it (amounts in cents, Stripe style). */
const paymentEvent = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  created: z.number().int(),
  data: z.object({
    object: z.object({
      id: z.string().min(1),
      amount: z.number().int().nonnegative(),
      currency: z.string().min(1),
      last_payment_error: z.object({ message: z.string() }).nullish(),
      metadata: z.object({ order_id: z.string().min(1), customer_id: z.string().min(1) }),
    }),
  }),
});

export type PaymentEvent = z.infer<typeof paymentEvent>;

/** What a payment handler answers (the job's result). */
export interface PaymentMark {
  order_id: string;
  payment: 'paid' | 'failed';
  payment_intent_id?: string;
  reason?: string;
}

/**
 * The `payments` source and its two handlers. `payment_intent.succeeded` records the payment with the
 * commerce service (`POST /payment_intents` for the order, Idempotency-Key = the event id, so a retried or
 * replayed run finds the record it already made); `payment_intent.payment_failed` checks the order exists and
 * reports the failure. Other types are stored and answered 200, with no handler.
 *
 * @throws RangeError at startup when the secret is malformed (no `whsec_` prefix).
 */
export function paymentWebhooks(commerce: Upstream, secret: string): WebhookDeclarations {
  const payments = defineWebhookSource<PaymentEvent>({
    name: 'payments',
    verifier: stripeVerifier({ secrets: [secret], source: 'payments' }),
    schema: paymentEvent,
    maxBodyBytes: 64 * 1024,
    // A sale's burst is absorbed; a runaway sender is told to come back later.
    rateLimit: { limit: 200, windowMs: 1_000 },
    maxBacklog: 10_000,
    orderingKey: (event) => `order:${event.data.object.metadata.order_id}`,
    concurrency: 3,
  });

  const succeeded = onWebhook<PaymentEvent>(
    payments,
    'payment_intent.succeeded',
    async ({ event, eventId, signal }): Promise<PaymentMark> => {
      const intent = event.data.object;
      const orderId = intent.metadata.order_id;
      const response = await resendable(() =>
        commerce.post<{ payment_intent_id: string }>(
          '/payment_intents',
          { amount_usd: intent.amount / 100, customer_id: intent.metadata.customer_id, order_id: orderId },
          { idempotencyKey: eventId, signal },
        ),
      );
      return { order_id: orderId, payment: 'paid', payment_intent_id: response.body.payment_intent_id };
    },
    { maxAttempts: 8 },
  );

  const failed = onWebhook<PaymentEvent>(
    payments,
    'payment_intent.payment_failed',
    async ({ event, signal }): Promise<PaymentMark> => {
      const intent = event.data.object;
      const orderId = intent.metadata.order_id;
      // An unknown order is a permanent failure (404): dead-lettered for a person to look at.
      await commerce.get(`/orders/${encodeURIComponent(orderId)}`, { signal });
      return {
        order_id: orderId,
        payment: 'failed',
        reason: intent.last_payment_error?.message ?? 'declined',
      };
    },
    { maxAttempts: 8 },
  );

  return { sources: [payments], handlers: [succeeded, failed] };
}

/**
 * A write sent with an Idempotency-Key may be sent again whatever happened to the last try: an unknown
 * outcome (the answer was lost) or the service saying the same key is still in progress becomes a transient
 * failure, so the job is retried with backoff instead of dead-lettered.
 */
async function resendable<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (isBreakwaterError(error) && (error.outcome === 'unknown' || error.status === 409)) {
      throw new BreakwaterError('upstream_unavailable', {
        message: 'The commerce service did not confirm the payment record; it is safe to send it again.',
        source: 'commerce',
        retryAfterMs: error.retryAfterMs,
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * A signed delivery of a payment event, as the platform would send it: the body and its headers. For the
 * demo (`examples/giftgenius/try.ts`-style scripts) and the tests.
 */
export function paymentDelivery(
  secret: string,
  event: {
    id: string;
    type: string;
    orderId: string;
    customerId: string;
    amountCents: number;
    createdMs?: number;
  },
  nowMs: number = Date.now(),
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: event.id,
    object: 'event',
    type: event.type,
    created: Math.floor((event.createdMs ?? nowMs) / 1000),
    data: {
      object: {
        id: `pi_${event.id}`,
        object: 'payment_intent',
        amount: event.amountCents,
        currency: 'usd',
        last_payment_error: event.type.endsWith('payment_failed')
          ? { message: 'Your card was declined.' }
          : null,
        metadata: { order_id: event.orderId, customer_id: event.customerId },
      },
    },
  });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripeSignatureHeader(secret, nowMs, body),
    },
  };
}
