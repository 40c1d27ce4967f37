import {
  BreakwaterError,
  isBreakwaterError,
  type ErrorCode,
  type ErrorKind,
  type ErrorOutcome,
} from './errors.js';

/**
 * What a failure means for the caller (docs/architecture.md#classification).
 * - `kind`: `transient` (a later try may succeed), `permanent` (it will not), `fatal` (a bug).
 * - `outcome`: `unknown` when the request may have taken effect (written, answer lost).
 * - `retryable`: whether an automatic retry is safe: transient, and either the outcome is `failed` or the
 *   request is idempotent (an idempotent method, or an idempotency key the server dedupes on).
 * - `written`: whether the request reached the wire (`undefined` when it cannot be told).
 */
export interface Classification {
  readonly kind: ErrorKind;
  readonly code: ErrorCode;
  readonly outcome: ErrorOutcome;
  readonly retryable: boolean;
  /** HTTP status of the upstream response, when the failure was one. */
  readonly status: number | undefined;
  /** Retry hint in ms from now (from `Retry-After` / `retry-after-ms`, or the error's own). */
  readonly retryAfterMs: number | undefined;
  readonly written: boolean | undefined;
  /** A short machine-readable reason: `http_503`, `ECONNREFUSED`, `TypeError`, … */
  readonly reason: string;
}

/** Context that changes how a failure is read. */
export interface ClassifyOptions {
  /** HTTP method of the failed request; non-idempotent methods (POST, PATCH) make post-write failures `unknown`. */
  method?: string;
  /** True when the request carried an idempotency key, so resending after an unknown outcome is safe. */
  idempotencyKey?: boolean;
  /**
   * True when the request is idempotent although its method is not (a search sent as POST): it is read like
   * an idempotent method, so a cut-off attempt has outcome `failed`, not `unknown`, and may be resent.
   */
  idempotent?: boolean;
  /** "Now" in ms since the epoch, to read an HTTP-date `Retry-After` (default `Date.now()`). */
  nowMs?: number;
  /**
   * The code of a failure nothing above recognizes (a plain `Error`, a thrown string), still `transient`
   * (default `upstream_unavailable`: around a call to a dependency, an unrecognised failure is most likely
   * the dependency's). The job runner passes `handler_failed`: there the error comes from the handler's own
   * code, and calling it the dependency's would send the operator looking in the wrong place.
   */
  unclassified?: ErrorCode;
}

/** Methods that are idempotent per RFC 9110, section 9.2.2. */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** HTTP statuses that are transient (docs/architecture.md#classification). */
const TRANSIENT_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * Transient statuses where the server says it did not process the request (408 request timeout, 425 too
 * early, 429 too many requests, 503 unavailable): the outcome stays `failed` even for a POST. After 500, 502
 * or 504 the origin may have acted, so a non-idempotent write's outcome is `unknown`.
 */
const NOT_PROCESSED_STATUSES = new Set([408, 425, 429, 503]);

/** Connection failures that happen before any request byte is written: always safe to resend. */
const BEFORE_WRITE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Failures after the request may have been written: the answer was lost, the effect is not known. */
const AFTER_WRITE_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RESPONSE_STATUS_CODE',
]);

/** Syscalls that fail before any request byte is written: resolving the name, binding, connecting. */
const BEFORE_WRITE_SYSCALLS = new Set(['connect', 'bind', 'getaddrinfo']);

/** OpenSSL certificate verification codes as Node reports them that the patterns below do not catch. */
const TLS_VERIFY_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CRL_SIGNATURE_FAILURE',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
]);

/**
 * Codes that mean the call was wrong, not that the network failed: Node's argument and state validation
 * (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_URL`, `ERR_OUT_OF_RANGE`, …) and undici's (`UND_ERR_INVALID_ARG`, …).
 */
