/**
 * One call to a provider, up to its first body byte. The first-byte timeout covers sending the request,
 * the response headers and the first chunk of the body; once a byte has arrived the timer is gone and the
 * answer is never cut by it (a long stream runs to its end). The client's signal stays linked until the
 * answer is read in full, so a client that leaves stops the provider's work too.
 */
import type { EventEmitter } from 'node:events';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../core/index.js';
import type { Provider } from '../providers.js';
import { CallAbort } from './call-abort.js';
import { ERROR_BODY_LIMIT, ProviderHttpError, errorObject, firstByteTimeout } from './provider-error.js';
import { callForWhole } from './whole-answer.js';

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

/**
 * Sends `payload` to `provider`'s `/chat/completions` and waits for the first body byte; with `maxBytes`
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
): Promise<FirstBytes> {
  const link = new CallAbort(signal);
  if (maxBytes !== undefined) return callForWhole(provider, payload, timeoutMs, link, clock, maxBytes);
  return callForStream(provider, payload, timeoutMs, link, clock);
}

/** A streamed answer: undici's `request`, whose body stream is handed on after its first chunk. */
async function callForStream(
  provider: Provider,
  payload: string,
  timeoutMs: number,
  link: CallAbort,
  clock: Clock,
): Promise<FirstBytes> {
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
