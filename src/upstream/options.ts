/**
 * Validation of {@link UpstreamOptions} and construction of the upstream's policies, once, at startup: every
 * bad option, the policies' own included, is reported at once in one OptionsError owned by `createUpstream`
 * (`createUpstream: timeoutMs must be a finite number > 0, got 0; bulkhead.maxConcurrent must be …`).
 */
import { Pool, type Dispatcher } from 'undici';
import {
  Log,
  OptionsError,
  defineOptions,
  o,
  systemClock,
  type Clock,
  type Logger,
  type OptionProblem,
  type Parsed,
  type Report,
  type Schema,
} from '../core/index.js';
import {
  BulkheadPolicy,
  CircuitBreakerPolicy,
  ConsecutiveWindow,
  RetryPolicy,
  TimeoutPolicy,
  type Policy,
} from '../policy/index.js';
import { DependencyErrors, ERRORS_SCHEMA, SNAKE_CASE } from './dependency-errors.js';
import { SHARED_STORE_SHAPE, loggerSchema } from './shared-breaker.js';
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
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const falseOrObject = (v: unknown): boolean => v === false || isObject(v);

/**
 * The options as declared; `baseUrl` and `headers` are checked in the cross-option step (a URL with
 * credentials is reported by its origin only), the policies' options by the policies themselves.
 */
const SHAPE = {
  name: o.custom<string>(
    (v) => typeof v === 'string' && SNAKE_CASE.test(v),
    "a snake_case name such as 'gift'",
  ),
  baseUrl: o.any<string | URL>(),
  timeoutMs: o.number().positive(),
  deadlineMarginMs: o.number().nonnegative().default(UPSTREAM_DEFAULTS.deadlineMarginMs),
  bulkhead: o.record<UpstreamBulkheadOptions>('an object or left out').optional(),
  breaker: o
    .custom<UpstreamBreakerOptions | false>(
      falseOrObject,
      'false, an object { consecutiveFailures?, openMs?, … } or left out',
    )
    .optional(),
  retry: o
    .custom<UpstreamRetryOptions | false>(
      falseOrObject,
      'false, an object { maxAttempts?, backoff?, … } or left out',
    )
    .optional(),
  headers: o.record<Readonly<Record<string, string>>>('an object or left out').optional(),
  errors: ERRORS_SCHEMA,
  maxResponseBytes: o.number().int().min(1).default(UPSTREAM_DEFAULTS.maxResponseBytes),
  dispatcher: o.methods<Dispatcher>('an undici Dispatcher (Agent, Pool, …)', 'request').optional(),
  clock: o.clock(),
  logger: loggerSchema,
};

/** The breaker's shorthands and `shared`, checked before the breaker is built. */
const BREAKER_SHORTHANDS = {
  consecutiveFailures: o.number().int().min(1).default(UPSTREAM_DEFAULTS.breaker.consecutiveFailures),
  openMs: o.number().positive().default(UPSTREAM_DEFAULTS.breaker.openMs),
  shared: o.object(SHARED_STORE_SHAPE, 'an object { store, refreshMs? } or left out').optional(),
};

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

type Options = Parsed<typeof SHAPE>;
/** What the cross-option step builds: the parts whose checks are the policies' own. */
interface Built {
  url: URL;
  headers: Record<string, string>;
  policies: UpstreamPolicies;
  sharedBreaker: Required<UpstreamSharedBreakerOptions> | undefined;
  errors: DependencyErrors;
}

/**
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createUpstream`) naming every bad option;
 *   a policy's own problems are named under its option (`bulkhead.maxConcurrent`, `retry.maxAttempts`).
 */
export function resolveUpstream(options: UpstreamOptions): ResolvedUpstream {
  let built: Built | undefined;
  // Made per call to hand the built policies back: once per upstream, never per request.
  const parse = defineOptions<UpstreamOptions>()(OWNER, SHAPE, (parsed, report) => {
    built = build(parsed, report);
  });
  const parsed = parse(options);
  const { url, headers, policies, sharedBreaker, errors } = built!;
  const { bulkhead, retry, breaker, timeout } = policies;
  const present = (list: (Policy | undefined)[]): Policy[] => list.filter((p) => p !== undefined);
  return {
    name: parsed.name,
    origin: url.origin,
    basePath: url.pathname.replace(/\/+$/, ''),
    baseUrl: url.origin + url.pathname.replace(/\/+$/, ''),
    headers,
    maxResponseBytes: parsed.maxResponseBytes,
    clock: parsed.clock,
    log: new Log(parsed.logger),
    logger: parsed.logger,
    sharedBreaker,
    // One keep-alive pool per upstream: its sockets are reused across requests to this origin only.
    dispatcher: parsed.dispatcher ?? new Pool(url.origin),
    ownsDispatcher: parsed.dispatcher === undefined,
    policies,
    errors,
    safe: present([bulkhead, retry, breaker, timeout]),
    writes: present([bulkhead, breaker, timeout]),
  };
}

/**
 * Checks what the schemas cannot and builds the policies, reporting their problems as this upstream's
 * options. Runs with bad values too (the parse throws afterwards): a policy gets a stand-in name and clock
 * when those are bad, and their problems are not repeated under the policy's option.
 */
