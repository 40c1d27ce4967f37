import { randomFillSync } from 'node:crypto';

/** Random bytes for this many ids are drawn at once: one call into the CSPRNG instead of one per id. */
const IDS_PER_DRAW = 256;
const pool = new Uint8Array(16 * IDS_PER_DRAW);
let offset = pool.length;

/** The last id's millisecond and counter (RFC 9562, section 6.2, method 1: a counter seeded at random). */
let lastMs = -Infinity;
let seq = 0;

/** Reused for every id (ids are made one at a time): its 16 bytes and their text. */
const bytes = new Uint8Array(16);
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A new sortable id: a UUIDv7 (RFC 9562, section 5.7; millisecond timestamp first, monotonic within a
 * process), optionally prefixed: `newId('job')` → `job_019a2c3e-...`. Ids made later sort after earlier ones
 * as plain strings.
 *
 * The bytes are laid out as the `uuid` package's `v7` does (48-bit ms, version 7, a 32-bit counter over the
 * next bits, variant 10, random rest), without loading that package (its import cost:
 * docs/performance.md#core-policies-and-the-http-edge). Random bytes come from a pool filled 4 KiB at a time
 * by `crypto.randomFillSync`: one draw of 16 bytes per id cost a visible share of the CPU of a job or a
 * webhook delivery. The text is hex digits written into a reused buffer and read once as a string, where
 * string concatenation allocated several hundred bytes per id.
 */
export function newId(prefix?: string): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const random = pool;
  const at = offset;
  offset += 16;
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    // 31 random bits: room for 2^31 more ids in the same ms before the counter wraps.
    seq =
      ((random[at + 6]! & 0x7f) << 24) | (random[at + 7]! << 16) | (random[at + 8]! << 8) | random[at + 9]!;
  } else {
    seq = (seq + 1) | 0;
    // The 32-bit counter wrapped: borrow the next ms (the clock catches up), as the uuid package does.
    if (seq === 0) lastMs++;
  }
  v7Bytes(lastMs, seq, random, at);
  const id = hyphenatedHex(bytes);
  return prefix === undefined ? id : `${prefix}_${id}`;
}

/**
 * RFC 9562's UUIDv7 layout into `bytes`: `ms` in the first 48 bits, the version (7), the 32-bit `seq` over the
 * next 12 + 6 + 8 + 6 bits around the variant (10), then random bits from `random` at `at + 10` to `at + 15`.
 */
function v7Bytes(ms: number, seq: number, random: Uint8Array, at: number): void {
  bytes[0] = (ms / 0x10000000000) & 0xff;
  bytes[1] = (ms / 0x100000000) & 0xff;
  bytes[2] = (ms / 0x1000000) & 0xff;
  bytes[3] = (ms / 0x10000) & 0xff;
  bytes[4] = (ms / 0x100) & 0xff;
  bytes[5] = ms & 0xff;
  bytes[6] = 0x70 | ((seq >>> 28) & 0x0f);
  bytes[7] = (seq >>> 20) & 0xff;
  bytes[8] = 0x80 | ((seq >>> 14) & 0x3f);
  bytes[9] = (seq >>> 6) & 0xff;
  bytes[10] = ((seq << 2) & 0xff) | (random[at + 10]! & 0x03);
  for (let i = 11; i < 16; i++) bytes[i] = random[at + i]!;
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
