/**
 * A step's retry and timeout settings, and the retry policy they make. Precedence, most specific first:
 * the step's own settings (a route author's deliberate choice, e.g. a short first-byte timeout before a
 * fallback), then the request's `x-breakwater-*` headers, then the gateway's defaults.
 */
import {
  ConstantBackoff,
  ExponentialBackoff,
  LinearBackoff,
  RetryPolicy,
  type Backoff,
  type RandomSource,
} from '../../policy/index.js';
import type { AiStep, ResolvedStepSettings, StepContext, StepSettings } from '../types.js';

/** The settings a step runs with. */
export function resolveSettings(
  step: StepSettings,
  overrides: StepSettings,
  defaults: ResolvedStepSettings,
): ResolvedStepSettings {
  // The usual case (no step settings, no headers) makes no object.
  if (isUnset(step) && isUnset(overrides)) return defaults;
  return {
    timeoutMs: step.timeoutMs ?? overrides.timeoutMs ?? defaults.timeoutMs,
    maxAttempts: step.maxAttempts ?? overrides.maxAttempts ?? defaults.maxAttempts,
    retryDelayMs: step.retryDelayMs ?? overrides.retryDelayMs ?? defaults.retryDelayMs,
    backoff: step.backoff ?? overrides.backoff ?? defaults.backoff,
  };
}

function isUnset(s: StepSettings): boolean {
  return (
    s.timeoutMs === undefined &&
    s.maxAttempts === undefined &&
    s.retryDelayMs === undefined &&
    s.backoff === undefined
  );
}

/**
 * "Equal jitter" over any schedule: `d/2 + random(0, d/2)`, so a crowd of clients retrying after the same
 * failure spreads out, while no retry comes sooner than half the schedule's delay.
 */
class EqualJitter implements Backoff {
  constructor(
    private readonly inner: Backoff,
    private readonly random: RandomSource,
  ) {}

  next(retry: number, previousMs: number): number {
    const d = this.inner.next(retry, previousMs);
    return Math.round(d / 2 + (this.random() * d) / 2);
  }
}

/**
 * The backoff of `settings`, with equal jitter: `constant` waits `retryDelayMs`, `linear`
 * `retryDelayMs · n`, `exponential` `retryDelayMs · 2^(n-1)` before retry n, each capped at `maxDelayMs`,
 * then jittered into `[d/2, d]`.
 */
export function backoffFor(
  settings: ResolvedStepSettings,
  maxDelayMs: number,
  random: RandomSource,
): Backoff {
  const base = Math.min(settings.retryDelayMs, maxDelayMs);
  if (base === 0) return new ConstantBackoff(0);
  switch (settings.backoff) {
    case 'constant':
      return new EqualJitter(new ConstantBackoff(base), random);
    case 'linear':
      return new EqualJitter(new LinearBackoff({ baseMs: base, maxMs: maxDelayMs }), random);
    case 'exponential':
      return new ExponentialBackoff({ baseMs: base, factor: 2, maxMs: maxDelayMs, jitter: 'equal', random });
  }
}

/**
 * The retry policy of one step execution (policy/ `RetryPolicy`): transient provider failures (408, 425,
 * 429, 5xx, connection failures, first-byte timeouts) are retried up to `maxAttempts` calls in all. A
 * completion has no side effect beyond its cost, so it is retried like an idempotent request even after the
 * provider may have started on it. The wait is the backoff, or the provider's `Retry-After` /
 * `retry-after-ms` when longer; a hint longer than `maxRetryDelayMs` ends the retries at once (the provider
 * said it is not worth trying sooner; a fallback step can serve instead). Our own `rate_limited` and
 * `spend_limited` are never retried.
 */
export function retryPolicyFor(step: AiStep, settings: ResolvedStepSettings, ctx: StepContext): RetryPolicy {
  // Most requests send no retry headers, so their step runs with the same settings every time: its policy is
  // made once (a policy holds no per-call state) instead of per request with its options checked again. Other
  // settings, chosen per request by headers within their bounds, get a fresh one (no cache a client could
  // fill).
  const cached = policies.get(ctx)?.get(step);
  if (cached !== undefined && sameSettings(cached.settings, settings)) return cached.policy;
  const policy = makeRetryPolicy(step, settings, ctx);
  if (cached === undefined && sameSettings(settings, resolveSettings(step, {}, ctx.defaults))) {
    let byStep = policies.get(ctx);
    if (byStep === undefined) policies.set(ctx, (byStep = new WeakMap()));
    byStep.set(step, { settings, policy });
  }
  return policy;
}

/** Per gateway (its StepContext), per step: the policy of the step's settings without request headers. */
const policies = new WeakMap<
  StepContext,
  WeakMap<AiStep, { settings: ResolvedStepSettings; policy: RetryPolicy }>
>();

function sameSettings(a: ResolvedStepSettings, b: ResolvedStepSettings): boolean {
  return a.maxAttempts === b.maxAttempts && a.retryDelayMs === b.retryDelayMs && a.backoff === b.backoff;
}

function makeRetryPolicy(step: AiStep, settings: ResolvedStepSettings, ctx: StepContext): RetryPolicy {
  return new RetryPolicy({
    name: step.name,
    maxAttempts: settings.maxAttempts,
    backoff: backoffFor(settings, ctx.maxRetryDelayMs, ctx.random),
    maxDelayMs: ctx.maxRetryDelayMs,
    classifyOptions: { method: 'POST', idempotent: true },
    clock: ctx.clock,
  });
}
