/**
 * The circuit breaker's options: their types, defaults, validation, and the default failure predicate.
 * Kept apart from the policy so `circuit-breaker.ts` stays about behaviour.
 */
import { classify, defineOptions, invalidOption, o, type Clock, type ErrorCode } from '../core/index.js';
import { ConsecutiveWindow, WINDOW_DEFAULTS, type BreakerWindow } from './breaker-windows.js';
import type { CircuitBreakerSnapshot, CircuitState } from './circuit-breaker-types.js';

/** Growth of the open period on each consecutive reopen: `min(maxMs, openDurationMs × multiplier^(n−1))`. */
export interface OpenBackoff {
  /** Factor per consecutive open (finite, >= 1); default 2. */
  multiplier?: number;
  /** Longest open period, ms (finite, >= `openDurationMs`). */
  maxMs: number;
}

/** Options of {@link CircuitBreakerPolicy}; validated at construction. */
export interface CircuitBreakerOptions {
  /** Names the dependency in errors, messages and events (a non-empty string, e.g. `gift-service`). */
  name?: string;
  /** When to open; default `new ConsecutiveWindow(5)`. One window per breaker. */
  window?: BreakerWindow;
  /** Open period before half-open, ms (finite, > 0); the base when `openBackoff` is set. */
  openDurationMs?: number;
  /** Grow the open period on each consecutive reopen; reset when the breaker closes. Default: fixed. */
  openBackoff?: OpenBackoff;
  /** Trial calls admitted at once in half-open (integer >= 1). */
  permittedCalls?: number;
  /** Trial successes needed to close (integer >= 1); default `permittedCalls`. */
  successesToClose?: number;
  /**
   * How long half-open trials may hold every slot, ms (finite, > 0): a call arriving when all slots are taken
   * and the oldest trial was admitted this long ago reopens the breaker (`trial_timeout`). Default: the
   * length of the open period that preceded the half-open state.
   */
  halfOpenMaxWaitMs?: number;
  /** Which errors count as failures; default {@link isDependencyFailure}. Other errors are not recorded. */
  isFailure?: (error: unknown) => boolean;
  /** Which returned values count as failures (they are still returned); default none. */
  isFailureResult?: (value: unknown) => boolean;
  /** Give `circuit_open` rejections a stack trace (costly on the fast-fail path); default false. */
  captureRejectionStack?: boolean;
  clock?: Clock;
}

/**
 * Defaults of {@link CircuitBreakerOptions}.
 *
 * | option | default |
 * |---|---|
 * | `name` | `circuit-breaker` (messages then say "The service …") |
 * | `window` | `new ConsecutiveWindow(5)`: 5 failures in a row |
 * | `openDurationMs` | 30 000 ms |
 * | `openBackoff` | none (fixed); `multiplier` 2 when set |
 * | `permittedCalls` | 1 |
 * | `successesToClose` | `permittedCalls` |
 * | `halfOpenMaxWaitMs` | the open period that preceded half-open (`openDurationMs`, grown by `openBackoff`) |
 * | `isFailure` | {@link isDependencyFailure} |
 * | `captureRejectionStack` | false |
 */
export const CIRCUIT_BREAKER_DEFAULTS = {
  name: 'circuit-breaker',
  /** The default `window` is `new ConsecutiveWindow(window.consecutiveFailures)`. */
  window: { consecutiveFailures: WINDOW_DEFAULTS.consecutiveFailures },
  openDurationMs: 30_000,
  openBackoff: { multiplier: 2 },
  permittedCalls: 1,
  captureRejectionStack: false,
} as const;

/**
 * Codes that are transient but say nothing about the dependency: the caller gave up (`canceled`), our own
 * limits refused the call before it was made (`rate_limited`, `spend_limited`, `bulkhead_full`), or the
 * caller's deadline ran out (`deadline_exceeded`: a timeout inside the breaker fails fast with it without
 * calling anything; a dependency that is really slow trips its own `timeout`).
 */
const NOT_THE_DEPENDENCY: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'canceled',
  'rate_limited',
  'spend_limited',
  'bulkhead_full',
  'deadline_exceeded',
]);

/**
 * The default failure predicate: errors core's `classify` calls `transient` (5xx, 408/429, connection
 * failures, `timeout`), except `canceled`, `rate_limited`, `spend_limited`, `bulkhead_full` and
 * `deadline_exceeded`. Permanent errors (a 404, a 400) and fatal ones (TypeError) are not failures.
 */
export function isDependencyFailure(error: unknown): boolean {
  const c = classify(error);
  return c.kind === 'transient' && !NOT_THE_DEPENDENCY.has(c.code);
}

/** Names the breaker in option errors, as users call its factory. */
const OWNER = 'circuitBreaker';

/** {@link CircuitBreakerOptions} with every default applied, as validated at construction. */
export interface ResolvedBreakerOptions {
  readonly name: string;
  readonly window: BreakerWindow;
  readonly openDurationMs: number;
  /** The open period after `n` consecutive opens: `min(maxMs, openDurationMs × multiplier^(n−1))`. */
  readonly openPeriodMs: (n: number) => number;
  readonly permittedCalls: number;
  readonly successesToClose: number;
  /** `undefined`: the open period's length. */
  readonly halfOpenMaxWaitMs: number | undefined;
  readonly isFailure: (error: unknown) => boolean;
  readonly isFailureResult: ((value: unknown) => boolean) | undefined;
  readonly captureRejectionStack: boolean;
  readonly clock: Clock;
}

