/** A SQLite write-ahead log file (`<database>-wal`), read from outside the connection (SQLite's WAL format). */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Bytes of the WAL header, and of one frame (a 24-byte frame header and a 4 KB page, the store's page size). */
const HEADER_BYTES = 32;
const FRAME_BYTES = 24 + 4096;

/** How many times the log of `path` started over: the header's checkpoint sequence number (bytes 12–15). */
export function walRestarts(path: string): number {
  const fd = openSync(`${path}-wal`, 'r');
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    readSync(fd, header, 0, HEADER_BYTES, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

/** Frames the log of `path` has room for: the file keeps the largest size it reached until the store closes. */
export function walCapacity(path: string): number {
  return Math.floor((statSync(`${path}-wal`).size - HEADER_BYTES) / FRAME_BYTES);
}
