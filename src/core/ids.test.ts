import { describe, expect, it } from 'vitest';
import { newId } from './ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newId', () => {
  it('is a UUIDv7 whose first 48 bits are the current ms', () => {
    const before = Date.now();
    const id = newId();
    const after = Date.now();
    expect(id).toMatch(UUID_V7);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('with a prefix is "<prefix>_<uuid>"', () => {
    const id = newId('job');
    expect(id.startsWith('job_')).toBe(true);
    expect(id.slice(4)).toMatch(UUID_V7);
    expect(newId('op').split('_')).toHaveLength(2);
  });

  it('1,000 ids made in a loop are unique and strictly increasing as strings', () => {
    const plain = Array.from({ length: 1000 }, () => newId());
    const prefixed = Array.from({ length: 1000 }, () => newId('evt'));
    for (const ids of [plain, prefixed]) {
      expect(new Set(ids).size).toBe(1000);
      for (let i = 1; i < ids.length; i++) expect(ids[i - 1]! < ids[i]!).toBe(true);
    }
    expect(plain.at(-1)! < prefixed[0]!.slice(4)).toBe(true);
  });
});

describe('newId text', () => {
  it('is the hex of the 16 bytes the uuid library lays out, as the library formats them', async () => {
    const { parse, stringify } = await import('uuid');
    for (let n = 0; n < 200; n++) {
      const id = newId();
      // parse → the 16 bytes; the library's own formatting of them gives the same text back.
      expect(stringify(parse(id))).toBe(id);
    }
  });
});

describe('newId layout', () => {
  it('carries the counter as the uuid package lays it out: ids of one ms count up by one', async () => {
    const { parse } = await import('uuid');
    const decode = (id: string) => {
      const b = parse(id);
      const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      const seq =
        (((b[6]! & 0x0f) << 28) | (b[7]! << 20) | ((b[8]! & 0x3f) << 14) | (b[9]! << 6) | (b[10]! >> 2)) >>>
        0;
      return { ms, seq };
    };
    let pairs = 0;
    for (let n = 0; n < 2000; n++) {
      const a = decode(newId());
      const b = decode(newId());
      if (a.ms !== b.ms) continue;
      pairs += 1;
      expect(b.seq).toBe((a.seq + 1) >>> 0);
    }
    expect(pairs).toBeGreaterThan(0);
  });
});
