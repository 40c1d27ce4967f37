import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Random bytes for this many ids are drawn at once: one call into the CSPRNG instead of one per id. */
const IDS_PER_DRAW = 256;
const pool = new Uint8Array(16 * IDS_PER_DRAW);
let offset = pool.length;

/** The last id's millisecond and counter (RFC 9562, section 6.2, method 1: a counter seeded at random). */
let lastMs = -Infinity;
let seq = 0;

/**
 * A new sortable id: a UUIDv7 (RFC 9562, section 5.7; millisecond timestamp first, monotonic within a
 * process), optionally prefixed: `newId('job')` → `job_019a2c3e-...`. Ids made later sort after earlier ones
 * as plain strings.
 *
 * The `uuid` library lays out and formats the bytes; this function keeps the monotonic counter (the library's
 * own is bypassed once random bytes are passed in) and hands it random bytes from a pool filled 4 KiB at a
 * time by `crypto.randomFillSync`. The library's default draws 16 bytes from `crypto.getRandomValues` for
 * every id, which cost ~2-4 % of the CPU of a job or a webhook delivery (measured with `bench/`).
 */
export function newId(prefix?: string): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const random = pool.subarray(offset, (offset += 16));
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
  const id = uuidv7({ random, msecs: lastMs, seq });
  return prefix === undefined ? id : `${prefix}_${id}`;
}
