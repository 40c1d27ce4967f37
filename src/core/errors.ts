/**
 * The one error type Breakwater throws and returns. Codes are stable API (snake_case; see
 * docs/architecture.md#errors). Each code has a default kind, HTTP status and a sentence a model can say.
 */

/** How a failure should be treated: `transient` may succeed if retried, `permanent` will not, `fatal` is a bug. */
export type ErrorKind = 'transient' | 'permanent' | 'fatal';

/**
 * What we know about the side effect of the failed call: `failed` means it did not happen (or is known not
 * to have taken effect); `unknown` means it may have happened (the request was written, the answer was lost).
 */
export type ErrorOutcome = 'failed' | 'unknown';

interface CodeSpec {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly title: string;
  readonly sentence: string;
}

/** The stable error codes with their default kind, HTTP status, problem title and human sentence. */
export const ERROR_CODES = {
  timeout: {
    kind: 'transient',
    status: 504,
    title: 'Timed out',
    sentence: 'The service took too long to answer; try again shortly.',
  },
  deadline_exceeded: {
    kind: 'transient',
    status: 504,
    title: 'Deadline exceeded',
    sentence: 'The request ran out of time before it could finish; try again shortly.',
  },
  circuit_open: {
    kind: 'transient',
    status: 503,
    title: 'Circuit open',
    sentence: 'The service is temporarily unavailable after repeated failures; try again shortly.',
  },
  bulkhead_full: {
    kind: 'transient',
    status: 503,
    title: 'Bulkhead full',
    sentence: 'The service is busy with other requests right now; try again shortly.',
  },
  rate_limited: {
    kind: 'transient',
    status: 429,
    title: 'Rate limited',
    sentence: 'Too many requests were made in a short time; wait a moment before trying again.',
  },
  spend_limited: {
    kind: 'transient',
    status: 429,
    title: 'Spend limited',
    sentence: 'The spending limit for this period has been reached; try again when the period resets.',
  },
  upstream_unavailable: {
    kind: 'transient',
    status: 503,
    title: 'Upstream unavailable',
    sentence: 'A service this request depends on is unavailable right now; try again shortly.',
  },
  upstream_error: {
    kind: 'permanent',
    status: 502,
    title: 'Upstream error',
    sentence: 'A service this request depends on rejected it; retrying the same request will not help.',
  },
  outcome_unknown: {
    kind: 'transient',
    status: 504,
    title: 'Outcome unknown',
    sentence:
      'The request was sent but no answer came back, so it may or may not have taken effect; check its status before trying again.',
  },
  idempotency_key_missing: {
    kind: 'permanent',
    status: 400,
    title: 'Idempotency key missing',
    sentence: 'This request needs an Idempotency-Key header so it can be safely retried.',
  },
  idempotency_key_mismatch: {
    kind: 'permanent',
    status: 422,
    title: 'Idempotency key mismatch',
    sentence: 'This idempotency key was already used for a different request; use a new key.',
  },
  idempotency_in_progress: {
    kind: 'transient',
    status: 409,
    title: 'Idempotent request in progress',
    sentence: 'The same request is still being processed; wait for it to finish before retrying.',
  },
  idempotency_key_invalid: {
    kind: 'permanent',
    status: 400,
    title: 'Idempotency key invalid',
    sentence:
      'The Idempotency-Key header must be one string of 1 to 255 visible characters; send it once, with a valid key.',
  },
  invalid_signature: {
    kind: 'permanent',
    status: 401,
    title: 'Invalid signature',
    sentence: 'The request signature could not be verified.',
  },
  stale_timestamp: {
    kind: 'permanent',
    status: 401,
    title: 'Stale timestamp',
    sentence: 'The request timestamp is outside the accepted tolerance.',
  },
  payload_too_large: {
    kind: 'permanent',
    status: 413,
    title: 'Payload too large',
    sentence: 'The request body is larger than allowed.',
  },
  invalid_payload: {
    kind: 'permanent',
    status: 400,
    title: 'Invalid payload',
    sentence: 'The request body is not valid.',
  },
  overloaded: {
    kind: 'transient',
    status: 503,
    title: 'Overloaded',
    sentence: 'The system is overloaded right now; try again shortly.',
  },
  not_found: {
    kind: 'permanent',
    status: 404,
    title: 'Not found',
    sentence: 'The requested item does not exist.',
  },
  canceled: {
    kind: 'permanent',
    status: 499,
    title: 'Canceled',
    sentence: 'The request was canceled before it finished.',
  },
  unauthorized: {
    kind: 'permanent',
    status: 401,
    title: 'Unauthorized',
    sentence: 'The request is not authorized.',
  },
  handler_failed: {
    kind: 'transient',
    status: 500,
    title: 'Handler failed',
    sentence:
      'The task failed with an unexpected error in its own code, not because a service it depends on was unavailable; another try may work, but if it keeps failing it needs a fix.',
  },
  input_timeout: {
    kind: 'permanent',
    status: 408,
    title: 'Input timed out',
    sentence: 'Nobody answered the question the task asked in time, so the task stopped.',
  },
  input_not_awaited: {
    kind: 'permanent',
    status: 409,
    title: 'Input not awaited',
    sentence: 'The task is not waiting for this answer: it asked no question, or another one.',
  },
  input_unavailable: {
    kind: 'permanent',
    status: 412,
    title: 'Input unavailable',
    sentence:
      'The request needs an answer from the user, but this client cannot be asked (it did not declare the capability), or it could not answer.',
  },
  internal_error: {
    kind: 'fatal',
    status: 500,
    title: 'Internal error',
    sentence: 'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
  },
} as const satisfies Record<string, CodeSpec>;

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Options to construct a {@link BreakwaterError}; anything omitted takes the code's default. */
export interface BreakwaterErrorOptions {
  /** Human message; defaults to the code's sentence (with the retry hint when `retryAfterMs` is set). */
  message?: string;
  kind?: ErrorKind;
  /** HTTP status; defaults per code (e.g. `circuit_open` → 503, `rate_limited` → 429). */
  status?: number;
  /** When the caller may try again, in ms from now. */
  retryAfterMs?: number;
  /** Default `failed`; `outcome_unknown` defaults to `unknown`. */
  outcome?: ErrorOutcome;
  /** The operation this failure belongs to, when there is one (docs/operations.md#the-operation-ledger). */
  operationId?: string;
  /** The name of the dependency or policy that produced it (e.g. `gift-service`). */
  source?: string;
  /** Machine-readable extra detail, serialized into problem+json. Never put secrets here. */
  details?: Readonly<Record<string, unknown>>;
  cause?: unknown;
}

