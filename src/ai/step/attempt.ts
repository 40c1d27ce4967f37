/**
 * One call to a provider, up to its first body byte. The first-byte timeout covers sending the request,
 * the response headers and the first chunk of the body; once a byte has arrived the timer is gone and the
 * answer is never cut by it (a long stream runs to its end). The client's signal stays linked until the
 * answer is read in full, so a client that leaves stops the provider's work too.
 */
import type { Dispatcher } from 'undici';
import { LinkedAbort, type Clock } from '../../core/index.js';
import type { Provider } from '../providers.js';
import { ProviderHttpError, firstByteTimeout } from './provider-error.js';

/** A provider answer whose first bytes have arrived. */
export interface FirstBytes {
  readonly status: number;
  /** The first chunk, or undefined when the body was empty. */
  readonly first: Buffer | undefined;
  /** The rest of the body. */
  readonly rest: AsyncIterator<Buffer>;
  /** Aborts the provider's request (the client left, or a reader gave up). */
  readonly link: LinkedAbort;
  /** Ms from the call to the first byte. */
  readonly firstByteMs: number;
}

/** Bytes of an error answer read to find the provider's message. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * Sends `payload` to `provider`'s `/chat/completions` and waits for the first body byte.
 * @throws BreakwaterError `timeout` (`details.reason: 'first_byte_timeout'`) when none came within
 *   `timeoutMs`; ProviderHttpError for a non-2xx answer; undici's error for a network failure; the signal's
 *   reason when `signal` aborted.
 */
export async function callProvider(
  provider: Provider,
  payload: string,
  timeoutMs: number,
  signal: AbortSignal,
  clock: Clock,
): Promise<FirstBytes> {
  const link = new LinkedAbort(signal);
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
      signal: link.signal,
    });
    body = data.body;
    if (data.statusCode < 200 || data.statusCode >= 300) {
      const text = await readLimited(data.body, ERROR_BODY_LIMIT);
      throw new ProviderHttpError(data.statusCode, data.headers, errorObject(text));
    }
    const rest = data.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const next = await rest.next();
    clock.clearTimeout(timer);
    return {
      status: data.statusCode,
      first: next.done === true ? undefined : next.value,
      rest,
      link,
      firstByteMs: clock.now() - started,
    };
  } catch (error) {
    clock.clearTimeout(timer);
    link.dispose();
    body?.destroy();
    if (timedOut) throw firstByteTimeout(provider.name, timeoutMs);
    throw error;
  }
}

/**
 * Reads the rest of an answer into one buffer.
 * @returns undefined when it is larger than `maxBytes` (the request is aborted).
 */
export async function readRest(bytes: FirstBytes, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = bytes.first === undefined ? [] : [bytes.first];
  let size = bytes.first?.length ?? 0;
  for (let next = await bytes.rest.next(); next.done !== true; next = await bytes.rest.next()) {
    size += next.value.length;
    if (size > maxBytes) {
      bytes.link.abort();
      return undefined;
    }
    chunks.push(next.value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
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
