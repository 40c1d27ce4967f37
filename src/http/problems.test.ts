import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { handleClientError } from './problems.js';

/** A socket that keeps what is written to it. */
function fakeSocket(writable = true) {
  const socket = { writable, written: '', destroyed: false, ended: false };
  return Object.assign(socket, {
    end(text: string) {
      socket.written += text;
      socket.ended = true;
    },
    destroy() {
      socket.destroyed = true;
    },
  });
}

function answer(code: string | undefined) {
  const socket = fakeSocket();
  handleClientError(Object.assign(new Error('parser'), { code }), socket as unknown as Socket);
  const [head, body] = socket.written.split('\r\n\r\n');
  const problem = JSON.parse(body!) as Record<string, unknown>;
  return { status: head!.split('\r\n')[0], code: problem.code, reason: problem.reason, ended: socket.ended };
}

describe('handleClientError', () => {
  it('answers with the status Node itself would: 431, 413, 408, else 400, as problem+json; then closes', () => {
    expect(STATUS_CODES[431]).toBe('Request Header Fields Too Large');
    expect({
      header: answer('HPE_HEADER_OVERFLOW'),
      chunk: answer('HPE_CHUNK_EXTENSIONS_OVERFLOW'),
      timeout: answer('ERR_HTTP_REQUEST_TIMEOUT'),
      garbage: answer('HPE_INVALID_METHOD'),
    }).toEqual({
      header: {
        status: 'HTTP/1.1 431 Request Header Fields Too Large',
        code: 'invalid_payload',
        reason: 'headers_too_large',
        ended: true,
      },
      chunk: {
        status: 'HTTP/1.1 413 Payload Too Large',
        code: 'payload_too_large',
        reason: undefined,
        ended: true,
      },
      timeout: { status: 'HTTP/1.1 408 Request Timeout', code: 'timeout', reason: undefined, ended: true },
      garbage: {
        status: 'HTTP/1.1 400 Bad Request',
        code: 'invalid_payload',
        reason: undefined,
        ended: true,
      },
    });
    const socket = fakeSocket();
    handleClientError(
      Object.assign(new Error('parser'), { code: 'HPE_HEADER_OVERFLOW' }),
      socket as unknown as Socket,
    );
    expect(socket.written).toContain(
      `"detail":"The request's header fields are too large: at most ${maxHeaderSize} bytes of headers are accepted."`,
    );
    expect(socket.written).toContain('Connection: close\r\n');
  });

  it('a reset, or a socket that can no longer be written, is destroyed without an answer', () => {
    const reset = fakeSocket();
    handleClientError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), reset as unknown as Socket);
    const closed = fakeSocket(false);
    handleClientError(
      Object.assign(new Error('x'), { code: 'HPE_HEADER_OVERFLOW' }),
      closed as unknown as Socket,
    );
    expect([reset.written, reset.destroyed, closed.written, closed.destroyed]).toEqual(['', true, '', true]);
  });
});
