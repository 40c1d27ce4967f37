import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Random bytes for this many ids are drawn at once: one call into the CSPRNG instead of one per id. */
const IDS_PER_DRAW = 256;
const pool = new Uint8Array(16 * IDS_PER_DRAW);
let offset = pool.length;

/** The last id's millisecond and counter (RFC 9562, section 6.2, method 1: a counter seeded at random). */
let lastMs = -Infinity;
let seq = 0;

/** Reused for every id (ids are made one at a time): the library's input, its 16 bytes, their text. */
const options: { random: Uint8Array; msecs: number; seq: number } = {
  random: new Uint8Array(16),
  msecs: 0,
  seq: 0,
};
const bytes = new Uint8Array(16);
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A new sortable id: a UUIDv7 (RFC 9562, section 5.7; millisecond timestamp first, monotonic within a
 * process), optionally prefixed: `newId('job')` → `job_019a2c3e-...`. Ids made later sort after earlier ones
 * as plain strings.
 *
 * The `uuid` library lays out the bytes; this function keeps the monotonic counter (the library's own is
 * bypassed once random bytes are passed in), hands it random bytes from a pool filled 4 KiB at a time by
 * `crypto.randomFillSync`, and writes the text itself. The library's default draws 16 bytes from
 * `crypto.getRandomValues` for every id, a visible share of the CPU of a job or a webhook delivery
 * (docs/performance.md#core-policies-and-the-http-edge); its text is 20 string concatenations and a lowercase
 * copy per id, where writing hex digits into a reused buffer and reading it once as a string is one
 * 36-character string.
 */
export function newId(prefix?: string): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const random = options.random;
  for (let i = 0; i < 16; i++) random[i] = pool[offset + i]!;
  offset += 16;
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    // 31 random bits: room for 2^31 more ids in the same ms before the counter wraps.
    seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    seq = (seq + 1) | 0;
    // The 32-bit counter wrapped: borrow the next ms (the clock catches up), as the library does.
    if (seq === 0) lastMs++;
  }
  options.msecs = lastMs;
  options.seq = seq;
  uuidv7(options, bytes, 0);
  const id = hyphenatedHex(bytes);
  return prefix === undefined ? id : `${prefix}_${id}`;
}

/** The 8-4-4-4-12 lowercase hex text of 16 bytes (RFC 9562, section 4). */
function hyphenatedHex(b: Uint8Array): string {
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text[at++] = 0x2d; // '-'
    const byte = b[i]!;
    text[at++] = HEX[byte >> 4]!;
    text[at++] = HEX[byte & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}
