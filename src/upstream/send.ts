import type { Dispatcher } from 'undici';
import { BreakwaterError } from '../core/index.js';
import { UpstreamHttpError } from './dependency-errors.js';
import type { UpstreamResponse } from './types.js';

/** What one attempt sends: built once per request, the same on every attempt. */
export interface Outgoing {
  readonly origin: string;
  readonly method: string;
  /** Base path + request path + query. */
  readonly fullPath: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string | undefined;
  readonly correlationId: string;
  /** Attempts started so far, this one included. */
  readonly attempts: number;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** Bytes of an error answer kept for `details.upstream_body`; a longer one is dropped. */
const ERROR_BODY_LIMIT = 16 * 1024;

/** undici's own argument checks: a bug in the request we built, not a network failure. */
const UNDICI_ARGUMENT_ERRORS = /^UND_ERR_(?:INVALID_ARG|INVALID_RETURN_VALUE|NOT_SUPPORTED)$/;

const JSON_TYPE = /^\s*application\/(?:[^;\s]*\+)?json\s*(?:;|$)/i;

/**
 * One attempt: sends the request through `dispatcher` under `signal` and reads the whole answer (the body
 * counts against the attempt's timeout; the signal aborts it too).
 * @returns the 2xx answer, body decoded.
 * @throws UpstreamHttpError for a 4xx/5xx answer (4xx bodies kept, 5xx bodies discarded);
 *   BreakwaterError `upstream_error` for an answer it cannot use (1xx/3xx, body too large, invalid JSON);
 *   TypeError when undici rejects the request's arguments; otherwise undici's error, unchanged, for
 *   `classify` to read (refused, reset, aborted: the signal's reason).
 */
export async function sendOnce<T>(
  dispatcher: Dispatcher,
  out: Outgoing,
  signal: AbortSignal,
  maxResponseBytes: number,
): Promise<UpstreamResponse<T>> {
  let data: Dispatcher.ResponseData;
  try {
    data = await dispatcher.request({
      origin: out.origin,
      path: out.fullPath,
      method: out.method as Dispatcher.HttpMethod,
      headers: out.headers,
      body: out.payload ?? null,
      signal,
    });
  } catch (error) {
    throw asProgrammingError(error);
  }
  const status = data.statusCode;
  const headers = data.headers as Headers;
  if (status >= 200 && status < 300) {
    const raw = await readBody(data.body, headers, maxResponseBytes);
    if (raw === undefined) {
      throw unusable('response_too_large', status, { max_response_bytes: maxResponseBytes });
    }
    return {
      status,
      headers,
      body: decode(raw, headers, status) as T,
      correlationId: out.correlationId,
      attempts: out.attempts,
    };
  }
  if (status >= 400 && status < 500) {
    const raw = await readBody(data.body, headers, ERROR_BODY_LIMIT);
    let body: unknown;
    try {
      body = raw === undefined ? undefined : decode(raw, headers, status);
    } catch {
      body = raw!.toString('utf8');
    }
    throw new UpstreamHttpError(status, headers, body);
  }
  // A 5xx body is rarely more than a proxy's HTML page: read it off (up to undici's limit) so the
  // connection can be reused, and keep nothing.
  await data.body.dump();
  if (status >= 500) throw new UpstreamHttpError(status, headers, undefined);
  // 1xx never gets here (undici handles it); a 3xx is not followed: the base URL or path is wrong.
  throw unusable(`http_${status}`, status, {});
}

/**
 * The whole body, or `undefined` when it is longer than `limit` bytes (the stream is then destroyed, which
 * drops the connection rather than read on).
 */
async function readBody(
  body: Dispatcher.ResponseData['body'],
  headers: Headers,
  limit: number,
): Promise<Buffer | undefined> {
  const declared = Number(headers['content-length']);
  if (declared > limit) {
    body.destroy();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
}

/**
 * JSON content types (`application/json`, `application/problem+json`, `…+json`) are parsed, anything else is
 * text; an empty body is `undefined`.
 * @throws BreakwaterError `upstream_error` (`invalid_json`) when a JSON answer does not parse.
 */
function decode(raw: Buffer, headers: Headers, status: number): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  const type = headers['content-type'];
  if (typeof type !== 'string' || !JSON_TYPE.test(type)) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw unusable('invalid_json', status, {}, error);
  }
}

function unusable(
  reason: string,
  status: number,
  extra: Record<string, unknown>,
  cause?: unknown,
): BreakwaterError {
  return new BreakwaterError('upstream_error', {
    details: { reason, upstream_status: status, ...extra },
    cause,
  });
}

/**
 * undici's argument errors (`InvalidArgumentError`, a bad header value) are bugs in what we sent. Core's
 * `classify` only calls standard errors (TypeError, …) fatal, so they are rethrown as a TypeError: not
 * retried, not counted by the breaker, `internal_error` for the caller.
 */
function asProgrammingError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNDICI_ARGUMENT_ERRORS.test(code)) {
    return new TypeError((error as Error).message, { cause: error });
  }
  return error;
}
