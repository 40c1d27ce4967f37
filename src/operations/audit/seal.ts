/**
 * The bytes of an audit record: its body (canonical JSON) and its hash (a SHA-256 chain, HMAC-keyed when a
 * key is configured). Written once here, read by the writer and by `verifyAudit`.
 */
import { createHash, createHmac } from 'node:crypto';
import { invalidOption } from '../../core/index.js';

/** The body's format version. */
export const AUDIT_BODY_VERSION = 1;

/** Smallest HMAC key, bytes (128 bits; NIST SP 800-107 asks a key as strong as the security it gives). */
export const MIN_AUDIT_HMAC_KEY_BYTES = 16;

/** An HMAC key: bytes, or a string taken as its UTF-8 bytes. */
export type AuditHmacKey = string | Uint8Array;

/**
 * A record's body once parsed: what happened, to what, by whom, when. `at` is ms since the epoch;
 * `operation_id` and `correlation_id` are null when the entry had none; `data` is redacted (never a secret).
 * It is stored as its canonical JSON (RFC 8785, core's `canonicalJson`), so one entry has exactly one text.
 */
export interface AuditBody {
  v: 1;
  seq: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  operation_id: string | null;
  correlation_id: string | null;
  data: unknown;
}

/**
 * A record's hash: lowercase hex (64 characters) of SHA-256 over the bytes `prevHash ‖ body`, both UTF-8
 * (`prevHash` is the previous record's 64-character hash, or 64 zeros for the first; being of fixed length,
 * no separator is needed), or of HMAC-SHA-256 (RFC 2104) keyed with `hmacKey` over the same bytes. Covering
 * `prevHash` chains the records: editing one changes every later hash.
 */
export function auditHash(prevHash: string, body: string, hmacKey?: Uint8Array): string {
  const digest = hmacKey === undefined ? createHash('sha256') : createHmac('sha256', hmacKey);
  return digest.update(prevHash, 'utf8').update(body, 'utf8').digest('hex');
}

/**
 * A checked HMAC key as bytes, or undefined when none is given.
 * @throws RangeError naming `owner` for a key that is not a string or bytes, or is shorter than
 *   {@link MIN_AUDIT_HMAC_KEY_BYTES} (16) bytes.
 */
export function hmacKeyBytes(owner: string, key: AuditHmacKey | undefined): Uint8Array | undefined {
  if (key === undefined) return undefined;
  const bytes =
    typeof key === 'string'
      ? Buffer.from(key, 'utf8')
      : key instanceof Uint8Array
        ? Buffer.from(key)
        : undefined;
  if (bytes === undefined || bytes.length < MIN_AUDIT_HMAC_KEY_BYTES) {
    throw invalidOption(
      owner,
      'hmacKey',
      `a string or bytes of at least ${MIN_AUDIT_HMAC_KEY_BYTES} bytes`,
      typeof key === 'string' ? `${key.length} characters` : key,
    );
  }
  return bytes;
}