/**
 * The error every Breakwater rejection is. `code` is stable; `kind` says whether a retry can help;
 * `status` is the HTTP status it maps to; `retryAfterMs` (ms) says when; `outcome` says whether the side
 * effect may have happened.
 */
export class BreakwaterError extends Error {
  /** Always `BreakwaterError` (set once on the prototype, not per instance). */
  declare readonly name: 'BreakwaterError';
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly status: number;
  readonly retryAfterMs: number | undefined;
  readonly outcome: ErrorOutcome;
  readonly operationId: string | undefined;
  readonly source: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ErrorCode, options: BreakwaterErrorOptions = {}) {
    const spec: CodeSpec = ERROR_CODES[code];
    const message = options.message ?? sentenceFor(code, options.retryAfterMs);
    // Only an error that has a cause gets an own `cause` property (ES2022 error cause).
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.kind = options.kind ?? spec.kind;
    this.status = options.status ?? spec.status;
    this.retryAfterMs = options.retryAfterMs;
    this.outcome = options.outcome ?? (code === 'outcome_unknown' ? 'unknown' : 'failed');
    this.operationId = options.operationId;
    this.source = options.source;
    this.details = options.details;
  }

  /**
   * A copy with `details` merged over this error's own (the new keys win): the same code, message, kind,
   * status, retryAfterMs, outcome, operationId and source. Its `cause` is this error's cause, or this error
   * when it has none. For a layer that passes an error on with its own context (the AI gateway's route, step
   * and failed steps).
   */
  withDetails(details: Readonly<Record<string, unknown>>): BreakwaterError {
    return new BreakwaterError(this.code, {
      message: this.message,
      kind: this.kind,
      status: this.status,
      retryAfterMs: this.retryAfterMs,
      outcome: this.outcome,
      operationId: this.operationId,
      source: this.source,
      details: { ...this.details, ...details },
      cause: this.cause ?? this,
    });
  }

  /**
   * Builds the error without a stack trace. For fast-fail paths (an open breaker, a full bulkhead) that
   * reject thousands of calls a second: capturing the stack is most of the cost, and it would only point
   * into the policy. `Error.stackTraceLimit` is restored whatever happens.
   */
  static withoutStack(code: ErrorCode, options?: BreakwaterErrorOptions): BreakwaterError {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new BreakwaterError(code, options);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  /**
   * True when the caller may try the same request again later (after `retryAfterMs` when set):
   * `kind === 'transient'` and `outcome === 'failed'`. After an `unknown` outcome the effect may have happened,
   * so this is false: reconcile first. This is the caller's view (problem+json `retryable`); whether our own
   * policies retry automatically is `classify(error).retryable`, which is also false for our own
   * `rate_limited` / `spend_limited` (docs/architecture.md#classification).
   */
  get retryable(): boolean {
    return this.kind === 'transient' && this.outcome === 'failed';
  }
}

