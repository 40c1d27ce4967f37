import { createHmac, timingSafeEqual } from 'node:crypto';
import { BreakwaterError, Redacted, Schema, o } from '../../core/index.js';
import type { WebhookHeaders, WebhookScheme } from './types.js';

/** Plumbing shared by the verifiers: header reading, rejections, timestamps, secret checks, matching. */

/** Default timestamp tolerance, both ways (docs/architecture.md#defaults: 300 s). */
export const DEFAULT_TOLERANCE_MS = 300_000;

/** The HMAC digests the generic verifier offers, with their digest sizes in bytes. */
export const DIGEST_BYTES = { sha1: 20, sha256: 32, sha512: 64 } as const;
export type HmacAlgorithm = keyof typeof DIGEST_BYTES;

/** Who is rejecting: the scheme (in `details`) and the webhook source (as `BreakwaterError.source`). */
export interface Rejecter {
  readonly scheme: WebhookScheme;
  readonly source: string | undefined;
}

export type SignatureProblem = 'missing_header' | 'malformed_header' | 'no_match';

/** An `invalid_signature` rejection; `message` says what is wrong, never what was expected. */
export function invalidSignature(by: Rejecter, reason: SignatureProblem, message: string): BreakwaterError {
  return BreakwaterError.withoutStack('invalid_signature', {
    message,
    source: by.source,
    details: { scheme: by.scheme, reason },
  });
}

/**
 * The value of header `name` (lowercase). Undefined when absent; a header sent more than once (an array) is
 * malformed rather than guessed at: which copy was signed is unknowable.
 */
export function readHeader(by: Rejecter, headers: WebhookHeaders, name: string): string | undefined {
  let value = headers[name];
  if (value === undefined) {
    for (const key in headers) {
      if (key.toLowerCase() === name) {
        value = headers[key];
        break;
      }
    }
  }
  if (value === undefined || typeof value === 'string') return value;
  if (value.length === 1) return value[0];
  if (value.length === 0) return undefined;
  throw invalidSignature(by, 'malformed_header', `malformed ${name} header: sent more than once`);
}

/** Unix seconds in canonical decimal (no sign, no leading zeros), at most 12 digits so `× 1000` stays exact. */
const UNIX_SECONDS = /^(?:0|[1-9][0-9]{0,11})$/;

/** The ms of a unix-seconds timestamp, or undefined when `value` is not one. */
export function parseUnixSeconds(value: string): number | undefined {
  return UNIX_SECONDS.test(value) ? Number(value) * 1000 : undefined;
}

/**
 * Passes when the signed time is within `toleranceMs` of `nowMs` either way (exactly at the limit passes):
 * an old timestamp is a replay, one from the future a sender clock we should not trust.
 * @throws BreakwaterError `stale_timestamp` with `details` `{ timestamp_ms, now_ms, tolerance_ms }`.
 */
export function checkTimestamp(by: Rejecter, timestampMs: number, nowMs: number, toleranceMs: number): void {
  const skew = nowMs - timestampMs;
  if (skew <= toleranceMs && skew >= -toleranceMs) return;
  throw BreakwaterError.withoutStack('stale_timestamp', {
    message:
      `the signed timestamp is ${Math.abs(skew)} ms in the ${skew > 0 ? 'past' : 'future'}; ` +
      `the tolerance is ${toleranceMs} ms either way`,
    source: by.source,
    details: { scheme: by.scheme, timestamp_ms: timestampMs, now_ms: nowMs, tolerance_ms: toleranceMs },
  });
}

/**
 * True when any candidate equals the HMAC of `prefix` then `body` under any key. Candidates must already
 * have the digest's length (the parsers check), so each comparison is a constant-time `timingSafeEqual`.
 * Keys are tried in order and each digest is computed once: with the current secret first, the common case
 * is one HMAC. `prefix` is header-derived text, encoded as latin1 because that is how Node decoded the
 * header bytes, so the bytes hashed are the bytes the sender put on the wire.
 */
