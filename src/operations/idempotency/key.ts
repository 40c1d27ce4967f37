/**
 * Reading the `Idempotency-Key` request header (IETF httpapi draft, draft-ietf-httpapi-idempotency-key-header,
 * section 2: "an Item Structured Header [RFC 8941] whose value MUST be a String").
 */
import { BreakwaterError } from '../../core/index.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../store/index.js';

/** The header's name, lowercase as Node delivers it. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** The header a replayed response carries (`Idempotent-Replayed: true`, as Stripe and the GiftGenius shop send it). */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

/**
 * The key a request carries, from the header's value(s) as Node gives them (`request.headers[…]`, or every
 * line of it from the raw headers).
 *
 * Accepted forms, after trimming spaces and tabs around the value (RFC 8941, section 4.2):
 * - the draft's form, an RFC 8941 sf-string: `"abc"`, with `\"` and `\\` as its only escapes and printable
 *   ASCII (0x20–0x7E) inside;
 * - the bare form many clients send (`abc`, a UUID, a Stripe-style key): visible ASCII (0x21–0x7E) without
 *   `"`, `,` or `;`, so a comma-joined list or structured-field parameters are never mistaken for one key.
 *
 * The key is the decoded string: `"abc"` and `abc` are the same key.
 *
 * @param value undefined (header absent), one string, or one per header line.
 * @returns the key, or undefined when the header is absent.
 * @throws BreakwaterError `idempotency_key_invalid` (400) when the header is sent more than once (several
 *   lines, or a comma-separated list in one line), or its value is empty, longer than
 *   {@link MAX_IDEMPOTENCY_KEY_LENGTH} (255) characters, or not one of the forms above.
 */
export function parseIdempotencyKey(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    if (value.length === 0) return undefined;
    if (value.length > 1)
      throw invalidKey('The Idempotency-Key header was sent more than once; send it once.');
    return parseIdempotencyKey(value[0]);
  }
  const text = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (text === '')
    throw invalidKey('The Idempotency-Key header is empty; send a key of 1 to 255 characters.');
  const key = text.startsWith('"') ? parseSfString(text) : parseBare(text);
  if (key.length === 0) {
    throw invalidKey('The Idempotency-Key header is empty; send a key of 1 to 255 characters.');
  }
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalidKey(
      `The Idempotency-Key is ${key.length} characters long; at most ${MAX_IDEMPOTENCY_KEY_LENGTH} are allowed.`,
    );
  }
  return key;
}

/** RFC 8941, section 4.2.5 (Parsing a String), then nothing may follow the closing quote (section 4.2). */
function parseSfString(text: string): string {
  let key = '';
  for (let i = 1; i < text.length; i++) {
    const char = text[i]!;
    const code = char.charCodeAt(0);
    if (char === '\\') {
      const next = text[i + 1];
      if (next !== '"' && next !== '\\') {
        throw invalidKey('The quoted Idempotency-Key has a backslash that escapes neither " nor \\.');
      }
      key += next;
      i++;
    } else if (char === '"') {
      if (i !== text.length - 1) {
        throw invalidKey(
          'The Idempotency-Key header holds more than one quoted string, or something after it; send one key.',
        );
      }
      return key;
    } else if (code < 0x20 || code > 0x7e) {
      throw invalidKey('The quoted Idempotency-Key may hold only printable ASCII characters.');
    } else {
      key += char;
    }
  }
  throw invalidKey('The quoted Idempotency-Key has no closing quote.');
}

function parseBare(text: string): string {
  if (text.includes(',')) {
    throw invalidKey('The Idempotency-Key header was sent more than once; send it once.');
  }
  if (!/^[\x21\x23-\x2b\x2d-\x3a\x3c-\x7e]+$/.test(text)) {
    throw invalidKey(
      'The Idempotency-Key may hold only visible ASCII characters without spaces, quotes or semicolons; quote it as "…" to send spaces.',
    );
  }
  return text;
}

function invalidKey(message: string): BreakwaterError {
  return new BreakwaterError('idempotency_key_invalid', { message });
}
