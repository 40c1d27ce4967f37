import type { Disposable } from '../core/index.js';

/**
 * What every function run under a policy receives.
 * - `signal` aborts when the caller, an outer policy (timeout, hedging) or the deadline gives up: pass it to
 *   fetch/undici/the database driver so abandoned work stops.
 * - `attempt` is 1 for the first call and grows with each retry or hedge.
 * - `deadlineAt` is the absolute time (ms since the epoch, on the policy's clock) after which the result is
 *   no longer wanted, or `Infinity`.
 */
export interface PolicyContext {
  readonly signal: AbortSignal;
  readonly attempt: number;
  readonly deadlineAt: number;
}

/** The function a policy runs. It may return a value or a promise. */
export type PolicyFn<T> = (ctx: PolicyContext) => T | PromiseLike<T>;

/**
 * The inner part of a pipeline, as seen from one policy: call `invoke(ctx, index)` with the `index` the policy
 * was given to run everything inside it. One object per call, shared by every layer, so composing policies
 * allocates no closure per layer.
 */
export interface Next<T> {
  /** Never throws synchronously: a layer or `fn` that throws yields a rejected promise instead. */
  invoke(ctx: PolicyContext, index: number): Promise<T>;
}

/**
 * A resilience policy. `execute` runs `fn` under it; `run` is the composition entry point used by
 * {@link pipeline}. Every rejection a policy makes itself is a `BreakwaterError` with a stable code.
 */
export interface Policy {
  /**
   * Runs `fn` under this policy.
   * @param signal optional caller signal; aborting it aborts the context signal passed to `fn`.
   * @throws BreakwaterError with one of the policy's own stable codes when the policy itself refuses or stops
   *   the call (`timeout`, `circuit_open`, `bulkhead_full`, `rate_limited`, …: each policy's docs list its
   *   own); otherwise the error `fn` threw or rejected with, unchanged (never wrapped); the signal's reason
   *   when `signal` had already aborted. Always as a rejection, never synchronously.
   */
  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T>;
  /** Runs the inner part of a pipeline (`next.invoke(ctx, index)`) under this policy. */
  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T>;
}

/** A policy that reports its state for health checks and dashboards. */
export interface Observable<S> {
  /** The current state, as plain JSON-able data. */
  state(): S;
}

export type { Disposable };
