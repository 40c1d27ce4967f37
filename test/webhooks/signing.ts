/** Signing as Stripe does, with node:crypto (no vitest here: the crash test's server process imports it). */
import { createHmac } from 'node:crypto';

/** The Stripe test secret every test signs with. */
export const STRIPE_SECRET = 'whsec_test_5f3c1a9e7d2b4c6a8e0f';

/** A `Stripe-Signature` header computed as Stripe documents it: HMAC-SHA256 of `${t}.${body}`, hex. */
export function stripeSignature(body: string | Buffer, secret = STRIPE_SECRET, atMs = Date.now()): string {
  const t = Math.floor(atMs / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return `t=${t},v1=${v1}`;
}
