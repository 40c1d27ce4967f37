/**
 * The deep analysis job: four steps with progress, the first three draft gifts published as a partial
 * result at step 3, the final list as the result. Each step waits `stepMs` (the "LLM-heavy" part of the
 * story) on the injected clock and stops at once when the job is canceled or times out.
 */
import { sleep, type Clock, type Jobs } from '../../src/index.js';
import type { Gift } from './tools.js';
import type { GiftGeniusUpstreams } from './upstreams.js';

export const DEEP_ANALYSIS_JOB = 'giftgenius.deep_analysis';

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
      const { body } = await upstreams.gift.post<{ gifts: Gift[] }>(
        '/recommendations',
        { ...payload, limit: 20 },
        { idempotent: true, signal },
      );
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
    { concurrency: 4, timeoutMs: 120_000, maxAttempts: 3 },
  );
}
