/**
 * webhooks/verifiers/: signature checks over the exact received bytes, one per scheme, behind one small
 * contract ({@link WebhookVerifier}). Verifiers only verify: they never parse the body.
 */
export type { VerifiedWebhook, WebhookHeaders, WebhookScheme, WebhookVerifier } from './types.js';
export { DEFAULT_TOLERANCE_MS } from './shared.js';
export { standardWebhooksVerifier, type StandardWebhooksVerifierOptions } from './standard-webhooks.js';
export { stripeVerifier, type StripeVerifierOptions } from './stripe.js';
export { githubVerifier, type GithubVerifierOptions } from './github.js';
export {
  hmacVerifier,
  type HmacAlgorithm,
  type HmacVerifierOptions,
  type SignatureEncoding,
} from './hmac.js';
export {
  githubSignatureHeader,
  hmacSignatureHeader,
  signStandardWebhook,
  stripeSignatureHeader,
} from './sign.js';
