import { Webhook } from 'standardwebhooks';
import { defineOptions } from '../../core/index.js';
import {
  anyHmacMatches,
  checkTimestamp,
  decodeBase64,
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

/** Options of {@link standardWebhooksVerifier}; validated at construction. */
export interface StandardWebhooksVerifierOptions {
  /**
   * `whsec_` + base64 secrets (at least one; the current one first, then older ones still accepted during
   * rotation), each {@link MIN_SECRET_BYTES} to {@link MAX_SECRET_BYTES} bytes once decoded. The prefix is
   * required here although the library would take a bare base64 key: a secret pasted without it is more
   * likely a secret from another scheme than a Standard Webhooks one. Refused at construction (RangeError
   * naming the source and the entry, never echoing the secret): no prefix, not base64, a length outside the
   * spec's (a truncated paste, which would otherwise fail every delivery with 401), or a signature's `v1,`
   * pasted in front.
   */
  secrets: readonly string[];
  /** Accepted distance between `webhook-timestamp` and now, either way, in ms (default 300 000, > 0). */
  toleranceMs?: number;
  /** The webhook source's name, shown in startup errors and set as `BreakwaterError.source` on rejections. */
  source?: string;
}

const FACTORY = 'standardWebhooksVerifier';
const SECRET_PREFIX = 'whsec_';
/**
 * Shortest and longest symmetric signing secret, in bytes after base64 decoding. Standard Webhooks 1.0.0
 * (spec/standard-webhooks.md, "Signature scheme", the table's "Signing secret" row for `HMAC-SHA256`):
 * "Random. At least 24 bytes (192 bits, 512 maximum)", the maximum in bits, so 64 bytes.
 */
const MIN_SECRET_BYTES = 24;
/** See {@link MIN_SECRET_BYTES}. */
const MAX_SECRET_BYTES = 64;
/** A signature's version prefix (`v1,` for HMAC, `v1a,` for ed25519), as a stray paste may bring along. */
const SIGNATURE_PREFIX = /^v1a?,/;
/** HMAC-SHA256 digest size; `v1` signatures are its base64. */
const V1_BYTES = 32;

/** Checks {@link StandardWebhooksVerifierOptions}; the secrets become their decoded keys. */
const SHAPE = {
  secrets: secretsSchema(`a '${SECRET_PREFIX}' base64 secret`, parseSecret),
  toleranceMs: TOLERANCE_SCHEMA,
  source: SOURCE_SCHEMA,
};

/**
 * Verifies Standard Webhooks (standardwebhooks.com, "Verifying webhooks"): `webhook-signature` is a
 * space-separated list of `<version>,<base64>`; a `v1` entry is HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}` keyed with the base64-decoded secret. Any `v1` entry matching
 * any secret passes; other versions (`v1a`, asymmetric) are skipped, as the official library does.
 *
 * Returns `{ eventId: webhook-id, timestampMs }`. The id is covered by the signature, so it is a sound
 * deduplication key.
 *
 * What the official `standardwebhooks` library does here, and why its `verify` is not on the hot path:
 * - Secrets: each one is handed to the library's `Webhook` constructor at startup, so a secret the official
 *   library rejects (not base64, empty) is a startup error here.
 * - Its `verify` reads `Date.now()` for the tolerance, so it cannot honour the caller's clock (a FakeClock in
 *   tests, our `nowMs` everywhere); it checks in whole seconds, while `toleranceMs` is checked in ms.
 * - Its `sign`/`verify` turn a Buffer into a string (`toString()`, UTF-8 with U+FFFD for invalid sequences)
 *   before hashing: for a body that is not valid UTF-8, different bytes would give the same signature, so
 *   what we stored would not be what was signed. The HMAC here is over the received bytes themselves. For
 *   every valid UTF-8 body both give the same signature (tested against the library's `sign`, including its
 *   own test vector).
 * - It `JSON.parse`s the body by default; a verifier never parses.
 * The timestamp is checked before the signature (as the library does), so a stale request costs no HMAC;
 * `stale_timestamp` therefore does not mean the signature was valid.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option and, with
 *   `source`, the source,
 *   a secret outside {@link MIN_SECRET_BYTES}..{@link MAX_SECRET_BYTES} bytes included.
 */
export function standardWebhooksVerifier(options: StandardWebhooksVerifierOptions): WebhookVerifier {
  const {
    secrets: keys,
    toleranceMs,
    source,
  } = defineOptions<StandardWebhooksVerifierOptions>()(verifierOwner(FACTORY, options), SHAPE)(options);
  const by: Rejecter = { scheme: 'standard-webhooks', source };

  return {
    scheme: 'standard-webhooks',
    verify(rawBody: Uint8Array, headers: WebhookHeaders, nowMs: number): VerifiedWebhook {
      const signature = readHeader(by, headers, 'webhook-signature');
      const id = readHeader(by, headers, 'webhook-id');
      const timestamp = readHeader(by, headers, 'webhook-timestamp');
      if (signature === undefined || signature === '') {
        throw invalidSignature(by, 'missing_header', 'no signature header (webhook-signature)');
      }
      if (id === undefined || id === '') {
        throw invalidSignature(
          by,
          'missing_header',
          'no webhook-id header (it is part of the signed content)',
        );
      }
      if (timestamp === undefined || timestamp === '') {
        throw invalidSignature(by, 'missing_header', 'no webhook-timestamp header');
      }
      const timestampMs = parseUnixSeconds(timestamp);
      if (timestampMs === undefined) {
        throw invalidSignature(
          by,
          'malformed_header',
          'malformed webhook-timestamp header: not unix seconds',
        );
      }
      const candidates = parseSignatures(by, signature);
      checkTimestamp(by, timestampMs, nowMs, toleranceMs);
      if (!anyHmacMatches('sha256', keys, `${id}.${timestamp}.`, rawBody, candidates)) {
        throw invalidSignature(by, 'no_match', 'no signature matches');
      }
      return { eventId: id, timestampMs };
    },
  };
}

/** The decoded `v1` signatures of a `webhook-signature` value; malformed unless there is at least one. */
function parseSignatures(by: Rejecter, header: string): Buffer[] {
  const found: Buffer[] = [];
  for (const entry of header.split(' ')) {
    if (entry === '') continue; // tolerate doubled spaces
    const comma = entry.indexOf(',');
    if (comma <= 0) {
      throw invalidSignature(
        by,
        'malformed_header',
        'malformed webhook-signature header: an entry is not <version>,<signature>',
      );
    }
    if (entry.slice(0, comma) !== 'v1') continue;
    const decoded = decodeBase64(entry.slice(comma + 1), V1_BYTES);
    if (decoded === undefined) {
      throw invalidSignature(
        by,
        'malformed_header',
        'malformed webhook-signature header: a v1 signature is not 32 bytes of base64',
      );
    }
    found.push(decoded);
  }
  if (found.length === 0) {
    throw invalidSignature(by, 'malformed_header', 'malformed webhook-signature header: no v1 signature');
  }
  return found;
}

/** The key bytes of a `whsec_` secret, or why it is not one (never quoting it: errors end up in logs). */
function parseSecret(secret: string): Buffer | string {
  const version = SIGNATURE_PREFIX.exec(secret)?.[0];
  if (version !== undefined) {
    // `v1,whsec_…` is a secret copied with the start of a signature header; `v1,<base64>` is a signature.
    return secret.startsWith(SECRET_PREFIX, version.length)
      ? `looks like a signature prefix '${version}' pasted in front of the secret: remove it`
      : `looks like a signature '${version}<base64>', not a secret`;
  }
  if (!secret.startsWith(SECRET_PREFIX)) return `no '${SECRET_PREFIX}' prefix`;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (encoded === '') return 'empty after the prefix';
  try {
    new Webhook(secret); // the official library's judgement of the secret
  } catch {
    return 'not base64';
  }
  // The library accepts a dangling last character (length % 4 === 1) and ignores it; so would Node: refuse.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1) {
    return 'not base64';
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    const spec = `the Standard Webhooks spec asks for ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES}`;
    return `${key.length} bytes after base64 decoding; ${spec}${key.length < MIN_SECRET_BYTES ? ': a truncated paste?' : ''}`;
  }
  return key;
}
