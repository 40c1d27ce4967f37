/**
 * Validation of {@link UpstreamOptions} and construction of the upstream's policies, once, at startup: a
 * bad option throws a RangeError naming it (`createUpstream: timeoutMs must be a finite number > 0, got 0`).
 */
import { Pool, type Dispatcher } from 'undici';
import {
  clockOption,
  finite,
  invalidOption,
  Log,
  loggerOption,
  optionalObject,
  POSITIVE,
  POSITIVE_INTEGER,
  NON_NEGATIVE,
  type Clock,
  type Logger,
} from '../core/index.js';
import {
  BulkheadPolicy,
  CircuitBreakerPolicy,
  ConsecutiveWindow,
  RetryPolicy,
  TimeoutPolicy,
  type Policy,
} from '../policy/index.js';
import { DependencyErrors, SNAKE_CASE } from './dependency-errors.js';
import { counterStoreOption, refreshMsOption } from './shared-breaker.js';
import type {
  UpstreamBreakerOptions,
  UpstreamBulkheadOptions,
  UpstreamOptions,
  UpstreamPolicies,
  UpstreamRetryOptions,
  UpstreamSharedBreakerOptions,
} from './types.js';

/** Defaults of {@link UpstreamOptions} (see docs/upstream.md for the full table). */
export const UPSTREAM_DEFAULTS = {
  deadlineMarginMs: 50,
  breaker: { consecutiveFailures: 5, openMs: 30_000 },
  /** With the retry policy's default backoff: exponential from 200 ms, ×2, full jitter, waits ≤ 30 s. */
  retry: { maxAttempts: 3 },
  maxResponseBytes: 10 * 1024 * 1024,
  /** Sent unless the upstream's or the request's headers set it. */
  accept: 'application/json',
} as const;

const OWNER = 'createUpstream';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Options with every default applied and every policy built. */
export interface ResolvedUpstream {
  readonly name: string;
  readonly origin: string;
  /** The base URL's path without its trailing slash (`''` for `/`). */
  readonly basePath: string;
  readonly baseUrl: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly maxResponseBytes: number;
  readonly clock: Clock;
  /** Where failures are logged: the `logger` option, else the process logger. */
  readonly log: Log;
  /** The `logger` option as given (checked). */
  readonly logger: Logger | undefined;
  /** `breaker.shared`, checked and with its default; undefined without a breaker or without sharing. */
  readonly sharedBreaker: Required<UpstreamSharedBreakerOptions> | undefined;
  readonly dispatcher: Dispatcher;
  readonly ownsDispatcher: boolean;
  readonly policies: UpstreamPolicies;
  readonly errors: DependencyErrors;
  /** For requests safe to send twice: bulkhead → retry → breaker → timeout. */
  readonly safe: readonly Policy[];
  /** For other writes: the same policies without retry. */
  readonly writes: readonly Policy[];
}

/** @throws RangeError naming the first bad option. */
export function resolveUpstream(options: UpstreamOptions): ResolvedUpstream {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(OWNER, 'options', 'an object', options);
  }
  const name = options.name;
  if (typeof name !== 'string' || !SNAKE_CASE.test(name)) {
    throw invalidOption(OWNER, 'name', "a snake_case name such as 'gift'", name);
  }
  const url = baseUrlOf(options.baseUrl);
  const clock = clockOption(OWNER, options.clock);
  const timeoutMs = finite(OWNER, 'timeoutMs', options.timeoutMs, POSITIVE);
  const marginMs = finite(
    OWNER,
    'deadlineMarginMs',
    options.deadlineMarginMs ?? UPSTREAM_DEFAULTS.deadlineMarginMs,
    NON_NEGATIVE,
  );
  const maxResponseBytes = finite(
    OWNER,
    'maxResponseBytes',
    options.maxResponseBytes ?? UPSTREAM_DEFAULTS.maxResponseBytes,
    POSITIVE_INTEGER,
  );
  const headers = headersOf(options.headers);
  const logger = loggerOption(OWNER, 'logger', options.logger);

  const given = options.dispatcher;
  if (given !== undefined && typeof (given as Partial<Dispatcher> | null)?.request !== 'function') {
    throw invalidOption(OWNER, 'dispatcher', 'an undici Dispatcher (Agent, Pool, …)', given);
  }

  const bulkhead = bulkheadOf(options.bulkhead, name, clock);
  const retry = retryOf(options.retry, name, marginMs, clock);
  const breaker = breakerOf(options.breaker, name, clock);
  const sharedBreaker = options.breaker === false ? undefined : sharedOf(options.breaker?.shared);
  const timeout = new TimeoutPolicy({ timeoutMs, deadlineMarginMs: marginMs, name, clock });
  const errors = new DependencyErrors(name, options.errors, clock);
  const present = (list: (Policy | undefined)[]): Policy[] => list.filter((p) => p !== undefined);

  return {
    name,
    origin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''),
    baseUrl: url.origin + url.pathname.replace(/\/+$/, ''),
    headers,
    maxResponseBytes,
    clock,
    log: new Log(logger),
    logger,
    sharedBreaker,
    // One keep-alive pool per upstream: its sockets are reused across requests to this origin only.
    dispatcher: given ?? new Pool(url.origin),
    ownsDispatcher: given === undefined,
    policies: { bulkhead, retry, breaker, timeout },
    errors,
    safe: present([bulkhead, retry, breaker, timeout]),
    writes: present([bulkhead, breaker, timeout]),
  };
}