const PROGRAMMING_ERROR_CODE =
  /^(?:ERR_(?:INVALID_\w+|MISSING_\w+|OUT_OF_RANGE|UNKNOWN_\w+|ILLEGAL_CONSTRUCTOR|ASSERTION|METHOD_NOT_IMPLEMENTED|UNESCAPED_CHARACTERS|BUFFER_OUT_OF_BOUNDS|HTTP_HEADERS_SENT|HTTP_INVALID_\w+|UNSUPPORTED_\w+)|UND_ERR_(?:INVALID_ARG|INVALID_RETURN_VALUE|NOT_SUPPORTED))$/;

/** Codes raised by the network stack (see where it is used). */
const NETWORK_STACK_CODE = /^(?:E[A-Z0-9]+|ERR_\w+|UND_ERR_\w+|HPE_\w+)$/;

const FATAL_ERRORS = new Set([
  'TypeError',
  'RangeError',
  'ReferenceError',
  'SyntaxError',
  'EvalError',
  'URIError',
]);

/**
 * Classifies anything thrown or returned as a failure:
 * - a {@link BreakwaterError}: its own fields (`rate_limited` and `spend_limited` are never retryable by our
 *   own clients, docs/architecture.md#classification), with one exception: a `timeout`, or a
 *   `deadline_exceeded` whose `details.timeout_ms` is > 0, means our own timer fired while the call was in
 *   flight, so the request may have been written and acted on. Its outcome (which the timeout policy always
 *   sets to `failed`, since it cannot know the method) becomes the write outcome: `unknown` for a known
 *   non-idempotent method (POST, PATCH), so it is retried only with an idempotency key. A `deadline_exceeded`
 *   with `timeout_ms` 0 (or none) failed fast without calling anything and stays `failed`;
 * - an HTTP response or an error carrying `status`/`statusCode` (fetch `Response`, the `openai` client's
 *   `APIError`): 408/425/429/500/502/503/504 transient, other 4xx and 5xx permanent; `Retry-After` (seconds or
 *   HTTP-date, RFC 9110 section 10.2.3) and `retry-after-ms` are read;
 * - fetch/undici/Node socket failures, following `cause` chains (`TypeError: fetch failed` wraps the real
 *   one): refused/DNS/connect timeout → transient, not written; reset/headers or body timeout → written, and
 *   `unknown` for non-idempotent methods;
 * - any other coded error raised by `connect`, `bind` or `getaddrinfo` (`connect EADDRNOTAVAIL`,
 *   `connect EMFILE`, `getaddrinfo EAI_FAIL`) → transient, not written: the request never left;
 * - TLS and certificate errors (`ERR_SSL_*`, `ERR_TLS_*`, `CERT_*`, `*_CERT_*`, `DEPTH_ZERO_SELF_SIGNED_CERT`,
 *   `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, …) → `permanent` `upstream_error`, `failed`, not written: they happen
 *   in the handshake, before the request is written, and a bad certificate or protocol mismatch does not fix
 *   itself on retry. `ERR_TLS_HANDSHAKE_TIMEOUT` is the exception: transient, not written;
 * - `TimeoutError` / `AbortError` DOM exceptions → `timeout` / `canceled` (and so are Node's `ABORT_ERR` and
 *   undici's `UND_ERR_ABORTED` found along the chain: `canceled`);
 * - any other error whose `cause` chain carries a string `code` that is not a programming-error code
 *   (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_URL`, `UND_ERR_INVALID_ARG`, …), and undici's `TypeError: fetch
 *   failed` without one → a transient network failure (`upstream_unavailable`, or `timeout` for a `*TIMEOUT*`
 *   code) whose request may or may not have been written: written `undefined`, outcome `unknown` for a
 *   non-idempotent method; reason the code, or `fetch_failed`;
 * - TypeError, RangeError and other programming errors → `fatal`;
 * - anything else → transient `upstream_unavailable` (or `options.unclassified`).
 */
