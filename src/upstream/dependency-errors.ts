import {
  BreakwaterError,
  classify,
  isBreakwaterError,
  o,
  withRetryHint,
  type Classification,
  type Clock,
  type ErrorCode,
} from '../core/index.js';
import type { UpstreamErrorTexts } from './types.js';

/** The classes of failure a dependency-specific code and sentence exist for (see UpstreamErrorTexts). */
type Category = keyof Required<UpstreamErrorTexts>;

interface ResolvedText {
  readonly code: string;
  readonly sentence: string;
}

/**
 * Statuses with which a service says it is too busy to take the request now, so it did not process it:
 * 429 Too Many Requests (RFC 6585, section 4) and 503 Service Unavailable (RFC 9110, section 15.6.4).
 */
const BUSY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * The library's codes and sentences for the upstream `name`, per class (docs/upstream.md, "Errors"). Only
 * `timeout` sentences say "in time", only `busy` ones "busy", only `open` ones "repeated failures".
 */
export function defaultTexts(name: string): Readonly<Record<Category, ResolvedText>> {
  return {
    timeout: {
      code: `${name}_service_timeout`,
      sentence: `The ${name} service did not answer in time; try again shortly.`,
    },
    open: {
      code: `${name}_service_unavailable`,
      sentence: `The ${name} service is temporarily unavailable after repeated failures; try again shortly.`,
    },
    busy: {
      code: `${name}_service_busy`,
      sentence: `The ${name} service is busy right now; try again shortly.`,
    },
    unavailable: {
      code: `${name}_service_failing`,
      sentence: `The ${name} service is not working right now; try again shortly.`,
    },
    error: {
      code: `${name}_service_error`,
      sentence: `The ${name} service rejected the request.`,
    },
    unknown: {
      code: `${name}_outcome_unknown`,
      sentence: `The request to the ${name} service was sent but no confirmation came back, so it may or may not have taken effect; check its status before trying again.`,
    },
  };
}

/**
 * The default sentence of a permanent failure that is not the service's answer to the request (an answer
 * that could not be used: invalid JSON, too large, a redirect; a failed TLS handshake): nothing was rejected.
 */
function unusableSentence(name: string): string {
  return `The ${name} service could not be used for this request; retrying it will not help.`;
}

/** What the mapping needs to know about the request that failed. */
export interface FailedRequest {
  readonly method: string;
  /** The request carried an idempotency key (resending it is safe). */
  readonly keyed: boolean;
  /** The request was marked `idempotent: true` (a search sent as POST): read like an idempotent method. */
  readonly idempotent: boolean;
  readonly correlationId: string;
  readonly callerSignal: AbortSignal | undefined;
}

/**
 * A non-2xx answer, in the shape core's `classify` reads (`status`, `headers`). It lives only inside the
 * pipeline (retry reads its `Retry-After`, the breaker counts it); callers get a BreakwaterError instead.
 */
export class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Readonly<Record<string, string | string[] | undefined>>,
    /** The answer's body for a permanent failure (parsed JSON, or text), else `undefined`. */
    readonly body: unknown,
  ) {
    super(`the upstream answered HTTP ${status}`);
  }
}
UpstreamHttpError.prototype.name = 'UpstreamHttpError';

export const SNAKE_CASE = /^[a-z][a-z0-9_]*$/;

/** Codes whose errors are built on fast-fail paths: no stack trace (it would only point here). */
const FAST_FAIL: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['circuit_open', 'bulkhead_full']);

/**
 * Turns whatever a request failed with (a policy's rejection, an undici error, a non-2xx answer) into the
 * BreakwaterError the caller gets: the generic code programs branch on, `source` = the upstream's name, the
 * sentence of what happened as message and `details.dependency_code` (see {@link classOf}).
 */
export class DependencyErrors {
  private readonly texts: Readonly<Record<Category, ResolvedText>>;
  /** The sentence of a permanent failure that was not a 4xx/5xx answer (see `unusableSentence`). */
  private readonly unusable: string;

