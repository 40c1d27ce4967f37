/**
 * The raw body of a delivery, exactly as received: signatures are computed over these bytes, so the body is
 * never parsed and re-serialized before it is verified. Counted while it streams in, so a body over the limit
 * is refused after `limit + 1` bytes at most, whatever Content-Length claims.
 */
import { BreakwaterError } from '../core/index.js';

/** The `payload_too_large` (413) error of a body over `limitBytes`. */
export function payloadTooLarge(source: string, limitBytes: number): BreakwaterError {
  return BreakwaterError.withoutStack('payload_too_large', {
    message: `The ${source} webhook body is larger than ${limitBytes} bytes.`,
    details: { max_body_bytes: limitBytes },
  });
}

/**
 * Reads `stream` to its end into one Buffer (a copy, never a view of a shared buffer), calling `done` once:
 * with the bytes, with `tooLarge()` as soon as more than `limitBytes` arrived (the listeners are removed and
 * the rest is not kept), or with an `invalid_payload` error when the stream fails (a client that went away).
 */
export function readRawBody(
  stream: NodeJS.ReadableStream,
  limitBytes: number,
  tooLarge: () => BreakwaterError,
  done: (error: Error | null, body?: Buffer) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const cleanup = (): void => {
    stream.removeListener('data', onData);
    stream.removeListener('end', onEnd);
    stream.removeListener('error', onError);
  };
  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    if (size > limitBytes) {
      cleanup();
      // Keep the socket's bytes flowing to nowhere: the answer closes the connection (Fastify adds
      // `Connection: close` to a parser error).
      stream.resume();
      done(tooLarge());
      return;
    }
    chunks.push(bytes);
  }
  function onEnd(): void {
    cleanup();
    done(null, chunks.length === 1 ? Buffer.from(chunks[0]!) : Buffer.concat(chunks, size));
  }
  function onError(error: Error): void {
    cleanup();
    done(
      new BreakwaterError('invalid_payload', {
        message: 'The request body could not be read.',
        cause: error,
      }),
    );
  }
  stream.on('data', onData);
  stream.on('end', onEnd);
  stream.on('error', onError);
  stream.resume();
}
