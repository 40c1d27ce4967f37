/**
 * The `usage` of a non-streamed chat completion, read from the provider's raw bytes without parsing the
 * rest of the body. The gateway passes the body to the client as it came and only needs the token counts for
 * the cost, so decoding the whole body to a string and building its object tree (the answer's text, every
 * choice) was one copy and one tree per request for three numbers. A completion's body is mostly its text,
 * and the scan jumps over every string with the native `Buffer.indexOf`.
 */
import { readUsage } from '../stream/sse.js';
import type { Usage } from '../types.js';

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d;
/** "usage" */
const USAGE = [0x75, 0x73, 0x61, 0x67, 0x65];

/**
 * The top-level `usage` of a JSON object in `raw` (UTF-8), as `read` (default {@link readUsage}, chat's
 * usage) reads it: what `read(JSON.parse(raw.toString()).usage)` gives for any valid JSON text, the last `usage` member
 * winning as in `JSON.parse`. A `usage` nested deeper (in a choice, in a tool call) is not the completion's
 * and is skipped. Undefined when `raw` is not a JSON object (truncated, unbalanced, trailing bytes, a BOM)
 * or has no usable `usage`. Other members are skipped, not validated: a body that is broken only inside
 * them still yields its usage, where `JSON.parse` would have thrown.
 *
 * Never throws. Cost: one native search per string in the body, a byte loop over the rest (structure,
 * numbers), and one `JSON.parse` of the `usage` member alone.
 */
export function scanUsage(
  raw: Buffer,
  read: (value: unknown) => Usage | undefined = readUsage,
): Usage | undefined {
  const end = raw.length;
  let i = skipSpace(raw, 0);
  if (raw[i] !== OPEN_OBJECT) return undefined;
  i = skipSpace(raw, i + 1);
  let usageStart = -1;
  let usageEnd = -1;
  if (raw[i] === CLOSE_OBJECT) return undefined; // no members, so no usage
  for (;;) {
    if (raw[i] !== QUOTE) return undefined;
    const keyEnd = stringEnd(raw, i + 1);
    if (keyEnd < 0) return undefined;
    const isUsage = isUsageKey(raw, i + 1, keyEnd);
    i = skipSpace(raw, keyEnd + 1);
    if (raw[i] !== COLON) return undefined;
    i = skipSpace(raw, i + 1);
    const valueEnd = skipValue(raw, i);
    if (valueEnd < 0) return undefined;
    if (isUsage) {
      usageStart = i;
      usageEnd = valueEnd;
    }
    i = skipSpace(raw, valueEnd);
    if (raw[i] === COMMA) {
      i = skipSpace(raw, i + 1);
      continue;
    }
    if (raw[i] !== CLOSE_OBJECT) return undefined;
    break;
  }
  if (skipSpace(raw, i + 1) !== end || usageStart < 0) return undefined;
  try {
    return read(JSON.parse(raw.toString('utf8', usageStart, usageEnd)));
  } catch {
    return undefined;
  }
}

/** The index of the first byte at or after `i` that is not JSON whitespace (RFC 8259, section 2). */
function skipSpace(raw: Buffer, i: number): number {
  const end = raw.length;
  while (i < end && isSpace(raw[i]!)) i++;
  return i;
}

/** JSON whitespace: space, line feed, carriage return, tab (RFC 8259, section 2). */
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The index of the quote that closes the string whose content begins at `i`, or -1 when it never closes. */
function stringEnd(raw: Buffer, i: number): number {
  for (;;) {
    const quote = raw.indexOf(QUOTE, i);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (raw[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}

/**
 * Whether the key between `start` and `end` (its content, quotes excluded) means `usage`. A key spelled
 * with escapes (`"\u0075sage"`) is decoded, as `JSON.parse` would.
 */
function isUsageKey(raw: Buffer, start: number, end: number): boolean {
  for (let k = start; k < end; k++) {
    if (raw[k] !== BACKSLASH) continue;
    try {
      return JSON.parse(raw.toString('utf8', start - 1, end + 1)) === 'usage';
    } catch {
      return false;
    }
  }
  if (end - start !== USAGE.length) return false;
  for (let k = 0; k < USAGE.length; k++) if (raw[start + k] !== USAGE[k]) return false;
  return true;
}

/**
 * The index just after the JSON value that begins at `i`, or -1 when it does not end (or its brackets do not
 * match). Strings are jumped over; objects and arrays are followed to their matching close; a number or a
 * literal runs to the next delimiter.
 */
function skipValue(raw: Buffer, i: number): number {
  const end = raw.length;
  if (i >= end) return -1;
  const first = raw[i]!;
  if (first === QUOTE) {
    const close = stringEnd(raw, i + 1);
    return close < 0 ? -1 : close + 1;
  }
  if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
    const start = i;
    while (i < end) {
      const c = raw[i]!;
      if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isSpace(c)) break;
      if (c === QUOTE || c === OPEN_OBJECT || c === OPEN_ARRAY || c === COLON) return -1;
      i++;
    }
    return i === start ? -1 : i;
  }
  // A container: the closers still expected, innermost last, as bits of one number while they fit (an
  // object is 1, an array 0), so nesting up to 52 levels makes no array.
  let depth = 0;
  let closers = 0;
  let deep: number[] | undefined;
  while (i < end) {
    const c = raw[i]!;
    if (c === QUOTE) {
      const close = stringEnd(raw, i + 1);
      if (close < 0) return -1;
      i = close + 1;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const bit = c === OPEN_OBJECT ? 1 : 0;
      if (depth < 52) closers = closers * 2 + bit;
      else (deep ??= []).push(bit);
      depth++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 0) return -1;
      depth--;
      const bit = depth < 52 ? closers % 2 : deep!.pop()!;
      if (depth < 52) closers = (closers - bit) / 2;
      if (bit !== (c === CLOSE_OBJECT ? 1 : 0)) return -1;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}