export function anyHmacMatches(
  algorithm: HmacAlgorithm,
  keys: readonly Buffer[],
  prefix: string,
  body: Uint8Array,
  candidates: readonly Buffer[],
): boolean {
  for (const key of keys) {
    const hmac = createHmac(algorithm, key);
    if (prefix.length > 0) hmac.update(prefix, 'latin1');
    const digest = hmac.update(body).digest();
    for (const candidate of candidates) {
      if (timingSafeEqual(digest, candidate)) return true;
    }
  }
  return false;
}

const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** `text` as `bytes` bytes of hex (either case), or undefined when it is not exactly that. */
export function decodeHex(text: string, bytes: number): Buffer | undefined {
  return text.length === bytes * 2 && HEX.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/**
 * `text` as `bytes` bytes of standard base64 (padding optional), or undefined when it is not exactly that.
 * Node's decoder skips characters outside the alphabet, so the alphabet is checked first.
 */
export function decodeBase64(text: string, bytes: number): Buffer | undefined {
  const padded = Math.ceil(bytes / 3) * 4;
  if (text.length !== padded && text.length !== Math.ceil((bytes * 4) / 3)) return undefined;
  if (!BASE64.test(text)) return undefined;
  const decoded = Buffer.from(text, 'base64');
  return decoded.length === bytes ? decoded : undefined;
}

/**
 * The owner named in option errors: the factory as users call it, plus the webhook source when given, so a
 * startup error says which source is misconfigured.
 */
export function ownerName(factory: string, source: string | undefined): string {
  return source === undefined ? factory : `${factory} (source '${source}')`;
}

/**
 * The owner of a verifier's option errors: {@link ownerName} with the `source` option when it is a usable
 * one (a bad `source` is itself reported, under the factory's name alone).
 */
export function verifierOwner(factory: string, options: unknown): string {
  const source: unknown = (options as { source?: unknown } | null | undefined)?.source;
  return ownerName(factory, typeof source === 'string' && source.length > 0 ? source : undefined);
}

/** The `source` option of every verifier. */
export const SOURCE_SCHEMA = o
  .custom<string>((v) => typeof v === 'string' && v.length > 0, 'a non-empty string or left out')
  .optional();

/** `toleranceMs` (> 0 ms, finite), default {@link DEFAULT_TOLERANCE_MS}. */
export const TOLERANCE_SCHEMA = o.number().positive().default(DEFAULT_TOLERANCE_MS);

/**
 * A `secrets` option: a non-empty array whose every entry `parse` accepts; gives the key bytes. `parse`
 * returns the key bytes, or the reason the entry is wrong. Problems never hold or show a secret: at most its
 * first 4 characters (and fewer than half of a short one), because startup errors end up in logs; a value
 * that is not a string is described by its kind. Each bad entry is its own problem:
 * `secrets[1] must be ${rule}, got 'whse…' (${reason})`.
 */
export function secretsSchema(
  rule: string,
  parse: (secret: string) => Buffer | string,
): Schema<Buffer[], readonly string[]> {
  return new Schema((value, option, problems) => {
    if (!Array.isArray(value) || value.length === 0) {
      problems.push({
        option,
        rule: 'a non-empty array of secrets (several for rotation)',
        value: new Redacted(kindOf(value)),
      });
      return [];
    }
    const keys: Buffer[] = [];
    value.forEach((secret: unknown, i) => {
      const entry = `${option}[${i}]`;
      if (typeof secret !== 'string') {
        problems.push({ option: entry, rule, value: new Redacted(kindOf(secret)) });
        return;
      }
      let reason: string;
      if (secret.length === 0) reason = 'empty';
      else if (secret.trim() !== secret) reason = 'leading or trailing whitespace; a pasted newline?';
      else {
        const parsed = parse(secret);
        if (typeof parsed !== 'string') return void keys.push(parsed);
        reason = parsed;
      }
      problems.push({ option: entry, rule, value: new Redacted(`${redact(secret)} (${reason})`) });
    });
    return keys;
  });
}

/** A secret as an error may show it: quoted, at most 4 leading characters and never all of it. */
export function redact(secret: string): string {
  const shown = secret.slice(0, Math.min(4, Math.floor(secret.length / 2)));
  return `'${shown}…'`;
}

/** A value's kind for an error message, without its content (it may be a secret). */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : `an array of ${value.length}`;
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return value.length === 0 ? "''" : 'a string';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