export function classify(error: unknown, options: ClassifyOptions = {}): Classification {
  if (isBreakwaterError(error)) {
    const ownLimit = error.code === 'rate_limited' || error.code === 'spend_limited';
    // Our own timer cut the call off in flight: the request may have been written (see the docstring).
    const outcome =
      error.outcome === 'failed' && firedInFlight(error) ? writeOutcome(options) : error.outcome;
    return {
      kind: error.kind,
      code: error.code,
      outcome,
      // An unknown outcome means only a known-idempotent request may be resent (an absent method does not
      // count here, unlike for a raw failure whose outcome we derive ourselves).
      retryable:
        error.kind === 'transient' &&
        !ownLimit &&
        (outcome === 'failed' || options.idempotencyKey === true || isIdempotentRequest(options)),
      status: error.status,
      retryAfterMs: error.retryAfterMs,
      written: undefined,
      reason: error.code,
    };
  }

  const status = httpStatusOf(error);
  if (status !== undefined) return classifyStatus(status, headersOf(error), options);

  const chain = causeChain(error);
  const found = listedCodeOf(chain);
  if (found !== undefined) {
    const network = found.code;
    // A socket error raised by connect() (e.g. `connect ETIMEDOUT`) happened before any byte was written.
    if (BEFORE_WRITE_CODES.has(network) || found.syscall === 'connect') {
      return result('transient', 'upstream_unavailable', 'failed', false, network, options);
    }
    const code: ErrorCode =
      network.includes('TIMEOUT') || network === 'ETIMEDOUT' ? 'timeout' : 'upstream_unavailable';
    return result('transient', code, writeOutcome(options), true, network, options);
  }

  const connect = chain.find(
    (e) =>
      typeof e.code === 'string' && typeof e.syscall === 'string' && BEFORE_WRITE_SYSCALLS.has(e.syscall),
  );
  if (connect !== undefined) {
    return result('transient', 'upstream_unavailable', 'failed', false, connect.code as string, options);
  }

  const tls = chain.find((e) => typeof e.code === 'string' && isTlsCode(e.code));
  if (tls !== undefined) {
    const code = tls.code as string;
    if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') {
      return result('transient', 'upstream_unavailable', 'failed', false, code, options);
    }
    return result('permanent', 'upstream_error', 'failed', false, code, options);
  }

  const name = error instanceof Error || error instanceof DOMException ? error.name : undefined;
  if (name === 'TimeoutError') {
    return result('transient', 'timeout', writeOutcome(options), undefined, name, options);
  }
  if (name === 'AbortError') return result('permanent', 'canceled', 'failed', undefined, name, options);

  // Only codes from the network stack: libuv/Node system errors (E…), Node (ERR_…), undici (UND_ERR_…) and
  // the HTTP parser (HPE_…). A driver's own codes (a PostgreSQL SQLSTATE such as 23505) say nothing about
  // the network.
  const coded = chain.find((e) => typeof e.code === 'string' && NETWORK_STACK_CODE.test(e.code));
  const other = coded?.code as string | undefined;
  if (other === 'ABORT_ERR' || other === 'UND_ERR_ABORTED') {
    return result('permanent', 'canceled', 'failed', undefined, other, options);
  }
  if (other !== undefined ? !PROGRAMMING_ERROR_CODE.test(other) : isFetchFailed(error)) {
    const reason = other ?? 'fetch_failed';
    const code: ErrorCode = reason.includes('TIMEOUT') ? 'timeout' : 'upstream_unavailable';
    return result('transient', code, writeOutcome(options), undefined, reason, options);
  }

  if (name !== undefined && FATAL_ERRORS.has(name)) {
    return result('fatal', 'internal_error', 'failed', undefined, name, options);
  }
  const code = options.unclassified ?? 'upstream_unavailable';
  return result('transient', code, 'failed', undefined, name ?? typeof error, options);
}

/**
 * Turns any failure into a {@link BreakwaterError} with its classification (the original is kept as
 * `cause`). A BreakwaterError is returned as it is.
 */
export function toBreakwaterError(
  error: unknown,
  options: ClassifyOptions & { source?: string; operationId?: string } = {},
): BreakwaterError {
  if (isBreakwaterError(error)) return error;
  const c = classify(error, options);
  const code: ErrorCode = c.outcome === 'unknown' ? 'outcome_unknown' : c.code;
  return new BreakwaterError(code, {
    kind: c.kind,
    retryAfterMs: c.retryAfterMs,
    outcome: c.outcome,
    source: options.source,
    operationId: options.operationId,
    details: { reason: c.reason, ...(c.status === undefined ? {} : { upstream_status: c.status }) },
    cause: error,
  });
}