  /** @param texts the `errors` option, already checked with {@link ERRORS_SCHEMA}. */
  constructor(
    private readonly name: string,
    texts: UpstreamErrorTexts | undefined,
    private readonly clock: Clock,
  ) {
    const defaults = defaultTexts(name);
    const resolve = (key: Category): ResolvedText => ({
      code: texts?.[key]?.code ?? defaults[key].code,
      sentence: texts?.[key]?.sentence ?? defaults[key].sentence,
    });
    this.texts = {
      timeout: resolve('timeout'),
      open: resolve('open'),
      busy: resolve('busy'),
      unavailable: resolve('unavailable'),
      error: resolve('error'),
      unknown: resolve('unknown'),
    };
    // A given `error` sentence is the application's for every permanent failure.
    this.unusable = texts?.error?.sentence === undefined ? unusableSentence(name) : this.texts.error.sentence;
  }

  /**
   * The caller's error for `error`:
   * - the caller's signal aborted: its reason when that is a BreakwaterError (an outer layer's own error,
   *   kept as it is), else `canceled`;
   * - a bug (classify says `fatal`): `internal_error`;
   * - otherwise the code, class and sentence of what happened ({@link classOf}): `outcome_unknown` (a write
   *   cut off after it may have been written), `upstream_error` (the upstream rejected the request, with the
   *   answer's body as `details.upstream_body`), or a transient code (`timeout`, `deadline_exceeded`,
   *   `circuit_open`, `bulkhead_full`, `upstream_unavailable`) with `retryAfterMs` kept when a wait is known
   *   (an open breaker's remaining time, `Retry-After`) and said in the sentence ("try again in about N
   *   seconds", core's `sentenceFor` wording).
   */
  toError(error: unknown, request: FailedRequest): BreakwaterError {
    const signal = request.callerSignal;
    const correlation_id = request.correlationId;
    if (signal !== undefined && signal.aborted) {
      const reason: unknown = signal.reason;
      if (isBreakwaterError(reason)) return reason;
      return new BreakwaterError('canceled', {
        source: this.name,
        details: { correlation_id },
        cause: reason ?? error,
      });
    }
    const c = classify(error, {
      method: request.method,
      idempotencyKey: request.keyed,
      idempotent: request.idempotent,
      nowMs: this.clock.now(),
    });
    if (c.kind === 'fatal' || c.code === 'canceled') {
      const code = c.kind === 'fatal' ? 'internal_error' : 'canceled';
      return new BreakwaterError(code, {
        source: this.name,
        details: { reason: c.reason, correlation_id },
        cause: error,
      });
    }

    const category = classOf(c);
    // A 401/403 from the upstream means our credentials there are wrong, not the caller's: still the
    // upstream rejecting the request, not `unauthorized` towards our own caller.
    const code: ErrorCode =
      category === 'unknown' ? 'outcome_unknown' : category === 'error' ? 'upstream_error' : c.code;

    const details: Record<string, unknown> = { reason: c.reason };
    // Whether the request left: false only when provably not (connect refused, DNS, TLS handshake); a
    // caller that resends by itself (the operation ledger) treats anything else as possibly written.
    if (c.written !== undefined) details['written'] = c.written;
    if (isBreakwaterError(error) && error.details !== undefined) Object.assign(details, error.details);
    const answered = error instanceof UpstreamHttpError;
    if (answered) {
      details['upstream_status'] = error.status;
      if (error.body !== undefined) details['upstream_body'] = error.body;
    }
    const text = this.texts[category];
    details['dependency_code'] = text.code;
    details['correlation_id'] = correlation_id;

    // After an unknown outcome the advice is to check the status, and after a rejection to change the
    // request: neither is a wait.
    const retryAfterMs = category === 'unknown' || category === 'error' ? undefined : c.retryAfterMs;
    let message: string;
    if (category === 'error') {
      message = answered ? withUpstreamDetail(text.sentence, details['upstream_body']) : this.unusable;
    } else {
      message = category === 'unknown' ? text.sentence : withRetryHint(text.sentence, retryAfterMs);
    }
    const options = {
      message,
      kind: c.kind,
      outcome: c.outcome,
      retryAfterMs,
      source: this.name,
      details,
      cause: error,
    };
    return FAST_FAIL.has(code)
      ? BreakwaterError.withoutStack(code, options)
      : new BreakwaterError(code, options);
  }
}