function build(p: Options, report: Report): Built {
  const url = baseUrlOf(p.baseUrl, report);
  const headers = headersOf(p.headers, report);
  const name = typeof p.name === 'string' && SNAKE_CASE.test(p.name) ? p.name : 'upstream';
  const clock = isObject(p.clock) && typeof p.clock.now === 'function' ? p.clock : systemClock;
  const margin = p.deadlineMarginMs;
  const bulkhead =
    p.bulkhead === undefined || !isObject(p.bulkhead)
      ? undefined
      : nested(report, 'bulkhead', () => {
          const { maxConcurrent, maxQueue, queueTimeoutMs } = p.bulkhead!;
          return new BulkheadPolicy({ maxConcurrent, maxQueue, queueTimeoutMs, name, clock });
        });
  const retry =
    isObject(p.retry) || p.retry === undefined ? retryOf(p.retry, name, margin, clock, report) : undefined;
  const given = isObject(p.breaker) || p.breaker === undefined ? (p.breaker ?? {}) : undefined;
  const shorthands = given === undefined ? undefined : checked(report, 'breaker.', BREAKER_SHORTHANDS, given);
  const breaker =
    given === undefined || shorthands === undefined
      ? undefined
      : breakerOf(given, shorthands, name, clock, report);
  const timeout = nested(
    report,
    '',
    () => new TimeoutPolicy({ timeoutMs: p.timeoutMs, deadlineMarginMs: margin, name, clock }),
  );
  return {
    url: url!,
    headers,
    policies: { bulkhead, retry, breaker, timeout: timeout! },
    sharedBreaker: shorthands?.shared === undefined ? undefined : { ...shorthands.shared },
    errors: new DependencyErrors(name, p.errors, clock),
  };
}

/** Options of the parts that are the upstream's own, never reported again under a policy's option. */
const OWN = new Set(['name', 'clock', 'deadlineMarginMs']);

/**
 * Runs `make` (a policy's constructor) and reports its OptionsError's problems as `${prefix}.${option}`.
 * @returns what `make` built, or undefined when it refused its options.
 */
function nested<T>(
  report: Report,
  prefix: string,
  make: () => T,
  rename: Record<string, string> = {},
): T | undefined {
  try {
    return make();
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    for (const { option, rule, value } of error.problems) {
      if (OWN.has(option)) continue;
      report(rename[option] ?? (prefix === '' ? option : `${prefix}.${option}`), rule, value);
    }
    return undefined;
  }
}

/** Checks `value` with a nested shape's schemas, reporting its problems; undefined when there was one. */
function checked<S extends Record<string, Schema<unknown, never>>>(
  report: Report,
  prefix: string,
  shape: S,
  value: Record<string, unknown>,
): Parsed<S> | undefined {
  const problems: OptionProblem[] = [];
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(shape)) out[key] = shape[key]!.check(value[key], prefix + key, problems);
  for (const problem of problems) report(problem.option, problem.rule, problem.value);
  return problems.length === 0 ? (out as Parsed<S>) : undefined;
}

/** The base URL, or undefined when it is reported (by its origin only when it carries credentials). */
function baseUrlOf(value: unknown, report: Report): URL | undefined {
  let url: URL;
  try {
    url = new URL(value instanceof URL ? value.href : (value as string));
  } catch {
    report('baseUrl', 'an absolute http: or https: URL', value);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    report('baseUrl', 'an http: or https: URL', value);
  } else if (url.username !== '' || url.password !== '') {
    // They would end up in logs and errors; credentials belong in `headers`.
    report('baseUrl', 'a URL without credentials (send them in headers)', url.origin);
  } else if (url.search !== '' || url.hash !== '') {
    report('baseUrl', 'a URL without query or fragment', value);
  } else return url;
  return undefined;
}

/** The headers sent with every request, lower-case names, `accept` defaulted; bad ones reported. */
function headersOf(given: unknown, report: Report): Record<string, string> {
  const headers: Record<string, string> = { accept: UPSTREAM_DEFAULTS.accept };
  if (!isObject(given)) return headers;
  for (const [key, value] of Object.entries(given)) {
    if (!HEADER_NAME.test(key)) report('headers', 'valid header names', key);
    else if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      report(`headers.${key}`, 'a string without CR, LF or NUL', value);
    } else headers[key.toLowerCase()] = value;
  }
  return headers;
}

function retryOf(
  given: UpstreamRetryOptions | undefined,
  name: string,
  marginMs: number,
  clock: Clock,
  report: Report,
): RetryPolicy | undefined {
  return nested(
    report,
    'retry',
    () =>
      new RetryPolicy({
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
      }),
  );
}

function breakerOf(
  given: UpstreamBreakerOptions,
  { consecutiveFailures, openMs }: { consecutiveFailures: number; openMs: number },
  name: string,
  clock: Clock,
  report: Report,
): CircuitBreakerPolicy | undefined {
  const { consecutiveFailures: threshold, window, openMs: _openMs, shared: _shared, ...rest } = given;
  if (threshold !== undefined && window !== undefined) {
    report('breaker.window', 'left out when breaker.consecutiveFailures is set', window);
    return undefined;
  }
  return nested(
    report,
    'breaker',
    () =>
      new CircuitBreakerPolicy({
        ...rest,
        window: window ?? new ConsecutiveWindow(consecutiveFailures),
        openDurationMs: openMs,
        name,
        clock,
      }),
    { openDurationMs: 'breaker.openMs' },
  );
}
