/**
 * One call to a provider, up to its first body byte. The first-byte timeout covers sending the request,
 * the response headers and the first chunk of the body; once a byte has arrived the timer is gone and the
 * answer is never cut by it (a long stream runs to its end). The client's signal stays linked until the
 * answer is read in full, so a client that leaves stops the provider's work too.
 */
import type { EventEmitter } from 'node:events';
import type { Dispatcher } from 'undici';
import { BreakwaterError, type Clock } from '../../core/index.js';
import type { Provider } from '../providers.js';
import { CallAbort } from './call-abort.js';
import { ProviderHttpError, firstByteTimeout } from './provider-error.js';

/** A provider answer whose first bytes have arrived. */
export interface FirstBytes {
  readonly status: number;
  /** The first chunk, or undefined when the body was empty. */
  readonly first: Buffer | undefined;
  /** The rest of the body. */
  readonly rest: AsyncIterator<Buffer>;
  /** Aborts the provider's request (the client left, or a reader gave up). */
  readonly link: CallAbort;
  /** Ms from the call to the first byte. */
  readonly firstByteMs: number;
  /**
   * A non-streamed answer (`callProvider` given `maxBytes`): the whole body, read within the call (`first`
   * undefined, `rest` ended, `link` disposed). Undefined for a streamed one.
   */
  readonly raw: Buffer | undefined;
}

/** Bytes of an error answer read to find the provider's message. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * Sends `payload` to `provider`'s `/chat/completions` and waits for the first body byte; with `maxBytes`
 * (a non-streamed answer), then reads the whole body within the same call, so a body cut off fails the
 * attempt (and is retried like any other failure).
 * @throws BreakwaterError `timeout` (`details.reason: 'first_byte_timeout'`) when no byte came within
 *   `timeoutMs`; BreakwaterError `upstream_error` (`response_too_large`) for a body over `maxBytes`;
 *   ProviderHttpError for a non-2xx answer; undici's error for a network failure; the signal's reason when
 *   `signal` aborted.
 */
export async function callProvider(
  provider: Provider,
  payload: string,
  timeoutMs: number,
  signal: AbortSignal,
  clock: Clock,
  maxBytes?: number,
): Promise<FirstBytes> {
  const link = new CallAbort(signal);
  const started = clock.now();
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    link.abort(firstByteTimeout(provider.name, timeoutMs));
  }, timeoutMs);
  let body: Dispatcher.ResponseData['body'] | undefined;
  try {
    const data = await provider.dispatcher.request({
      origin: provider.origin,
      path: provider.completionsPath,
      method: 'POST',
      headers: provider.headers,
      body: payload,
      // undici takes an EventEmitter-like signal (see CallAbort); its types name only EventEmitter.
      signal: link as unknown as EventEmitter,
    });
    body = data.body;
    if (data.statusCode < 200 || data.statusCode >= 300) {
      const text = await readLimited(data.body, ERROR_BODY_LIMIT);
      throw new ProviderHttpError(data.statusCode, data.headers, errorObject(text));
    }
    if (maxBytes !== undefined) {
      let firstAt = 0;
      const raw = await readWhole(data.body, maxBytes, provider, () => {
        clock.clearTimeout(timer);
        firstAt = clock.now();
      });
      link.dispose();
      const firstByteMs = firstAt - started;
      return { status: data.statusCode, first: undefined, rest: ENDED, link, firstByteMs, raw };
    }
    const rest = data.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const next = await rest.next();
    clock.clearTimeout(timer);
    const first = next.done === true ? undefined : next.value;
    return { status: data.statusCode, first, rest, link, firstByteMs: clock.now() - started, raw: undefined };
  } catch (error) {
    clock.clearTimeout(timer);
    link.dispose();
    body?.destroy();
    if (timedOut) throw firstByteTimeout(provider.name, timeoutMs);
    throw error;
  }
}

/** The `rest` of an answer read in full. */
const ENDED: AsyncIterator<Buffer> = {
  next: () => Promise.resolve({ done: true, value: undefined }),
};

/**
 * Reads a whole body, at most `maxBytes`, with the stream's events rather than an async iterator (which
 * costs a generator, its end-of-stream listeners and a promise per chunk: ~1 KB per request more). `onFirst`
 * runs at the first chunk (or at the end of an empty body).
 * @throws BreakwaterError `upstream_error` (`response_too_large`) past `maxBytes` (the body is destroyed,
 *   which aborts the request); the body's error (a cut connection, the signal's reason).
 */
function readWhole(
  body: Dispatcher.ResponseData['body'],
  maxBytes: number,
  provider: Provider,
  onFirst: () => void,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      if (chunks.length === 0) onFirst();
      size += chunk.length;
      if (size > maxBytes) body.destroy(tooLarge(provider, maxBytes));
      else chunks.push(chunk);
    });
    body.once('end', () => {
      if (chunks.length === 0) onFirst();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    body.once('error', reject);
    // Destroyed without an error (never by undici today): not left pending.
    body.once('close', () => reject(new Error('the provider body closed before its end')));
  });
}

function tooLarge(provider: Provider, maxBytes: number): BreakwaterError {
  return new BreakwaterError('upstream_error', {
    message: `The provider ${provider.name} sent an answer larger than ${maxBytes} bytes.`,
    source: provider.name,
    details: { provider: provider.name, reason: 'response_too_large' },
  });
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The OpenAI-shaped `error` object of an error body, if it has one. */
function errorObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    const error = parsed?.error;
    if (typeof error === 'object' && error !== null) return error as Record<string, unknown>;
    if (typeof error === 'string') return { message: error };
  } catch {
    // not JSON: the provider's text is not passed on
  }
  return undefined;
}
