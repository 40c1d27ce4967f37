/**
 * What a failure of a request is to its client (`toHttpError`), the request path of a problem's `instance`,
 * Node's client errors (a request the HTTP parser refused) and the 413 drain. The error handler that answers
 * with them, and the renderers of capabilities, are `errors.ts`'s.
 */
import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyRequest, onSendHookHandler } from 'fastify';
import {
  BreakwaterError,
  DRAIN_LIMIT_BYTES,
  PROBLEM_CONTENT_TYPE,
  isBreakwaterError,
  isRequestTimeout,
  toProblem,
  type ErrorCode,
} from '../core/index.js';
import { isSafeMethod } from './methods.js';

/**
 * Any failure of a request as the {@link BreakwaterError} its client sees:
 * - a BreakwaterError as it is;
 * - Fastify's handler timeout → `timeout` (504) for a safe method, `outcome_unknown` (504) for any other:
 *   the handler may still have done its work, so a write is reported as "may have happened" (never 503,
 *   which clients read as "not processed, resend freely");
 * - a schema validation failure → `invalid_payload` (400) with `details.validation: [{ in, path, message }]`;
 * - a body over the limit → `payload_too_large` (413); an unsupported `Content-Type` → `invalid_payload`
 *   with status 415; an unknown route → `not_found` (404);
 * - another client error Fastify or a body parser raised (status 4xx) → that status, as `unauthorized` (401,
 *   403), `not_found` (404, 405), `payload_too_large` (413), `rate_limited` (429) or `invalid_payload`;
 * - anything else → `internal_error` (500; `AbortError` → `canceled`, `TimeoutError` → `timeout`), with
 *   the core sentence as detail: the original message and stack stay in the log.
 */
export function toHttpError(error: unknown, method = 'GET'): BreakwaterError {
  if (isBreakwaterError(error)) return error;
  const fst = error as Partial<FastifyError> | null;
  const code = typeof fst?.code === 'string' ? fst.code : undefined;
  if (isRequestTimeout(error)) {
    const safe = isSafeMethod(method);
    return new BreakwaterError(safe ? 'timeout' : 'outcome_unknown', {
      message: safe
        ? 'The server did not finish answering in time; try again shortly.'
        : 'The server did not finish answering in time; the request may or may not have taken effect, so check its status before trying again.',
      source: 'server',
    });
  }
  if (Array.isArray(fst?.validation)) return validationError(fst as FastifyError);
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new BreakwaterError('payload_too_large');
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new BreakwaterError('invalid_payload', {
      status: 415,
      message: 'The request body has a Content-Type this endpoint does not accept.',
    });
  }
  if (code === 'FST_ERR_NOT_FOUND') return new BreakwaterError('not_found');
  const status = typeof fst?.statusCode === 'number' ? fst.statusCode : undefined;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own messages (FST_*) and the JSON parser's say what was wrong with the request and hold no
    // server state; anybody else's may, so they get the code's sentence instead.
    const own = code?.startsWith('FST_') === true || error instanceof SyntaxError;
    return new BreakwaterError(codeForStatus(status), {
      status,
      ...(own && typeof fst?.message === 'string' ? { message: fst.message } : {}),
    });
  }
  return new BreakwaterError(toProblem(error).code as ErrorCode);
}

function codeForStatus(status: number): ErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404 || status === 405) return 'not_found';
  if (status === 413) return 'payload_too_large';
  if (status === 429) return 'rate_limited';
  return 'invalid_payload';
}

function validationError(error: FastifyError): BreakwaterError {
  const where = error.validationContext ?? 'request';
  const validation = (error.validation ?? []).map((v) => ({
    in: where,
    path: v.instancePath === '' ? '/' : v.instancePath,
    message: v.message ?? 'is not valid',
  }));
  const first = validation[0];
  return new BreakwaterError('invalid_payload', {
    message:
      first === undefined
        ? 'The request is not valid.'
        : `The request ${where} is not valid: ${first.path} ${first.message}.`,
    details: { validation },
  });
}

/** The request path without its query string (a query may carry tokens that do not belong in a body). */
export function pathOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * Node's `clientError` (a request the HTTP parser rejected, or one that took longer than `requestTimeoutMs`
 * to arrive), answered as problem+json on the raw socket, then closed, with the statuses Node's own answer
 * has (its `socketOnError`):
 * - `HPE_HEADER_OVERFLOW`, headers over Node's `maxHeaderSize` (16 KiB unless `--max-http-header-size`) →
 *   431 `invalid_payload`, `details.reason: 'headers_too_large'` (RFC 6585, section 5);
 * - `HPE_CHUNK_EXTENSIONS_OVERFLOW`, chunk extensions over Node's limit → 413 `payload_too_large`;
 * - `ERR_HTTP_REQUEST_TIMEOUT` → 408 `timeout`;
 * - anything else → 400 `invalid_payload`.
 */
export function handleClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const problem = toProblem(clientError(error.code));
  const body = JSON.stringify(problem);
  socket.end(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Bad Request'}\r\n` +
      `Content-Type: ${PROBLEM_CONTENT_TYPE}; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function clientError(code: string | undefined): BreakwaterError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new BreakwaterError('invalid_payload', {
        status: 431,
        message: `The request's header fields are too large: at most ${maxHeaderSize} bytes of headers are accepted.`,
        details: { reason: 'headers_too_large', max_header_bytes: maxHeaderSize },
      });
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new BreakwaterError('payload_too_large', {
        message: "The request body's chunk extensions are too large.",
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new BreakwaterError('timeout', { status: 408, message: 'The request took too long to arrive.' });
    default:
      return new BreakwaterError('invalid_payload', { message: 'The request is not valid HTTP.' });
  }
}

/**
 * `onSend`: a 413 answered before a byte of its body was read keeps its connection when the body's declared
 * `Content-Length` is at most {@link DRAIN_LIMIT_BYTES} (Node reads an unread request body to its end once
 * the answer is sent, and the connection serves the next request); otherwise, a bigger or undeclared body,
 * the connection closes. Fastify marks every body-parser error `Connection: close`, its own refusal of a
 * declared length over `bodyLimit` included, and closing over the unread bytes resets the connection: a
 * client still writing its body saw ECONNRESET or EPIPE instead of the 413. A body already partly read keeps
 * `Connection: close` (Node would not finish reading it). Registered before the graceful close's own
 * `onSend`, which still closes the last connections while shutting down.
 */
export const drainRefusedBody: onSendHookHandler = (request, reply, payload, done) => {
  if (reply.statusCode === 413 && !request.raw.readableDidRead) {
    const declared = Number(request.headers['content-length']);
    if (!(declared <= DRAIN_LIMIT_BYTES)) void reply.header('connection', 'close');
    // Fastify's `close` undone: set, not removed (a removed header suppresses Node's own `keep-alive` one),
    // and only where Node would keep the connection anyway (not for an HTTP/1.0 client without keep-alive).
    else if (reply.hasHeader('connection') && reply.raw.shouldKeepAlive) {
      void reply.header('connection', 'keep-alive');
    }
  }
  done(null, payload);
};
