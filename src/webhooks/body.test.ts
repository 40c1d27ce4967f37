import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { payloadTooLarge, readRawBody } from './body.js';

function read(stream: PassThrough, limit: number): Promise<{ error: Error | null; body?: Buffer }> {
  return new Promise((resolve) => {
    let calls = 0;
    readRawBody(
      stream,
      limit,
      () => payloadTooLarge('src', limit),
      (error, body) => {
        calls++;
        if (calls > 1) throw new Error('done called twice');
        resolve({ error, body });
      },
    );
  });
}

describe('readRawBody', () => {
  it('returns the exact bytes, across chunks, as a copy', async () => {
    const stream = new PassThrough();
    const pending = read(stream, 100);
    const first = Buffer.from([0x7b, 0x22, 0xc3]); // a UTF-8 character split across chunks stays intact
    stream.write(first);
    stream.end(Buffer.from([0xa9, 0x22, 0x7d]));
    const { error, body } = await pending;
    expect(error).toBeNull();
    expect(body).toEqual(Buffer.from('{"é"}'));
    first[0] = 0;
    expect(body![0]).toBe(0x7b);
  });

  it('stops at the first byte over the limit, with payload_too_large, and stops listening', async () => {
    const stream = new PassThrough();
    const pending = read(stream, 10);
    stream.write(Buffer.alloc(6));
    stream.write(Buffer.alloc(5));
    const { error, body } = await pending;
    expect(body).toBeUndefined();
    expect(error).toMatchObject({
      code: 'payload_too_large',
      status: 413,
      message: 'The src webhook body is larger than 10 bytes.',
      details: { max_body_bytes: 10 },
    });
    expect(stream.listenerCount('data')).toBe(0);
    expect(stream.listenerCount('end')).toBe(0);
    stream.end(Buffer.alloc(1_000)); // more arriving later is dropped, and done is not called again
  });

  it('accepts a body of exactly the limit, and an empty one', async () => {
    const exact = new PassThrough();
    const pending = read(exact, 4);
    exact.end(Buffer.from('abcd'));
    expect((await pending).body).toEqual(Buffer.from('abcd'));
    const empty = new PassThrough();
    const none = read(empty, 4);
    empty.end();
    expect((await none).body).toEqual(Buffer.alloc(0));
  });

  it('turns a stream failure into invalid_payload', async () => {
    const stream = new PassThrough();
    const pending = read(stream, 10);
    stream.destroy(new Error('aborted'));
    expect((await pending).error).toMatchObject({ code: 'invalid_payload', status: 400 });
  });
});
