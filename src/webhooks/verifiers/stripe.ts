import { defineOptions } from '../../core/index.js';
import {
  anyHmacMatches,
  checkTimestamp,
  decodeHex,
  invalidSignature,
  parseUnixSeconds,
  readHeader,
  SOURCE_SCHEMA,
  TOLERANCE_SCHEMA,
  secretsSchema,
  verifierOwner,
  type Rejecter,
} from './shared.js';
import type { VerifiedWebhook, WebhookHeaders, WebhookVerifier } from './types.js';

/** Options of {@link stripeVerifier}; validated at construction. */
export interface StripeVerifierOptions {
  /** Endpoint signing secrets `whsec_…` (at least one; several during rotation), used as keys as they are. */
  secrets: readonly string[];
  /** Accepted distance between the signed `t` and now, either way, in ms (default 300 000, > 0). */
  toleranceMs?: number;
  /** The webhook source's name, shown in startup errors and set as `BreakwaterError.source` on rejections. */
  source?: string;
}

const FACTORY = 'stripeVerifier';
const SECRET_PREFIX = 'whsec_';
const HEADER = 'stripe-signature';
/** HMAC-SHA256 digest size; `v1` signatures are its hex. */
const V1_BYTES = 32;

/** Checks {@link StripeVerifierOptions}; the secrets become the keys, used as they are. */
const SHAPE = {
  secrets: secretsSchema(`a '${SECRET_PREFIX}' signing secret`, (secret) =>
    !secret.startsWith(SECRET_PREFIX)
      ? `no '${SECRET_PREFIX}' prefix`
      : secret.length === SECRET_PREFIX.length
        ? 'empty after the prefix'
        : Buffer.from(secret, 'utf8'),
  ),
  toleranceMs: TOLERANCE_SCHEMA,
  source: SOURCE_SCHEMA,
};

/**
 * Verifies Stripe webhooks (Stripe docs, "Verify webhook signatures manually"): `Stripe-Signature:
 * t=<unix s>,v1=<hex>[,v1=<hex>…]`, each `v1` an HMAC-SHA256 hex digest of `${t}.${body}` keyed with the
 * whole secret string, `whsec_` included. Any `v1` matching any secret passes; other items (`v0`, future
 * schemes) are ignored, as Stripe's libraries do. Comparison is constant-time on equal-length digests.
 *
 * Returns `{ timestampMs }` only: Stripe sends no event id header; the event id is the body's `id` (signed,
 * so a sound deduplication key once the body is parsed).
 *
 * The timestamp is checked before the signature (a stale request costs no HMAC), so `stale_timestamp` does
 * not mean the signature was valid.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option and, with
 *   `source`, the source.
 */
export function stripeVerifier(options: StripeVerifierOptions): WebhookVerifier {
  const {
    secrets: keys,
    toleranceMs,
    source,
  } = defineOptions<StripeVerifierOptions>()(verifierOwner(FACTORY, options), SHAPE)(options);
  const by: Rejecter = { scheme: 'stripe', source };

  return {
    scheme: 'stripe',
    verify(rawBody: Uint8Array, headers: WebhookHeaders, nowMs: number): VerifiedWebhook {
      const header = readHeader(by, headers, HEADER);
      if (header === undefined || header === '') {
        throw invalidSignature(by, 'missing_header', `no signature header (${HEADER})`);
      }
      const { t, timestampMs, signatures } = parseHeader(by, header);
      checkTimestamp(by, timestampMs, nowMs, toleranceMs);
      if (!anyHmacMatches('sha256', keys, `${t}.`, rawBody, signatures)) {
        throw invalidSignature(by, 'no_match', 'no signature matches');
      }
      return { timestampMs };
    },
  };
}

/** `t` (canonical unix seconds) and the decoded `v1` signatures; malformed unless exactly one `t` and a `v1`. */
function parseHeader(by: Rejecter, header: string): { t: string; timestampMs: number; signatures: Buffer[] } {
  let t: string | undefined;
  let timestampMs: number | undefined;
  const signatures: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    const key = (eq < 0 ? item : item.slice(0, eq)).trim();
    const value = eq < 0 ? '' : item.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== undefined) throw malformed(by, 'more than one t=');
      timestampMs = parseUnixSeconds(value);
      if (timestampMs === undefined) throw malformed(by, 't= is not unix seconds');
      t = value;
    } else if (key === 'v1') {
      const decoded = decodeHex(value, V1_BYTES);
      if (decoded === undefined) throw malformed(by, 'a v1= signature is not 64 hex digits');
      signatures.push(decoded);
    }
  }
  if (t === undefined || timestampMs === undefined) throw malformed(by, 'no t= timestamp');
  if (signatures.length === 0) throw malformed(by, 'no v1= signature');
  return { t, timestampMs, signatures };
}

function malformed(by: Rejecter, what: string): Error {
  return invalidSignature(by, 'malformed_header', `malformed ${HEADER} header: ${what}`);
}