/**
 * Parses a `Retry-After` value (RFC 9110, section 10.2.3): delay-seconds or an HTTP-date. Returns ms from
 * `nowMs` (never negative), or `undefined` when the value is missing or malformed.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = parseHttpDate(text, nowMs);
  if (at === undefined) return undefined;
  return Math.max(0, at - nowMs);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const IMF_FIXDATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850_DATE =
  /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME_DATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * An HTTP-date (RFC 9110, section 5.6.7) in ms since the epoch: IMF-fixdate, or the obsolete RFC 850 and
 * asctime forms, all in UTC. Anything else (including strings `Date.parse` would guess at) is `undefined`.
 */
function parseHttpDate(text: string, nowMs: number): number | undefined {
  let parts: { year: number; month: string; day: string; time: [string, string, string] };
  let m: RegExpExecArray | null;
  if ((m = IMF_FIXDATE.exec(text)) !== null) {
    const [, day = '', month = '', year = '', hh = '', mm = '', ss = ''] = m;
    parts = { year: Number(year), month, day, time: [hh, mm, ss] };
  } else if ((m = RFC850_DATE.exec(text)) !== null) {
    const [, day = '', month = '', yy = '', hh = '', mm = '', ss = ''] = m;
    // A two-digit year that looks more than 50 years in the future is in the past (RFC 9110, 5.6.7).
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(yy);
    if (year > nowYear + 50) year -= 100;
    parts = { year, month, day, time: [hh, mm, ss] };
  } else if ((m = ASCTIME_DATE.exec(text)) !== null) {
    const [, month = '', day = '', hh = '', mm = '', ss = '', year = ''] = m;
    parts = { year: Number(year), month, day: day.trim(), time: [hh, mm, ss] };
  } else {
    return undefined;
  }
  const month = MONTHS.indexOf(parts.month);
  const day = Number(parts.day);
  const [h, min, sec] = parts.time.map(Number) as [number, number, number];
  if (month < 0 || h > 23 || min > 59 || sec > 60) return undefined; // 60: a leap second
  const at = Date.UTC(parts.year, month, day, h, min, sec);
  // Reject days the month does not have (31 Feb) instead of rolling over into the next month.
  if (new Date(Date.UTC(parts.year, month, day)).getUTCDate() !== day) return undefined;
  return at;
}

function classifyStatus(
  status: number,
  headers: HeaderReader | undefined,
  options: ClassifyOptions,
): Classification {
  const retryAfterMs = readRetryAfter(headers, options.nowMs ?? Date.now());
  const reason = `http_${status}`;
  if (TRANSIENT_STATUSES.has(status)) {
    const outcome = NOT_PROCESSED_STATUSES.has(status) ? 'failed' : writeOutcome(options);
    const code: ErrorCode = status === 408 || status === 504 ? 'timeout' : 'upstream_unavailable';
    return { ...result('transient', code, outcome, true, reason, options), status, retryAfterMs };
  }
  const code: ErrorCode = status === 401 || status === 403 ? 'unauthorized' : 'upstream_error';
  return { ...result('permanent', code, 'failed', true, reason, options), status, retryAfterMs };
}

function result(
  kind: ErrorKind,
  code: ErrorCode,
  outcome: ErrorOutcome,
  written: boolean | undefined,
  reason: string,
  options: ClassifyOptions,
): Classification {
  return {
    kind,
    code,
    outcome,
    retryable: kind === 'transient' && (outcome === 'failed' || isIdempotent(options)),
    status: undefined,
    retryAfterMs: undefined,
    written,
    reason,
  };
}

function isIdempotent(options: ClassifyOptions): boolean {
  if (options.idempotencyKey === true || options.idempotent === true) return true;
  return options.method === undefined || isIdempotentMethod(options.method);
}

