/**
 * One call to a provider, up to its first body byte. The first-byte timeout covers sending the request,
 * the response headers and the first chunk of the body; once a byte has arrived the timer is gone and the
 * answer is never cut by it (a long stream runs to its end). The client's signal stays linked until the
 * answer is read in full, so a client that leaves stops the provider's work too.
 */
import type { Clock } from '../../core/index.js';
import type { Provider } from '../providers.js';
import { CallAbort } from './call-abort.js';
import { dispatchCall } from './provider-call.js';

/**
 * Takes a streamed answer's body as it arrives (see {@link BodySource.read}). Called synchronously from the
 * provider connection's own callbacks: it must not throw.
 */
export interface ChunkReader {
  /** One chunk of the body. False pauses the provider's connection until {@link BodySource.resume}. */
  onChunk(chunk: Buffer): boolean;
  /**
   * The body ended (`error` undefined), or broke off: the provider failed, or the call was aborted (`error`
   * is then the abort's reason). Called once, after the last chunk.
   */
  onEnd(error?: unknown): void;
  /**
   * A chunk that arrived but is not delivered: the call was aborted while it waited for the reader. Called
   * for each such chunk, in order, just before `onEnd`; the reader may read it (for what the provider
   * produced) but not deliver it.
   */
  onDropped?(chunk: Buffer): void;
}

/** A body pushed to one reader: no async iterator, no promise per chunk. */
export interface BodySource {
  /**
   * Starts pushing to `reader`: what arrived meanwhile at once (the first chunk among it), then each chunk as
   * it arrives, then the end. Call it once.
   */
  read(reader: ChunkReader): void;
  /** Pushing starts again after `onChunk` returned false (the reader's own sink drained). */
  resume(): void;
}

/** A provider answer whose first bytes have arrived. */
export interface FirstBytes {
  readonly status: number;
  /** The body from its first chunk on (ended at once for a body read whole, or empty). */
  readonly body: BodySource;
  /** Aborts the provider's request (the client left, or a reader gave up). */
  readonly link: CallAbort;
  /** Ms from the call to the first byte. */
  readonly firstByteMs: number;
  /**
   * A non-streamed answer (`callProvider` given `maxBytes`): the whole body, read within the call (`body`
   * ended, `link` disposed). Undefined for a streamed one.
   */
  readonly raw: Buffer | undefined;
  /**
   * A streamed body that ends when the connection closes (neither `content-length` nor chunked): undici
   * reports a reset of it as a normal end, so such a stream is whole only when it sent `data: [DONE]`.
   */
  readonly closeDelimited: boolean;
}

/**
 * Sends `payload` to `provider`'s `path` (default its `/chat/completions`) and waits for the first body byte; with `maxBytes`
 * (a non-streamed answer), then reads the whole body within the same call, so a body cut off fails the
 * attempt (and is retried like any other failure).
 * @throws BreakwaterError `timeout` (`details.reason: 'first_byte_timeout'`) when no byte came within
 *   `timeoutMs`; BreakwaterError `upstream_error` (`response_too_large`) for a body over `maxBytes`;
 *   ProviderHttpError for a non-2xx answer; undici's error for a network failure; the signal's reason when
 *   `signal` aborted.
 */
export function callProvider(
  provider: Provider,
  payload: string,
  timeoutMs: number,
  signal: AbortSignal,
  clock: Clock,
  maxBytes?: number,
  path: string = provider.completionsPath,
): Promise<FirstBytes> {
  return dispatchCall(provider, payload, timeoutMs, new CallAbort(signal), clock, maxBytes, path);
}
