/**
 * The shapes of an upstream client: its options, a request, a response and its events. Kept apart from the
 * client so `upstream.ts` stays about behaviour.
 */
import type { Dispatcher } from 'undici';
import type { Clock, Disposable, ErrorCode, Listener, Logger } from '../core/index.js';
import type {
  BreakerWindow,
  BulkheadOptions,
  BulkheadPolicy,
  CircuitBreakerOptions,
  CircuitBreakerPolicy,
  CircuitBreakerStatus,
  CircuitStateChange,
  RetryOptions,
  RetryPolicy,
  TimeoutPolicy,
} from '../policy/index.js';
import type { CounterStore } from '../store/index.js';

/** Bulkhead of an upstream: the policy's options without `name` and `clock` (the upstream's are used). */
export type UpstreamBulkheadOptions = Omit<BulkheadOptions, 'name' | 'clock'>;

/**
 * Sharing of an upstream's breaker state with the same-named upstreams of other instances
 * (docs/upstream.md#sharing-the-breaker): see
 * `shareBreakerState`. Each instance keeps its own breaker and window; an open, an isolation and a close
 * decided by one reach the others within `refreshMs`.
 */
export interface UpstreamSharedBreakerOptions {
  /** `store.counters` of the store every instance opens (SQLite file or PostgreSQL); one row per upstream. */
  store: CounterStore;
  /** How often the shared state is read, ms (integer >= 1, default 1 000). */
  refreshMs?: number;
}

/**
 * Circuit breaker of an upstream: the policy's options without `name` and `clock`, plus two shorthands and
 * `shared`. Give `consecutiveFailures` or a `window`, not both.
 */
export interface UpstreamBreakerOptions extends Omit<
  CircuitBreakerOptions,
  'name' | 'clock' | 'window' | 'openDurationMs'
> {
  /** Opens after this many counted failures in a row (integer >= 1, default 5). */
  consecutiveFailures?: number;
  /** A window strategy instead of `consecutiveFailures` (failure or slow-call rate); one per upstream. */
  window?: BreakerWindow;
  /** Open period before half-open, ms (default 30 000): the breaker's `openDurationMs`. */
  openMs?: number;
  /**
   * Default: none (the breaker is per process). Given: its state is shared through the store, under the key
   * `breaker:<upstream name>`, until `close()`; a store that fails is logged and the breaker stays per process.
   */
  shared?: UpstreamSharedBreakerOptions;
}

/**
 * Retry of an upstream. It applies only to requests that are safe to send twice: idempotent methods (GET,
 * HEAD, OPTIONS, PUT, DELETE), writes carrying an idempotency key, and requests marked `idempotent: true`.
 * Other writes (a POST or PATCH without a key) are never retried.
 */
export type UpstreamRetryOptions = Pick<
  RetryOptions,
  'maxAttempts' | 'backoff' | 'maxDelayMs' | 'shouldRetry'
>;

/** A dependency-specific error code and the sentence a model can say to a user. */
export interface DependencyErrorText {
  /** snake_case, e.g. `gift_service_timeout`. */
  code?: string;
  /** e.g. "The gift recommendation service did not answer in time; try again shortly." */
  sentence?: string;
}

/**
 * Overrides of the dependency-specific codes and sentences, per class of what happened (docs/upstream.md,
 * "Errors"); each default names the upstream (`<name>`):
 * - `timeout`: the attempt's limit or the deadline ran out, or the upstream answered 408/504 (`timeout`,
 *   `deadline_exceeded`); default `<name>_service_timeout`, "The <name> service did not answer in time; …";
 * - `open`: the breaker is open (`circuit_open`); default `<name>_service_unavailable`, "… is temporarily
 *   unavailable after repeated failures; try again in about N seconds" (the breaker's remaining open time);
 * - `busy`: our bulkhead is full (`bulkhead_full`) or the upstream answered 429/503 (`upstream_unavailable`);
 *   default `<name>_service_busy`, "… is busy right now; …" (with the wait when `Retry-After` gave one);
 * - `unavailable`: any other transient failure: a 500, 502 or 425, a reset or refused connection, DNS
 *   (`upstream_unavailable`); default `<name>_service_failing`, "… is not working right now; …";
 * - `error`: permanent failures (`upstream_error`: a 4xx other than 408/425/429, an unusable answer);
 *   default `<name>_service_error`, "The <name> service rejected the request.", followed by the upstream's
 *   short `detail` when it gave one ("…: No product has the id "zzz"."); a failure that is not an answer
 *   to the request (invalid JSON, too large, a redirect, a TLS failure) gets "The <name> service could not be
 *   used for this request; retrying it will not help." unless `error.sentence` is given;
 * - `unknown`: `outcome_unknown` (a write may have taken effect); default `<name>_outcome_unknown`.
 * A sentence containing "try again shortly" gets "try again in about N seconds" when a wait is known (core's
 * `sentenceFor` wording). Keep each sentence to its class: "in time" only for `timeout`, "busy" or
 * "overloaded" only for `busy`, "repeated failures" only for `open`.
 */
