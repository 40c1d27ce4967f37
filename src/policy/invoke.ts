import { Deadline, abortReason, neverAbortedSignal, rejectSoon } from '../core/index.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/**
 * One call through a list of policies: `invoke(ctx, i)` runs policy `i` around the rest, and past the last
 * policy calls `fn`. A single instance carries the call through every layer.
 */
export class Invocation<T> implements Next<T> {
  constructor(
    private readonly policies: readonly Policy[],
    private readonly fn: PolicyFn<T>,
  ) {}

  invoke(ctx: PolicyContext, index: number): Promise<T> {
    if (index < this.policies.length) return this.policies[index]!.run(ctx, this, index + 1);
    return callFn(this.fn, ctx);
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

/** The context a top-level `execute` starts from: the caller's signal and the ambient deadline. */
export function rootContext(signal: AbortSignal | undefined): PolicyContext {
  return { signal: signal ?? neverAbortedSignal, attempt: 1, deadlineAt: Deadline.at() ?? Infinity };
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
  return new Invocation(policies, fn).invoke(rootContext(signal), 0);
}

/** `policy.execute(fn, signal)` for a single policy (see {@link executeAll}). */
export function executeOne<T>(policy: Policy, fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
  if (signal?.aborted) return rejectSoon(abortReason(signal));
  return policy.run(rootContext(signal), new Invocation<T>([], fn), 0);
}