function baseUrlOf(value: unknown): URL {
  let url: URL;
  try {
    url = new URL(value instanceof URL ? value.href : (value as string));
  } catch {
    throw invalidOption(OWNER, 'baseUrl', 'an absolute http: or https: URL', value);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidOption(OWNER, 'baseUrl', 'an http: or https: URL', value);
  }
  if (url.username !== '' || url.password !== '') {
    // They would end up in logs and errors; credentials belong in `headers`.
    throw invalidOption(OWNER, 'baseUrl', 'a URL without credentials (send them in headers)', url.origin);
  }
  if (url.search !== '' || url.hash !== '') {
    throw invalidOption(OWNER, 'baseUrl', 'a URL without query or fragment', value);
  }
  return url;
}

function headersOf(given: Readonly<Record<string, string>> | undefined): Record<string, string> {
  optionalObject(OWNER, 'headers', given);
  const headers: Record<string, string> = { accept: UPSTREAM_DEFAULTS.accept };
  for (const [key, value] of Object.entries(given ?? {})) {
    if (!HEADER_NAME.test(key)) throw invalidOption(OWNER, 'headers', 'valid header names', key);
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      throw invalidOption(OWNER, `headers.${key}`, 'a string without CR, LF or NUL', value);
    }
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

function bulkheadOf(
  given: UpstreamBulkheadOptions | undefined,
  name: string,
  clock: Clock,
): BulkheadPolicy | undefined {
  if (optionalObject(OWNER, 'bulkhead', given) === undefined) return undefined;
  const { maxConcurrent, maxQueue, queueTimeoutMs } = given!;
  return new BulkheadPolicy({ maxConcurrent, maxQueue, queueTimeoutMs, name, clock });
}

function retryOf(
  given: UpstreamRetryOptions | false | undefined,
  name: string,
  marginMs: number,
  clock: Clock,
): RetryPolicy | undefined {
  if (given === false) return undefined;
  optionalObject(OWNER, 'retry', given, 'false, an object { maxAttempts?, backoff?, … }');
  return new RetryPolicy({
    maxAttempts: given?.maxAttempts ?? UPSTREAM_DEFAULTS.retry.maxAttempts,
    backoff: given?.backoff,
    maxDelayMs: given?.maxDelayMs,
    shouldRetry: given?.shouldRetry,
    deadlineMarginMs: marginMs,
    // Only requests safe to send twice run under this policy (idempotent methods, idempotency keys), so a
    // failure after the request was written may be resent too.
    classifyOptions: { idempotencyKey: true },
    name,
    clock,
  });
}

function breakerOf(
  given: UpstreamBreakerOptions | false | undefined,
  name: string,
  clock: Clock,
): CircuitBreakerPolicy | undefined {
  if (given === false) return undefined;
  optionalObject(OWNER, 'breaker', given, 'false, an object { consecutiveFailures?, openMs?, … }');
  const { consecutiveFailures, window, openMs, shared: _shared, ...rest } = given ?? {};
  if (consecutiveFailures !== undefined && window !== undefined) {
    throw invalidOption(OWNER, 'breaker.window', 'left out when breaker.consecutiveFailures is set', window);
  }
  const threshold = finite(
    OWNER,
    'breaker.consecutiveFailures',
    consecutiveFailures ?? UPSTREAM_DEFAULTS.breaker.consecutiveFailures,
    POSITIVE_INTEGER,
  );
  return new CircuitBreakerPolicy({
    ...rest,
    window: window ?? new ConsecutiveWindow(threshold),
    openDurationMs: finite(OWNER, 'breaker.openMs', openMs ?? UPSTREAM_DEFAULTS.breaker.openMs, POSITIVE),
    name,
    clock,
  });
}

/** Checks `breaker.shared` (the sharing itself starts in `createUpstream`). */
function sharedOf(
  given: UpstreamSharedBreakerOptions | undefined,
): Required<UpstreamSharedBreakerOptions> | undefined {
  if (optionalObject(OWNER, 'breaker.shared', given, 'an object { store, refreshMs? }') === undefined) {
    return undefined;
  }
  const store = counterStoreOption(OWNER, 'breaker.shared.store', given!.store);
  const refreshMs = refreshMsOption(OWNER, 'breaker.shared.refreshMs', given!.refreshMs);
  return { store, refreshMs };
}
