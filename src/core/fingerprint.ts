import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { BreakwaterError } from './errors.js';

// The package is CommonJS (`module.exports = fn`) but its typings declare an ES default export.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/**
 * The JSON Canonicalization Scheme form of `value` (RFC 8785): sorted keys, no whitespace, ECMAScript number
 * formatting. Equal data gives equal strings whatever the key order it was built in.
 *
 * @throws BreakwaterError `invalid_payload` when `value` has no JSON form (undefined, a function, a BigInt).
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (cause) {
    throw new BreakwaterError('invalid_payload', {
      message: 'The value cannot be serialized as JSON.',
      cause,
    });
  }
  if (text === undefined) {
    throw new BreakwaterError('invalid_payload', { message: 'The value cannot be serialized as JSON.' });
  }
  return text;
}

/** SHA-256 (FIPS 180-4) of the canonical JSON of `value`, as 64 lowercase hex characters. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
