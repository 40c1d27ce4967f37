import { Deadline, abortReason, neverAbortedSignal, rejectSoon } from '../core/index.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/**
 * One call through a list of policies: `invoke(ctx, i)` runs policy `i` around the rest, and past the last
 * policy calls `fn`. A single instance carries the call through every layer, and is also the call's root
 * context (the caller's signal, attempt 1, the ambient deadline), so a call allocates one object here.
 */
export class Invocation<T> implements Next<T>, PolicyContext {
  readonly signal: AbortSignal;
  readonly attempt = 1;
  readonly deadlineAt: number;

  constructor(
    private readonly policies: readonly Policy[],
    private readonly fn: PolicyFn<T>,
    signal: AbortSignal | undefined,
  ) {
    this.signal = signal ?? neverAbortedSignal;
    this.deadlineAt = Deadline.at() ?? Infinity;
  }

  invoke(ctx: PolicyContext, index: number): Promise<T> {
    if (index < this.policies.length) return runLayer(this.policies[index]!, ctx, this, index + 1);
    return callFn(this.fn, ctx);
  }
}

/**
 * Runs one layer. A policy that throws synchronously (a throwing predicate or factory, a hand-written
 * policy) still yields a rejected promise, so the layer outside can always rely on getting a promise and
 * release what it holds.
 */
export function runLayer<T>(policy: Policy, ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
  try {
    return policy.run(ctx, next, index);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Calls `fn` and always returns a promise, turning a synchronous throw into a rejection. */
export function callFn<T>(fn: PolicyFn<T>, ctx: PolicyContext): Promise<T> {
  try {
    const value = fn(ctx);
    return value instanceof Promise ? value : Promise.resolve(value);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Runs `fn` through `policies` from the top. A caller whose signal has already aborted gets its abort reason
 * at once: nothing is called and no limit is spent on it.
 */
export function executeAll<T>(
  policies: readonly Policy[],
  fn: PolicyFn<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (signal?.aborted) return rejectSoon(abortReason(signal));
  const call = new Invocation(policies, fn, signal);
  return call.invoke(call, 0);
}

/** `policy.execute(fn, signal)` for a single policy (see {@link executeAll}). */
export function executeOne<T>(policy: Policy, fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
  if (signal?.aborted) return rejectSoon(abortReason(signal));
  const call = new Invocation<T>(EMPTY, fn, signal);
  return runLayer(policy, call, call, 0);
}

const EMPTY: readonly Policy[] = [];