const WINDOW_METHODS = ['recordSuccess', 'recordFailure', 'shouldOpen', 'reset'] as const;
const d = CIRCUIT_BREAKER_DEFAULTS;

/** Checks {@link CircuitBreakerOptions}; `resolveOptions` applies the defaults that depend on others. */
const parseOptions = defineOptions<CircuitBreakerOptions>()(
  OWNER,
  {
    name: o.string().min(1).default(d.name),
    window: o
      .custom<BreakerWindow>(
        (w) => WINDOW_METHODS.every((m) => typeof (w as Partial<BreakerWindow> | null)?.[m] === 'function'),
        (w) =>
          `a BreakerWindow (no ${WINDOW_METHODS.find((m) => typeof (w as Partial<BreakerWindow> | null)?.[m] !== 'function')})`,
      )
      .optional(),
    openDurationMs: o.number().positive().default(d.openDurationMs),
    openBackoff: o
      .object(
        { multiplier: o.number().min(1).default(d.openBackoff.multiplier), maxMs: o.any<number>() },
        'an object { multiplier?, maxMs } or left out',
      )
      .optional(),
    permittedCalls: o.number().int().min(1).default(d.permittedCalls),
    successesToClose: o.number().int().min(1).optional(),
    halfOpenMaxWaitMs: o.number().positive().optional(),
    isFailure: o.fn<(error: unknown) => boolean>().optional(),
    isFailureResult: o.fn<(value: unknown) => boolean>().optional(),
    captureRejectionStack: o.boolean().default(d.captureRejectionStack),
    clock: o.clock(),
  },
  (p, report) => {
    const maxMs = p.openBackoff?.maxMs;
    const openMs = p.openDurationMs;
    if (
      p.openBackoff !== undefined &&
      !(typeof maxMs === 'number' && maxMs >= openMs && Number.isFinite(maxMs))
    ) {
      report('openBackoff.maxMs', `a finite number >= openDurationMs (${openMs})`, maxMs);
    }
    const slowMs = p.window?.slowCallDurationMs;
    if (slowMs !== undefined && !(slowMs > 0)) report('window.slowCallDurationMs', 'a number > 0', slowMs);
  },
);

/**
 * Validates `options` and applies the defaults.
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option.
 */
export function resolveOptions(options: CircuitBreakerOptions): ResolvedBreakerOptions {
  const p = parseOptions(options);
  const openMs = p.openDurationMs;
  const multiplier = p.openBackoff?.multiplier ?? 1;
  const maxOpenMs = p.openBackoff?.maxMs ?? openMs;
  return {
    name: p.name,
    window: p.window ?? new ConsecutiveWindow(d.window.consecutiveFailures),
    openDurationMs: openMs,
    openPeriodMs:
      multiplier === 1 ? () => openMs : (n) => Math.min(maxOpenMs, openMs * multiplier ** (n - 1)),
    permittedCalls: p.permittedCalls,
    successesToClose: p.successesToClose ?? p.permittedCalls,
    halfOpenMaxWaitMs: p.halfOpenMaxWaitMs,
    isFailure: p.isFailure ?? isDependencyFailure,
    isFailureResult: p.isFailureResult,
    captureRejectionStack: p.captureRejectionStack,
    clock: p.clock,
  };
}

const STATES: ReadonlySet<unknown> = new Set<CircuitState>(['closed', 'open', 'half-open', 'isolated']);

/**
 * Checks a snapshot read back from storage before {@link CircuitBreakerPolicy.restore} takes it on.
 * @throws RangeError naming the first bad field.
 */
export function validSnapshot(s: CircuitBreakerSnapshot): CircuitBreakerSnapshot {
  const bad = (field: string, rule: string, value: unknown): never => {
    throw invalidOption(OWNER, field === '' ? 'snapshot' : `snapshot.${field}`, rule, value);
  };
  if (typeof s !== 'object' || s === null) bad('', 'an object', s);
  if (s.version !== 1) bad('version', '1', s.version);
  if (!STATES.has(s.state)) bad('state', 'closed, open, half-open or isolated', s.state);
  const time = (field: 'openedAt' | 'halfOpenAt' | 'openDurationMs', required: boolean): void => {
    const value = s[field];
    if (value === null || value === undefined) {
      if (required) bad(field, 'a finite number', value);
    } else if (typeof value !== 'number' || !Number.isFinite(value)) {
      bad(field, 'a finite number or null', value);
    } else if (field === 'openDurationMs' && required && !(value > 0)) {
      bad(field, 'a number > 0', value);
    }
  };
  const opened = s.state === 'open' || s.state === 'half-open';
  time('openedAt', opened || s.state === 'isolated');
  time('halfOpenAt', opened);
  time('openDurationMs', opened);
  const min = opened ? 1 : 0;
  if (!Number.isInteger(s.consecutiveOpens) || s.consecutiveOpens < min) {
    bad('consecutiveOpens', `an integer >= ${min}`, s.consecutiveOpens);
  }
  return s;
}
