import { defineOptions, o } from '../../core/index.js';
import {
  DIGEST_BYTES,
  anyHmacMatches,
  checkTimestamp,
  decodeBase64,
  decodeHex,
  invalidSignature,
  parseUnixSeconds,
  readHeader,
  SOURCE_SCHEMA,
  TOLERANCE_SCHEMA,
  secretsSchema,
  verifierOwner,
  type HmacAlgorithm,
  type Rejecter,
} from './shared.js';
import type { VerifiedWebhook, WebhookHeaders, WebhookVerifier } from './types.js';

export type { HmacAlgorithm };

/** How the generic verifier's signature is written in its header. */
export type SignatureEncoding = 'hex' | 'base64';

/** Options of {@link hmacVerifier}; validated at construction. */
export interface HmacVerifierOptions {
  /** Shared secrets (at least one; several during rotation), used as UTF-8 keys as they are. */
  secrets: readonly string[];
  /** The header carrying the signature (any case; required). */
  header: string;
  /** Default `sha256`. */
  algorithm?: HmacAlgorithm;
  /** Default `hex` (either case accepted); `base64` is the standard alphabet, padding optional. */
  encoding?: SignatureEncoding;
  /** Text before the signature in the header, e.g. `sha256=`; required when set. */
  prefix?: string;
  /**
   * A header carrying the signing time in unix seconds. When set, the signed content is `${ts}.${body}` and
   * the timestamp is checked against `toleranceMs`; when not, the body alone is signed and nothing limits
   * replays.
   */
  timestampHeader?: string;
  /** With `timestampHeader` only: accepted distance from now, either way, in ms (default 300 000, > 0). */
  toleranceMs?: number;
  /** A header carrying the event id, returned as `eventId`. Not covered by the signature. */
  eventIdHeader?: string;
  /** The webhook source's name, shown in startup errors and set as `BreakwaterError.source` on rejections. */
  source?: string;
}

const FACTORY = 'hmacVerifier';
const ALGORITHMS: readonly HmacAlgorithm[] = ['sha256', 'sha1', 'sha512'];
const ENCODINGS: readonly SignatureEncoding[] = ['hex', 'base64'];
const HEADER_NAME = o.string().min(1);

/** Checks {@link HmacVerifierOptions}; header names become lower case after. */
const SHAPE = {
  secrets: secretsSchema('a shared secret', (secret) => Buffer.from(secret, 'utf8')),
  header: HEADER_NAME,
  algorithm: o.enum(ALGORITHMS).default('sha256'),
  encoding: o.enum(ENCODINGS).default('hex'),
  prefix: o.string().min(1).optional(),
  timestampHeader: HEADER_NAME.optional(),
  toleranceMs: TOLERANCE_SCHEMA,
  eventIdHeader: HEADER_NAME.optional(),
  source: SOURCE_SCHEMA,
};

/**
 * Verifies a provider's own HMAC scheme: header `header` holds `${prefix}${encode(HMAC(secret, content))}`
 * where content is the body, or `${timestamp}.${body}` with `timestampHeader`. One signature per header.
 *
 * Returns `{ eventId?, timestampMs? }`: `eventId` from `eventIdHeader` when configured and present;
 * `timestampMs` when `timestampHeader` is configured (then required on every request).
 *
 * The timestamp is checked before the signature (a stale request costs no HMAC), so `stale_timestamp` does
 * not mean the signature was valid.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option and, with
 *   `source`, the source.
 */
export function hmacVerifier(options: HmacVerifierOptions): WebhookVerifier {
  const parsed = defineOptions<HmacVerifierOptions>()(
    verifierOwner(FACTORY, options),
    SHAPE,
    (_parsed, report, input) => {
      if (input.timestampHeader === undefined && input.toleranceMs !== undefined) {
        report(
          'toleranceMs',
          'left out without timestampHeader (without one nothing is timed)',
          input.toleranceMs,
        );
      }
    },
  )(options);
  const { secrets: keys, algorithm, encoding, toleranceMs, source } = parsed;
  const header = parsed.header.toLowerCase();
  const prefix = parsed.prefix ?? '';
  const timestampHeader = parsed.timestampHeader?.toLowerCase();
  const eventIdHeader = parsed.eventIdHeader?.toLowerCase();
  const bytes = DIGEST_BYTES[algorithm];
  const decode = encoding === 'hex' ? decodeHex : decodeBase64;
  const shape = `${prefix}<${bytes} bytes of ${encoding}>`;
  const by: Rejecter = { scheme: 'hmac', source };

  return {
    scheme: 'hmac',
    verify(rawBody: Uint8Array, headers: WebhookHeaders, nowMs: number): VerifiedWebhook {
      const value = readHeader(by, headers, header);
      if (value === undefined || value === '') {
        throw invalidSignature(by, 'missing_header', `no signature header (${header})`);
      }
      const signature = value.startsWith(prefix) ? decode(value.slice(prefix.length), bytes) : undefined;
      if (signature === undefined) {
        throw invalidSignature(by, 'malformed_header', `malformed ${header} header: not ${shape}`);
      }
      let signed = '';
      let timestampMs: number | undefined;
      if (timestampHeader !== undefined) {
        const timestamp = readHeader(by, headers, timestampHeader);
        if (timestamp === undefined || timestamp === '') {
          throw invalidSignature(by, 'missing_header', `no ${timestampHeader} header`);
        }
        timestampMs = parseUnixSeconds(timestamp);
        if (timestampMs === undefined) {
          throw invalidSignature(
            by,
            'malformed_header',
            `malformed ${timestampHeader} header: not unix seconds`,
          );
        }
        checkTimestamp(by, timestampMs, nowMs, toleranceMs);
        signed = `${timestamp}.`;
      }
      const eventId = eventIdHeader === undefined ? undefined : readHeader(by, headers, eventIdHeader);
      if (!anyHmacMatches(algorithm, keys, signed, rawBody, [signature])) {
        throw invalidSignature(by, 'no_match', 'no signature matches');
      }
      if (eventId === undefined || eventId === '') return timestampMs === undefined ? {} : { timestampMs };
      return timestampMs === undefined ? { eventId } : { eventId, timestampMs };
    },
  };
}