/** An idempotent method, or a request declared idempotent. */
function isIdempotentRequest(options: ClassifyOptions): boolean {
  return options.idempotent === true || isIdempotentMethod(options.method);
}

function isIdempotentMethod(method: string | undefined): boolean {
  return method !== undefined && IDEMPOTENT_METHODS.has(method.toUpperCase());
}

/**
 * A post-write failure is `unknown` only when we know the request is a non-idempotent write. An idempotency
 * key does not change the outcome (the effect may still have happened), only whether resending is safe.
 */
function writeOutcome(options: ClassifyOptions): ErrorOutcome {
  return options.method !== undefined && !isIdempotentRequest(options) ? 'unknown' : 'failed';
}

type HeaderReader = (name: string) => string | undefined;

function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate =
    (error as { status?: unknown; statusCode?: unknown }).status ??
    (error as { statusCode?: unknown }).statusCode;
  return typeof candidate === 'number' && Number.isInteger(candidate) && candidate >= 400 && candidate <= 599
    ? candidate
    : undefined;
}

function headersOf(error: unknown): HeaderReader | undefined {
  const headers = (error as { headers?: unknown }).headers;
  if (headers === null || typeof headers !== 'object') return undefined;
  if (typeof (headers as Headers).get === 'function') {
    return (name) => (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, unknown>;
  return (name) => {
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === name) {
        const value = record[key];
        return Array.isArray(value) ? String(value[0]) : value === undefined ? undefined : String(value);
      }
    }
    return undefined;
  };
}

function readRetryAfter(headers: HeaderReader | undefined, nowMs: number): number | undefined {
  if (headers === undefined) return undefined;
  // `retry-after-ms` (sent by OpenAI-compatible APIs) is more precise than whole seconds when present.
  const ms = headers('retry-after-ms');
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  return parseRetryAfter(headers('retry-after'), nowMs);
}

/** One error of a `cause` chain, with the fields Node and undici put on their errors. */
interface ChainLink {
  readonly code?: unknown;
  readonly syscall?: unknown;
  readonly cause?: unknown;
}

/**
 * The error and its `cause`s, outermost first (bounded, so cycle-safe). A BreakwaterError in the chain is
 * kept, but its `code` is ours, not a Node/undici one, so it is hidden from the code lookups.
 */
function causeChain(error: unknown): ChainLink[] {
  const chain: ChainLink[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const link = current as ChainLink;
    chain.push(isBreakwaterError(current) ? { cause: link.cause } : link);
    current = link.cause;
  }
  return chain;
}

/** The first listed Node/undici error code along the chain, with its syscall. */
function listedCodeOf(chain: readonly ChainLink[]): { code: string; syscall: unknown } | undefined {
  for (const { code, syscall } of chain) {
    if (typeof code === 'string' && (BEFORE_WRITE_CODES.has(code) || AFTER_WRITE_CODES.has(code))) {
      return { code, syscall };
    }
  }
  return undefined;
}

/**
 * True for a Breakwater timeout that fired while the call was in flight: `timeout` always, and
 * `deadline_exceeded` when `details.timeout_ms` > 0 (0 or absent: it failed fast, nothing was called).
 */
function firedInFlight(error: BreakwaterError): boolean {
  if (error.code === 'timeout') return true;
  if (error.code !== 'deadline_exceeded') return false;
  const ms = error.details?.['timeout_ms'];
  return typeof ms === 'number' && ms > 0;
}

/** undici's wrapper around a failed request (the real failure, when it has one, is its `cause`). */
function isFetchFailed(error: unknown): boolean {
  return error instanceof TypeError && error.message === 'fetch failed';
}

/** TLS handshake and certificate failures: `ERR_SSL_*`, `ERR_TLS_*`, `CERT_*`, `*_CERT_*`, `*_CERT`, … */
function isTlsCode(code: string): boolean {
  return (
    code.startsWith('ERR_SSL_') ||
    code.startsWith('ERR_TLS_') ||
    /(?:^|_)CERT(?:_|$)/.test(code) ||
    TLS_VERIFY_CODES.has(code)
  );
}
