/**
 * A step's limit check (docs/ai-gateway.md#callers-keys-metadata-and-their-own-limits): the caller's own
 * rules (`Principal.ai`: its rate rules and budgets, counted for it alone), then the context's limits (a
 * route's limit nodes, then the gateway's rules). The caller's own come first, so a key over its own limit is
 * turned away before it counts against the counters every caller shares.
 */
import { BreakwaterError } from '../../core/index.js';
import { endpointOf } from '../endpoints/chat.js';
import { combineGrants } from '../limits/grants.js';
import { NO_GRANT, type AiLimits, type LimitGrant } from '../limits/limits.js';
import type { AiRequest, AiStep, StepContext } from '../types.js';

/**
 * The grant of every rule that covers `step` for `request`; `NO_GRANT` (no work at all) when no rule is
 * configured and the caller has none of its own. A refusal releases what was already reserved.
 * @throws BreakwaterError `rate_limited`, `spend_limited`, `invalid_payload` (see `AiLimits.acquire`);
 *   `internal_error` when the caller's own limits cannot be applied (out of bounds: fail closed); a limit
 *   store's own error as it is (the caller maps it).
 */
export async function acquireLimits(step: AiStep, request: AiRequest, ctx: StepContext): Promise<LimitGrant> {
  const own = callerLimits(ctx.limits, request);
  if (own === undefined && ctx.limits.empty) return NO_GRANT;
  const target = {
    provider: step.provider,
    model: step.model,
    metadata: request.metadata,
    principal: request.principal,
  };
  const estimate = () => endpointOf(request).estimate(request);
  // A store failure or a fault of ours propagates as it is: execute.ts's limitFailure tells them apart
  // (503 `upstream_unavailable` for the store, 500 `internal_error` for a RangeError or TypeError).
  if (own === undefined) return ctx.limits.acquire(target, estimate);
  const first = await own.acquire(target, estimate);
  let second: LimitGrant;
  try {
    second = await ctx.limits.acquire(target, estimate);
  } catch (error) {
    await first.settle(0);
    throw error;
  }
  return combineGrants([first, second]);
}

/** The caller's own limits, or undefined; its limits out of bounds fail the request (500), never run free. */
function callerLimits(limits: AiLimits, request: AiRequest): AiLimits | undefined {
  if (request.principal?.ai === undefined) return undefined;
  try {
    return limits.forCaller(request.principal);
  } catch (error) {
    throw new BreakwaterError('internal_error', {
      message: "This key's AI limits cannot be applied; an operator must correct them.",
      source: 'ai-limits',
      cause: error,
    });
  }
}
