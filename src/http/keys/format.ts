/**
 * The API key's text form: `bw_<id>_<secret>`, where `<id>` is 16 lowercase hex digits (8 random bytes; not
 * secret: listed by `breakwater keys list`, and the key's principal is `key:<id>`) and `<secret>` is 43
 * characters of base64url, 32 random bytes (256 bits) from the system's CSPRNG. 63 characters in all. The
 * fixed `bw_` prefix and shape let secret scanners (GitHub push protection, gitleaks, trufflehog) recognise a
 * leaked key with the pattern `\bbw_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\b`.
 *
 * At rest only the SHA-256 of the secret part is kept. A fast hash is enough (and a slow one would only cost
 * every request): the secret is 256 random bits, so there is no dictionary to try, unlike a password.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The prefix every Breakwater API key starts with. */
export const API_KEY_PREFIX = 'bw_';

/** A whole key, for scanners and for checks: prefix, 16 hex digits, `_`, 43 base64url characters. */
export const API_KEY_PATTERN = /^bw_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Length of a key, characters. */
export const API_KEY_LENGTH = 63;

/** A new key: its text (shown once), its id, and the hash to store. */
export interface GeneratedKey {
  key: string;
  id: string;
  /** SHA-256 of the secret part, 64 lowercase hex digits. */
  hash: string;
}

/** Makes a key from fresh random bytes. */
export function generateKey(): GeneratedKey {
  const id = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { key: `${API_KEY_PREFIX}${id}_${secret}`, id, hash: hashSecret(secret).toString('hex') };
}

/** The id and secret of a presented key, or undefined when it does not have a key's shape. */
export function parseKey(presented: unknown): { id: string; secret: string } | undefined {
  if (typeof presented !== 'string' || presented.length !== API_KEY_LENGTH) return undefined;
  const match = API_KEY_PATTERN.exec(presented);
  return match === null ? undefined : { id: match[1]!, secret: match[2]! };
}

/** SHA-256 of a key's secret part (32 bytes). */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}