/**
 * The class of what happened, read from the classification (so the code, the dependency code and the
 * sentence never disagree):
 * - `unknown`: outcome `unknown` (a write cut off after it may have been written: a reset, a response
 *   timeout, a 500/502/504 to a POST without `idempotent`);
 * - `error`: permanent (a 4xx other than 408/425/429, another permanent 5xx, an unusable answer, a TLS
 *   failure);
 * - `timeout`: `timeout` or `deadline_exceeded` (the attempt's limit or the deadline ran out; an upstream
 *   408 or 504, whose own wait ran out);
 * - `open`: `circuit_open`;
 * - `busy`: `bulkhead_full` (our own limit), or an upstream 429 or 503 (its limit);
 * - `unavailable`: any other transient failure (a 500, 502 or 425, a reset, a refused connection, DNS).
 */
function classOf(c: Classification): Category {
  if (c.outcome === 'unknown') return 'unknown';
  if (c.kind === 'permanent') return 'error';
  switch (c.code) {
    case 'timeout':
    case 'deadline_exceeded':
      return 'timeout';
    case 'circuit_open':
      return 'open';
    case 'bulkhead_full':
      return 'busy';
    default:
      return c.status !== undefined && BUSY_STATUSES.has(c.status) ? 'busy' : 'unavailable';
  }
}

/** One override: its code snake_case, its sentence not blank; each left out keeps the default. */
const TEXT_SCHEMA = o
  .object(
    {
      code: o
        .custom<string>((v) => typeof v === 'string' && SNAKE_CASE.test(v), 'a snake_case string')
        .optional(),
      sentence: o
        .custom<string>((v) => typeof v === 'string' && v.trim() !== '', 'a non-empty string')
        .optional(),
    },
    'an object { code?, sentence? } or left out',
  )
  .optional();

/** The `errors` option of an upstream ({@link UpstreamErrorTexts}); problems are named `errors.<class>.<field>`. */
export const ERRORS_SCHEMA = o
  .object(
    {
      timeout: TEXT_SCHEMA,
      open: TEXT_SCHEMA,
      busy: TEXT_SCHEMA,
      unavailable: TEXT_SCHEMA,
      error: TEXT_SCHEMA,
      unknown: TEXT_SCHEMA,
    },
    'an object or left out',
  )
  .optional();

/** Longest upstream `detail` quoted in a message; a longer one stays in `details.upstream_body` only. */
const MAX_QUOTED_DETAIL = 200;

/**
 * A rejection (4xx) says why when the upstream said so in a short RFC 9457 `detail` (or `message`): "The shop
 * could not accept this order: No product has the id "zzz"." A 4xx explanation is written for clients, so the
 * model may repeat it; anything long, multi-line or not a string is left out of the sentence.
 */
export function withUpstreamDetail(sentence: string, body: unknown): string {
  if (typeof body !== 'object' || body === null) return sentence;
  const { detail, message } = body as { detail?: unknown; message?: unknown };
  const said = typeof detail === 'string' ? detail : typeof message === 'string' ? message : undefined;
  if (said === undefined) return sentence;
  const text = said.trim();
  if (text === '' || text.length > MAX_QUOTED_DETAIL || /[\r\n]/.test(text)) return sentence;
  const base = sentence.replace(/[.\s]+$/, '');
  return `${base}: ${/[.!?]$/.test(text) ? text : `${text}.`}`;
}
