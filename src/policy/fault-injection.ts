import {
  BreakwaterError,
  EventSource,
  abortReason,
  isErrorCode,
  neverAbortedSignal,
  sleep,
  type Clock,
  type ErrorCode,
  type Report,
  Schema,
  defineOptions,
  o,
} from '../core/index.js';
import type { RandomSource } from './backoff.js';
import { executeOne } from './invoke.js';
import type { Next, Observable, Policy, PolicyContext, PolicyFn } from './types.js';

/** Adds latency before the call: `ms` fixed, or a whole number of ms drawn uniformly from `[min, max]`. */
export interface LatencyFault {
  /** Share of calls affected, 0..1. */
  rate: number;
  ms: number | readonly [minMs: number, maxMs: number];
}

/**
 * Fails the call instead of making it. Give `error` (an Error, thrown as it is, or a function making one per
 * call) or `code` (a fresh BreakwaterError with that code, `details.injected: true`); default code
 * `upstream_unavailable`.
 */
export interface ErrorFault {
  /** Share of calls affected, 0..1. */
  rate: number;
  error?: Error | (() => Error);
  code?: ErrorCode;
}

/** Never settles until `ctx.signal` aborts, then rejects with its reason; the call is never made. */
export interface HangFault {
  /** Share of calls affected, 0..1. */
  rate: number;
}

/** The faults to inject; a fault left out is not injected. Replaced as a whole by `configure`. */
export interface FaultSettings {
  /** Default true. */
  enabled?: boolean;
  latency?: LatencyFault;
  error?: ErrorFault;
  hang?: HangFault;
}

/** Options of {@link FaultInjectionPolicy}; validated at construction. */
export interface FaultInjectionOptions extends FaultSettings {
  /** A function returning uniform numbers in `[0, 1)` (default `Math.random`). */
  random?: RandomSource;
  /** Names the dependency in errors and events (a non-empty string, default `fault-injection`). */
  name?: string;
  clock?: Clock;
}

/** Emitted for every injected fault; `delayMs` for latency. */
export interface FaultEvent {
  readonly name: string;
  readonly fault: 'latency' | 'error' | 'hang';
  readonly delayMs?: number;
}

/** What {@link FaultInjectionPolicy.state} reports (JSON-able). */
export interface FaultInjectionState {
  readonly name: string;
  readonly enabled: boolean;
  readonly latency: { readonly rate: number; readonly ms: number | readonly [number, number] } | null;
  readonly error: { readonly rate: number; readonly code: ErrorCode | null } | null;
  readonly hang: { readonly rate: number } | null;
}

/** Defaults of {@link FaultInjectionOptions}. */
export const FAULT_INJECTION_DEFAULTS = {
  enabled: true,
  errorCode: 'upstream_unavailable',
  name: 'fault-injection',
} as const;

/** Names the policy in option errors, as users call its factory. */
const OWNER = 'faultInjection';

interface Faults {
  readonly enabled: boolean;
  readonly latency: LatencyFault | undefined;
  readonly error: ErrorFault | undefined;
  readonly hang: HangFault | undefined;
}

/**
 * Chaos for demos and tests (docs/policies.md#fault-injection): per call, when enabled, it draws from
 * `random` once per configured fault in the order hang, latency, error (plus one more draw for a latency
 * range), and a fault fires when its draw is `< rate`.
 * - hang: the call is not made; rejects with the signal's reason once `ctx.signal` aborts.
 * - latency: waits on the clock (aborted by `ctx.signal`, rejecting with its reason), then goes on.
 * - error: rejects with the configured error instead of making the call (after any latency).
 * Disabled, it costs one check. Toggle with {@link enable} / {@link disable}; change faults with
 * {@link configure}.
 *
 * @throws the injected error; the signal's reason when aborted during injected latency or a hang.
 * @throws RangeError at construction or in `configure` for a bad option (names the option).
 */
export class FaultInjectionPolicy implements Policy, Observable<FaultInjectionState> {
  readonly name: string;
  private faults: Faults;
  private readonly random: RandomSource;
  private readonly clock: Clock;
  private readonly injected = new EventSource<FaultEvent>();
  /** Subscribe to injected faults. */
  readonly onFault = this.injected.on;

  constructor(options: FaultInjectionOptions = {}) {
    const p = parseOptions(options);
    this.faults = copyFaults(p);
    this.random = p.random ?? Math.random;
    this.name = p.name;
    this.clock = p.clock;
  }

  /** Whether faults are being injected now (`enable` / `disable` toggle it; `configure` sets it). */
  get enabled(): boolean {
    return this.faults.enabled;
  }

  /** Starts injecting the configured faults again; the fault settings themselves are kept. */
  enable(): void {
    this.faults = { ...this.faults, enabled: true };
  }

  /** Stops injecting faults (every call goes straight through); the settings are kept for `enable`. */
  disable(): void {
    this.faults = { ...this.faults, enabled: false };
  }

  /**
   * Replaces every fault setting at once (omitted faults are switched off; `enabled` defaults to true); calls
   * already past their draw are not affected.
   * @throws RangeError for a bad option (names it); the old settings stay then.
   */
  configure(settings: FaultSettings): void {
    this.faults = copyFaults(parseSettings(settings));
  }