Object.defineProperty(BreakwaterError.prototype, 'name', {
  value: 'BreakwaterError',
  writable: true,
  enumerable: false,
  configurable: true,
});

/** True when `value` is a {@link BreakwaterError} (also across duplicated module copies). */
export function isBreakwaterError(value: unknown): value is BreakwaterError {
  return (
    value instanceof BreakwaterError ||
    (value instanceof Error &&
      value.name === 'BreakwaterError' &&
      isErrorCode((value as Error & { code?: unknown }).code))
  );
}

/** True when `code` is one of the stable codes. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, code);
}

/**
 * The sentence a model can say to a user for `code`, with "in about N seconds" when a retry hint is known.
 * Example: `sentenceFor('circuit_open', 20_000)` →
 * "The service is temporarily unavailable after repeated failures; try again in about 20 seconds."
 * `outcome_unknown` never gets a hint: its advice is to check the status, not to try again.
 */
export function sentenceFor(code: ErrorCode, retryAfterMs?: number): string {
  const base: string = ERROR_CODES[code].sentence;
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0) return base;
  if (code === 'outcome_unknown') return base;
  const hint = `try again in about ${humanDuration(retryAfterMs)}`;
  const vague = /try again (shortly|when the period resets)|wait a moment before trying again/;
  if (vague.test(base)) return base.replace(vague, hint);
  return `${base.slice(0, -1)}; ${hint}.`;
}

/**
 * `sentence` with its vague "try again shortly" said as "try again in about N seconds" (or minutes), worded and
 * rounded as {@link sentenceFor} does, when `retryAfterMs` (ms) is a finite number > 0. Any other sentence,
 * and any sentence when no wait is known (`undefined`, `null`, 0, NaN), is returned unchanged. For sentences
 * that are not a code's own: a dependency's (upstream/) or a stored job error's (jobs/).
 */
export function withRetryHint(sentence: string, retryAfterMs: number | null | undefined): string {
  if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0)
    return sentence;
  if (!sentence.includes(SHORTLY)) return sentence;
  return sentence.replace(SHORTLY, `try again in about ${humanDuration(retryAfterMs)}`);
}

const SHORTLY = 'try again shortly';

/** `ms` as a reader says it: "1 second", "45 seconds" (under 90 s, rounded up, at least 1), else "3 minutes". */
export function humanDuration(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  if (seconds < 90) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

/**
 * Whether `error` is a host server's request timeout: Fastify's `handlerTimeout` and `createServer`'s own
 * timeout both raise Fastify's `FST_ERR_HANDLER_TIMEOUT` error (Fastify's error codes reference), so a route's
 * error handler recognizes either.
 */
export function isRequestTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'FST_ERR_HANDLER_TIMEOUT';
}

/**
 * The answer to a request whose body had not fully arrived when the server's request timeout passed: 408
 * `timeout`, `Retry-After: 1`. Nothing ran, so it is safe to send again (RFC 9110, section 15.5.9); the
 * caller also closes the half-read connection.
 * @param source who answers (`server`, `ai-gateway`).
 */
export function requestNotReceived(source: string): BreakwaterError {
  return new BreakwaterError('timeout', {
    status: 408,
    message: 'The request did not arrive in time, so it was not processed; send it again.',
    retryAfterMs: 1_000,
    source,
  });
}