export interface UpstreamErrorTexts {
  timeout?: DependencyErrorText;
  open?: DependencyErrorText;
  busy?: DependencyErrorText;
  unavailable?: DependencyErrorText;
  error?: DependencyErrorText;
  unknown?: DependencyErrorText;
}

/** Options of {@link createUpstream}; validated at construction (an OptionsError names every bad one). */
export interface UpstreamOptions {
  /** Names the dependency in codes, errors, events and policies: snake_case, e.g. `gift`. */
  name: string;
  /** `http:` or `https:` URL; a path (`/api/v1`) is prefixed to every request path. No query, no credentials. */
  baseUrl: string | URL;
  /** Limit of each attempt in ms (> 0), response body included; shortened to fit the ambient deadline. */
  timeoutMs: number;
  /** Ms kept back from the ambient deadline by the timeout and the retry (default 50). */
  deadlineMarginMs?: number;
  /** Default: none (no concurrency limit). */
  bulkhead?: UpstreamBulkheadOptions;
  /** Default: 5 consecutive failures, open 30 s. `false`: no breaker. */
  breaker?: UpstreamBreakerOptions | false;
  /** Default: 3 attempts (first included), exponential backoff from 200 ms with full jitter. `false`: none. */
  retry?: UpstreamRetryOptions | false;
  /** Headers sent with every request (names are case-insensitive; a request's own headers win). */
  headers?: Readonly<Record<string, string>>;
  /** Dependency-specific codes and sentences (see {@link UpstreamErrorTexts}). */
  errors?: UpstreamErrorTexts;
  /** Largest successful response body read, in bytes (default 10 MiB); larger is `upstream_error`. */
  maxResponseBytes?: number;
  /**
   * The undici dispatcher to send through (an `Agent`, a `Pool`, a mock). Default: one keep-alive `Pool` for
   * the base URL's origin, owned by the upstream and closed by `close()`; a given one is never closed.
   */
  dispatcher?: Dispatcher;
  clock?: Clock;
  /**
   * Where failed requests are logged (pino-compatible: `app.log` fits). Default: the process logger
   * (`setLogger`), and none until one is set.
   */
  logger?: Logger;
}

/** Query parameters; `undefined` and `null` are left out, arrays repeat the name. */
export type UpstreamQuery = Readonly<
  Record<string, string | number | boolean | null | undefined | readonly (string | number | boolean)[]>
>;

/** Per-request options: everything but method, path and body (the shorthands take these). */
export interface UpstreamRequestOptions {
  query?: UpstreamQuery;
  /** Extra headers for this request (case-insensitive names). */
  headers?: Readonly<Record<string, string>>;
  /** Sent as `Idempotency-Key` on writes (POST, PUT, PATCH, DELETE) only; makes the request retryable. */
  idempotencyKey?: string;
  /** Marks a request as safe to send twice (a search done with POST): it is then retried like a GET. */
  idempotent?: boolean;
  /**
   * `false`: send this request once, whatever its method or key (the upstream's retry is skipped; its
   * bulkhead, breaker and timeout still apply). For a caller that decides resends itself, such as the
   * operation ledger, which resends a write only after a status lookup found nothing accepted. Default: the
   * upstream's retry applies to requests safe to send twice.
   */
  retry?: false;
  /** Sent as `X-Correlation-ID`; default a new UUIDv7. The same value on every attempt. */
  correlationId?: string;
  /** Aborting it aborts the request wherever it is (queued, waiting to retry, in flight): `canceled`. */
  signal?: AbortSignal;
}

