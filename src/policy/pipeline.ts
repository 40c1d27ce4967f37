import { OptionsError, type OptionProblem } from '../core/index.js';
import { executeAll, runLayer } from './invoke.js';
import type { Next, Policy, PolicyContext, PolicyFn } from './types.js';

/**
 * A composition of policies, outer to inner: `pipeline(a, b, c).execute(fn)` runs `a(b(c(fn)))`. The
 * documented order (docs/policies.md#composing-a-pipeline) is fallback → rate limit → bulkhead → retry →
 * circuit breaker → timeout (per attempt) → call. A pipeline is itself a policy, so pipelines nest.
 *
 * One call allocates one {@link Invocation} shared by every layer, instead of a closure per layer.
 */
export class Pipeline implements Policy {
  readonly policies: readonly Policy[];

  /**
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `pipeline`) naming every element that is
   *   not a policy by its position (`argument 2`).
   */
  constructor(policies: readonly Policy[]) {
    const problems: OptionProblem[] = [];
    policies.forEach((p, i) => {
      if (typeof (p as Partial<Policy> | undefined)?.run !== 'function') {
        problems.push({ option: `argument ${i + 1}`, rule: 'a policy (with a run method)', value: p });
      }
    });
    if (problems.length > 0) throw new OptionsError('pipeline', problems);
    // Flatten nested pipelines: fewer hops per call, same semantics.
    this.policies = policies.flatMap((p) => (p instanceof Pipeline ? p.policies : [p]));
  }

  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return executeAll(this.policies, fn, signal);
  }

  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    return new NestedInvocation(this.policies, next, index).invoke(ctx, 0);
  }
}

/** A pipeline used as one layer of an outer composition: after its own policies, continue outside. */
class NestedInvocation<T> implements Next<T> {
  constructor(
    private readonly policies: readonly Policy[],
    private readonly outer: Next<T>,
    private readonly outerIndex: number,
  ) {}

  invoke(ctx: PolicyContext, index: number): Promise<T> {
    if (index < this.policies.length) return runLayer(this.policies[index]!, ctx, this, index + 1);
    return this.outer.invoke(ctx, this.outerIndex);
  }
}

/** Composes `policies` outer to inner into one {@link Pipeline}. */
export function pipeline(...policies: Policy[]): Pipeline {
  return new Pipeline(policies);
}
