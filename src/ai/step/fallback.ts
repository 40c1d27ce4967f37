import type { BreakwaterError } from '../../core/index.js';
import type { AiRequest, AiStep, StepAnswer, StepContext, StepFailure } from '../types.js';
import { executeStep } from './execute.js';

/**
 * Runs `steps` in order until one answers (docs/ai-gateway.md#routes): the first step whose provider
 * sends its first byte wins, and nothing reaches the client before that, so the choice is always made
 * before the client has seen a byte. A step that fails in any way before its first byte (its retries
 * exhausted, its first-byte timeout, a provider error, our own `rate_limited` / `spend_limited`: a budget
 * spent on one model can divert to a cheaper one) hands over to the next. Only a client that went away
 * (`canceled`) and a request the gateway itself finds invalid (`invalid_payload` from the body or headers)
 * stop the chain, since no other step can fix those.
 *
 * The answer carries `failures` (each failed step with its code and calls) and `failedAttempts`.
 *
 * @throws RangeError when `steps` is empty.
 * @throws BreakwaterError: the last step's failure, with `details.failed_steps` listing every step's
 *   `<step>:<code>` and `details.attempts` the calls made across the chain.
 */
export async function runFallbackChain(
  steps: readonly AiStep[],
  request: AiRequest,
  ctx: StepContext,
): Promise<StepAnswer> {
  if (steps.length === 0) throw new RangeError('runFallbackChain: steps must not be empty');
  const failures: StepFailure[] = [];
  let attempts = 0;
  for (let i = 0; ; i++) {
    const step = steps[i]!;
    try {
      return await executeStep(step, request, ctx, { failures: [...failures], attempts });
    } catch (error) {
      const e = error as BreakwaterError;
      const stepAttempts = typeof e.details?.attempts === 'number' ? e.details.attempts : 0;
      attempts += stepAttempts;
      failures.push({ step: step.name, code: e.code, attempts: stepAttempts });
      const last = i === steps.length - 1;
      if (last || stopsChain(e, request)) throw chainFailure(e, failures, attempts);
    }
  }
}

/** Failures no other step can fix. */
function stopsChain(error: BreakwaterError, request: AiRequest): boolean {
  if (request.signal.aborted || error.code === 'canceled') return true;
  const reason = error.details?.reason;
  return error.code === 'invalid_payload' && (reason === 'invalid_body' || reason === 'invalid_header');
}

function chainFailure(error: BreakwaterError, failures: StepFailure[], attempts: number): BreakwaterError {
  return error.withDetails({ attempts, failed_steps: failures.map((f) => `${f.step}:${f.code}`) });
}