/** One request: method, path below the base URL, and a JSON body. */
export interface UpstreamRequest extends UpstreamRequestOptions {
  /** An HTTP method token; upper-cased. */
  method: string;
  /** Starts with `/`; appended to the base URL's path. May carry its own query string. */
  path: string;
  /** Serialized with `JSON.stringify` and sent as `application/json` (unless a content-type is given). */
  body?: unknown;
}

/** A 2xx answer. */
export interface UpstreamResponse<T = unknown> {
  status: number;
  /** Lower-case names, as undici gives them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed JSON when the content-type is JSON (`application/json`, `…+json`), else text; empty: `undefined`. */
  body: T;
  /** The `X-Correlation-ID` that was sent. */
  correlationId: string;
  /** Attempts made, 1 when no retry was needed. */
  attempts: number;
}

/** Emitted once per request when it ends; `code` is set on failure, `status` when an answer came back. */
export interface UpstreamResultEvent {
  readonly name: string;
  readonly method: string;
  /** The request path (without the base URL's path or the query). */
  readonly path: string;
  readonly status: number | undefined;
  readonly code: ErrorCode | undefined;
  readonly attempts: number;
  /** On the upstream's clock, ms. */
  readonly durationMs: number;
}

/** The policies an upstream built, for subscribing to their events (metrics) and reading their state. */
export interface UpstreamPolicies {
  readonly bulkhead: BulkheadPolicy | undefined;
  /** Used for requests safe to repeat only (see {@link UpstreamRetryOptions}). */
  readonly retry: RetryPolicy | undefined;
  readonly breaker: CircuitBreakerPolicy | undefined;
  readonly timeout: TimeoutPolicy;
}

/** The breaker's status plus its last transition, for `/readyz` and dashboards. */
export interface UpstreamBreakerStatus extends CircuitBreakerStatus {
  /** `null` until the first transition. */
  readonly lastTransition: CircuitStateChange | null;
}

/** An upstream's breaker as health checks see it. */
export interface UpstreamBreaker {
  readonly name: string;
  /** The policy itself: `isolate()`, `reset()`, events. */
  readonly policy: CircuitBreakerPolicy;
  state(): UpstreamBreakerStatus;
}

/**
 * An HTTP client for one dependency with its policies (bulkhead → retry → circuit breaker → timeout per
 * attempt → call). Every failure rejects with a `BreakwaterError` (see {@link createUpstream}).
 */
export interface Upstream {
  readonly name: string;
  /** The base URL, normalized (no trailing slash). */
  readonly baseUrl: string;
  /** `undefined` when built with `breaker: false`. */
  readonly breaker: UpstreamBreaker | undefined;
  readonly policies: UpstreamPolicies;
  /** Subscribe to the end of every request (metrics). */
  readonly onResult: (listener: Listener<UpstreamResultEvent>) => Disposable;
  request<T = unknown>(request: UpstreamRequest): Promise<UpstreamResponse<T>>;
  get<T = unknown>(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>>;
  post<T = unknown>(
    path: string,
    body?: unknown,
    options?: UpstreamRequestOptions,
  ): Promise<UpstreamResponse<T>>;
  put<T = unknown>(
    path: string,
    body?: unknown,
    options?: UpstreamRequestOptions,
  ): Promise<UpstreamResponse<T>>;
  patch<T = unknown>(
    path: string,
    body?: unknown,
    options?: UpstreamRequestOptions,
  ): Promise<UpstreamResponse<T>>;
  delete<T = unknown>(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>>;
  /**
   * Stops accepting requests (later ones reject with `upstream_unavailable`, reason `upstream_closed`), stops
   * sharing the breaker's state (`breaker.shared`), and closes the upstream's own dispatcher once requests in
   * flight end. Idempotent.
   */
  close(): Promise<void>;
}
