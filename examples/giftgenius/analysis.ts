/**
 * The deep analysis job: four steps with progress, the first three draft gifts published as a partial
 * result at step 3, the final list as the result. Each step waits `stepMs` (the "LLM-heavy" part of the
 * story) on the injected clock and stops at once when the job is canceled or times out.
 *
 * Its retries (see docs/jobs.md, "Retries", for the rules): 3 attempts, a backoff of
 * 2.5-5 s then 5-10 s (exponential from 5 s, equal jitter: never near zero, so a short burst of a full
 * bulkhead or of 500s is not met three times within a few seconds), and never inside the gift breaker's open
 * time: a failure while the breaker is open carries its remaining open time as the wait, which the job
 * runtime waits out. A wait longer than a minute is not waited out: the job fails at once and says when to
 * try again. It has no deadline of its own: three runs of at most ~11 s plus at most two waits of a minute.
 */
import {
  BreakwaterError,
  exponentialBackoff,
  isBreakwaterError,
  sleep,
  withRetryHint,
  type Clock,
} from '../../src/entries/index.js';
import { type DefineJobOptions, type Jobs } from '../../src/entries/jobs.js';
import { type Upstream } from '../../src/entries/upstream.js';
import type { Gift } from './tools.js';
import type { GiftGeniusUpstreams } from './upstreams.js';

export const DEEP_ANALYSIS_JOB = 'giftgenius.deep_analysis';

/**
 * The deep analysis's job options. The gift breaker opens for 30 s: a wait up to 60 s is waited out (one
 * open period, or a `Retry-After` of up to a minute), so one short overload costs at most one attempt.
 */
export const DEEP_ANALYSIS_OPTIONS: DefineJobOptions = {
  concurrency: 4,
  timeoutMs: 120_000,
  maxAttempts: 3,
  backoff: exponentialBackoff({ baseMs: 5_000, factor: 2, maxMs: 10_000, jitter: 'equal' }),
  maxRetryWaitMs: 60_000,
};

export interface AnalysisPayload {
  interests: string[];
  budget_usd: number;
  recipient?: string;
  limit?: number;
}

export function defineDeepAnalysis(
  jobs: Jobs,
  upstreams: GiftGeniusUpstreams,
  options: { clock: Clock; stepMs: number },
): void {
  const { clock, stepMs } = options;
  jobs.defineJob<AnalysisPayload>(
    DEEP_ANALYSIS_JOB,
    async ({ payload, signal, progress, partial }) => {
      await progress(0, 4, 'Finding candidates');
      const { body } = await upstreams.gift
        .post<{ gifts: Gift[] }>('/recommendations', { ...payload, limit: 20 }, { idempotent: true, signal })
        .catch((error: unknown) => {
          throw withBreakerWait(error, upstreams.gift);
        });
      await sleep(clock, stepMs, signal);
      await progress(1, 4, 'Scoring candidates against the interests');
      await sleep(clock, stepMs, signal);
      await progress(2, 4, 'Drafting gift ideas');
      await sleep(clock, stepMs, signal);
      await partial({ drafts: body.gifts.slice(0, 3) });
      await progress(3, 4, 'Checking the final picks');
      await sleep(clock, stepMs, signal);
      const gifts = body.gifts.slice(0, payload.limit ?? 5);
      await progress(4, 4, 'Done');
      return {
        gifts,
        summary:
          gifts.length === 0
            ? 'Nothing in the catalog matches these interests within the budget.'
            : `${gifts.length} gifts for ${payload.recipient ?? 'them'}, best first: ${gifts.map((g) => g.name).join('; ')}.`,
      };
    },
    DEEP_ANALYSIS_OPTIONS,
  );
}

/**
 * The gift call's failure, with the gift breaker's remaining open time as its wait when the breaker is open
 * now and the failure carried no longer one: a failure that opened the breaker (its fifth in a row) says
 * only "failing", yet no call gets through for the next 30 s, so the job's next attempt must not come
 * earlier. A failure that must not be retried (canceled, a refusal, an unknown outcome) is left as it is.
 */
export function withBreakerWait(error: unknown, gift: Upstream): unknown {
  const breaker = gift.breaker?.state();
  const openMs = breaker?.state === 'open' ? (breaker.retryAfterMs ?? 0) : 0;
  if (!isBreakwaterError(error) || !error.retryable || openMs <= (error.retryAfterMs ?? 0)) return error;
  return new BreakwaterError(error.code, {
    message: withRetryHint(error.message, openMs),
    kind: error.kind,
    status: error.status,
    retryAfterMs: openMs,
    outcome: error.outcome,
    operationId: error.operationId,
    source: error.source,
    details: error.details,
    cause: error,
  });
}