  state(): FaultInjectionState {
    const { enabled, latency, error, hang } = this.faults;
    return {
      name: this.name,
      enabled,
      latency: latency === undefined ? null : { rate: latency.rate, ms: latency.ms },
      error:
        error === undefined
          ? null
          : {
              rate: error.rate,
              code: error.error !== undefined ? null : (error.code ?? FAULT_INJECTION_DEFAULTS.errorCode),
            },
      hang: hang === undefined ? null : { rate: hang.rate },
    };
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeOne(this, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    const faults = this.faults;
    if (!faults.enabled) return next.invoke(ctx, index);
    if (faults.hang !== undefined && this.random() < faults.hang.rate) {
      this.emit('hang', undefined);
      return hang(ctx.signal);
    }
    let delayMs = 0;
    if (faults.latency !== undefined && this.random() < faults.latency.rate) {
      const ms = faults.latency.ms;
      delayMs =
        typeof ms === 'number'
          ? ms
          : Math.min(ms[1], ms[0] + Math.floor(this.random() * (ms[1] - ms[0] + 1)));
      this.emit('latency', delayMs);
    }
    let error: unknown;
    if (faults.error !== undefined && this.random() < faults.error.rate) {
      error = this.makeError(faults.error);
    }
    if (delayMs === 0) {
      if (error === undefined) return next.invoke(ctx, index);
      this.emit('error', undefined);
      return Promise.reject(error);
    }
    return this.delayed(ctx, next, index, delayMs, error);
  }

  private async delayed<T>(
    ctx: PolicyContext,
    next: Next<T>,
    index: number,
    delayMs: number,
    error: unknown,
  ): Promise<T> {
    await sleep(this.clock, delayMs, ctx.signal);
    if (error === undefined) return next.invoke(ctx, index);
    this.emit('error', undefined);
    throw error;
  }

  private makeError(fault: ErrorFault): unknown {
    if (typeof fault.error === 'function') return fault.error();
    if (fault.error !== undefined) return fault.error;
    const code = fault.code ?? FAULT_INJECTION_DEFAULTS.errorCode;
    return new BreakwaterError(code, { source: this.name, details: { injected: true } });
  }

  private emit(fault: FaultEvent['fault'], delayMs: number | undefined): void {
    if (!this.injected.hasListeners) return;
    this.injected.emit(
      delayMs === undefined ? { name: this.name, fault } : { name: this.name, fault, delayMs },
    );
  }
}

/** Rejects with the signal's reason when it aborts; never settles otherwise. */
function hang<T>(signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  // The shared never-aborting signal would collect one listener per hang forever; it can never fire anyway.
  if (signal === neverAbortedSignal) return new Promise<T>(() => {});
  return new Promise<T>((_, reject) => {
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}

/** `ms` of a latency fault: a number >= 0, or `[min, max]` with `0 <= min <= max`. */
const latencyMs = new Schema<LatencyFault['ms']>((ms, option, problems) => {
  const ok = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  if (Array.isArray(ms) && ms.length === 2) {
    if (!ok(ms[0])) problems.push({ option: `${option}[0]`, rule: 'a finite number >= 0', value: ms[0] });
    if (!ok(ms[1])) problems.push({ option: `${option}[1]`, rule: 'a finite number >= 0', value: ms[1] });
    else if (ok(ms[0]) && (ms[1] as number) < (ms[0] as number)) {
      problems.push({ option, rule: '[min, max] with min <= max', value: ms });
    }
  } else if (typeof ms === 'number') {
    if (!ok(ms)) problems.push({ option, rule: 'a finite number >= 0', value: ms });
  } else problems.push({ option, rule: 'a number or [min, max]', value: ms });
  return ms as LatencyFault['ms'];
});

/** {@link FaultSettings}: each fault an object when given. */
const settingsShape = {
  enabled: o.boolean().default(FAULT_INJECTION_DEFAULTS.enabled),
  latency: o.object({ rate: o.fraction(true), ms: latencyMs }, 'an object or left out').optional(),
  error: o
    .object(
      {
        rate: o.fraction(true),
        error: o
          .custom<Error | (() => Error)>(
            (e) => e instanceof Error || typeof e === 'function',
            'an Error or a function returning one',
          )
          .optional(),
        code: o.custom<ErrorCode>(isErrorCode, 'a Breakwater error code').optional(),
      },
      'an object or left out',
    )
    .optional(),
  hang: o.object({ rate: o.fraction(true) }, 'an object or left out').optional(),
};

/** One error fault says what it throws once: an `error` or a `code`, not both. */
function checkFaults(p: { readonly error?: ErrorFault | undefined }, report: Report): void {
  if (p.error?.error !== undefined && p.error.code !== undefined) {
    report('error.error and error.code', 'at most one given', ['error', 'code']);
  }
}

/** Checks {@link FaultSettings} (`configure`). */
const parseSettings = defineOptions<FaultSettings>()(OWNER, settingsShape, checkFaults);

/** Checks {@link FaultInjectionOptions} and applies {@link FAULT_INJECTION_DEFAULTS}. */
const parseOptions = defineOptions<FaultInjectionOptions>()(
  OWNER,
  {
    ...settingsShape,
    random: o.fn<RandomSource>().optional(),
    name: o.string().min(1).default(FAULT_INJECTION_DEFAULTS.name),
    clock: o.clock(),
  },
  checkFaults,
);

/** Copies, so a caller mutating its options object later does not change the policy behind its back. */
function copyFaults(p: ReturnType<typeof parseSettings>): Faults {
  const { enabled, latency, error, hang: hangFault } = p;
  return {
    enabled,
    latency:
      latency === undefined
        ? undefined
        : {
            rate: latency.rate,
            ms: typeof latency.ms === 'number' ? latency.ms : [latency.ms[0], latency.ms[1]],
          },
    error: error === undefined ? undefined : { rate: error.rate, error: error.error, code: error.code },
    hang: hangFault === undefined ? undefined : { rate: hangFault.rate },
  };
}

/** Shorthand for `new FaultInjectionPolicy(options)`. */
export function faultInjection(options?: FaultInjectionOptions): FaultInjectionPolicy {
  return new FaultInjectionPolicy(options);
}
