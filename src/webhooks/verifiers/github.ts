import { defineOptions } from '../../core/index.js';
import {
  anyHmacMatches,
  decodeHex,
  invalidSignature,
  readHeader,
  SOURCE_SCHEMA,
  secretsSchema,
  verifierOwner,
  type Rejecter,
} from './shared.js';
import type { VerifiedWebhook, WebhookHeaders, WebhookVerifier } from './types.js';

/** Options of {@link githubVerifier}; validated at construction. */
export interface GithubVerifierOptions {
  /** Webhook secrets as set in GitHub (at least one; several during rotation), used as UTF-8 keys. */
  secrets: readonly string[];
  /** The webhook source's name, shown in startup errors and set as `BreakwaterError.source` on rejections. */
  source?: string;
}

const FACTORY = 'githubVerifier';
const HEADER = 'x-hub-signature-256';
const PREFIX = 'sha256=';
const SHA256_BYTES = 32;

/** Checks {@link GithubVerifierOptions}; the secrets become UTF-8 keys. */
const SHAPE = {
  secrets: secretsSchema('a webhook secret', (secret) => Buffer.from(secret, 'utf8')),
  source: SOURCE_SCHEMA,
};

/**
 * Verifies GitHub webhooks (GitHub docs, "Validating webhook deliveries"): `X-Hub-Signature-256:
 * sha256=<hex>` is HMAC-SHA256 of the body keyed with the secret. Only the SHA-256 header is accepted, never
 * the legacy SHA-1 `X-Hub-Signature`. GitHub signs no timestamp, so there is no tolerance to check.
 *
 * Returns `{ eventId: X-GitHub-Delivery }` (omitted when that header is absent). GitHub does not sign that
 * header: a captured delivery resent with a new delivery id still verifies, so deduplicate on something in
 * the body as well if replays matter.
 *
 * Why not `@octokit/webhooks-methods`' `verify` on the hot path: it takes the payload as a string and hashes
 * its UTF-8 encoding. Decoding the received bytes to a string replaces invalid UTF-8 with U+FFFD, so for such
 * a body different bytes would verify against one signature, and the bytes stored would not be the bytes
 * signed. Here the HMAC runs over the received bytes themselves, with a constant-time compare; for every
 * valid UTF-8 body the result is the same as octokit's (tested with octokit's `sign`, GitHub's documented
 * example, and GitHub's published example payloads). Octokit's `verify` is also async and throws a
 * `TypeError` on an empty body.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option and, with
 *   `source`, the source.
 */
export function githubVerifier(options: GithubVerifierOptions): WebhookVerifier {
  const { secrets: keys, source } = defineOptions<GithubVerifierOptions>()(
    verifierOwner(FACTORY, options),
    SHAPE,
  )(options);

  const by: Rejecter = { scheme: 'github', source };

  return {
    scheme: 'github',
    verify(rawBody: Uint8Array, headers: WebhookHeaders, _nowMs: number): VerifiedWebhook {
      const header = readHeader(by, headers, HEADER);
      if (header === undefined || header === '') {
        throw invalidSignature(by, 'missing_header', `no signature header (${HEADER})`);
      }
      const signature = header.startsWith(PREFIX)
        ? decodeHex(header.slice(PREFIX.length), SHA256_BYTES)
        : undefined;
      if (signature === undefined) {
        throw invalidSignature(
          by,
          'malformed_header',
          `malformed ${HEADER} header: not ${PREFIX}<64 hex digits>`,
        );
      }
      const delivery = readHeader(by, headers, 'x-github-delivery');
      if (!anyHmacMatches('sha256', keys, '', rawBody, [signature])) {
        throw invalidSignature(by, 'no_match', 'no signature matches');
      }
      return delivery === undefined || delivery === '' ? {} : { eventId: delivery };
    },
  };
}
