import { createHmac } from 'node:crypto';
import type { HmacAlgorithm } from './shared.js';
import type { SignatureEncoding } from './hmac.js';

/**
 * The sending side of each scheme, for senders we run ourselves (the GiftGenius commerce service), tests and
 * benchmarks. Bodies are signed as bytes (a string body as its UTF-8). These do not validate secrets: the
 * verifiers do that at startup.
 */

type Body = Uint8Array | string;

function hmac(algorithm: HmacAlgorithm, key: Uint8Array | string, prefix: string, body: Body): Buffer {
  const h = createHmac(algorithm, key);
  if (prefix !== '') h.update(prefix, 'latin1');
  return h.update(body).digest();
}

function unixSeconds(ms: number): string {
  return String(Math.floor(ms / 1000));
}

/**
 * The three Standard Webhooks headers for `body`, signed `v1` with a `whsec_` base64 secret (the prefix is
 * optional here, as in the official library). `timestampMs` is truncated to whole seconds.
 */
export function signStandardWebhook(
  secret: string,
  id: string,
  timestampMs: number,
  body: Body,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const ts = unixSeconds(timestampMs);
  const signature = hmac('sha256', key, `${id}.${ts}.`, body).toString('base64');
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${signature}` };
}

/** A `Stripe-Signature` value `t=<unix s>,v1=<hex>` for `body`, keyed with the whole `whsec_…` string. */
export function stripeSignatureHeader(secret: string, timestampMs: number, body: Body): string {
  const t = unixSeconds(timestampMs);
  return `t=${t},v1=${hmac('sha256', secret, `${t}.`, body).toString('hex')}`;
}

/** An `X-Hub-Signature-256` value `sha256=<hex>` for `body`. */
export function githubSignatureHeader(secret: string, body: Body): string {
  return `sha256=${hmac('sha256', secret, '', body).toString('hex')}`;
}

/**
 * The generic verifier's signature header value: `${prefix}${encode(HMAC(secret, content))}`, content being
 * `${unix s}.${body}` when `timestampMs` is given (send the same seconds in the timestamp header), else the
 * body. Defaults: `sha256`, `hex`, no prefix.
 */
export function hmacSignatureHeader(
  options: {
    secret: string;
    algorithm?: HmacAlgorithm;
    encoding?: SignatureEncoding;
    prefix?: string;
    timestampMs?: number;
  },
  body: Body,
): string {
  const { secret, algorithm = 'sha256', encoding = 'hex', prefix = '', timestampMs } = options;
  const signed = timestampMs === undefined ? '' : `${unixSeconds(timestampMs)}.`;
  return `${prefix}${hmac(algorithm, secret, signed, body).toString(encoding)}`;
}
