/**
 * GiftGenius's AI gateway (docs/ai-gateway.md): one provider, `sim` — the simulated OpenAI-compatible model
 * server of examples/llm-sim, started by the app unless LLM_URL names a real one — with two priced models, a
 * per-user rate rule and a daily budget. Call it with any OpenAI client at `<gateway>/v1`, model
 * `sim/gift-ranker` (or `sim/gift-ranker-mini`, ten times cheaper), or `dynamic/<route>` for a deployed route.
 */
import type { AppAiOptions } from '../../src/entries/gateway.js';
import { startSimulatedProvider, type SimulatedProvider } from '../llm-sim/index.js';

/** The port of the simulated model server when the app starts it for a gateway (a worker serves no AI). */
export const DEFAULT_LLM_PORT = 8794;

/** The AI part of the app and what it started (closed at shutdown). */
export interface GiftGeniusAi {
  options: AppAiOptions;
  /** The base URL the provider is reached at (`…/v1`). */
  url: string;
  close(): Promise<void>;
}

/**
 * The AI gateway settings: a real provider when `llmUrl` is given (its key from `LLM_API_KEY`), else a
 * simulated one started on `port` (0: a free one).
 */
export async function giftGeniusAi(settings: { llmUrl?: string; port?: number }): Promise<GiftGeniusAi> {
  let sim: SimulatedProvider | undefined;
  let url = settings.llmUrl;
  if (url === undefined) {
    sim = await startSimulatedProvider({
      port: settings.port ?? DEFAULT_LLM_PORT,
      firstByteMs: 40,
      tokensPerSecond: 400,
      recordRequests: false, // the demo runs for hours: keep no request bodies
    });
    url = sim.url;
  }
  const options: AppAiOptions = {
    providers: {
      sim: { baseUrl: url, ...(settings.llmUrl === undefined ? {} : { apiKeyEnv: 'LLM_API_KEY' }) },
    },
    prices: {
      'sim/gift-ranker': { inputPerMTok: 2.5, outputPerMTok: 10 },
      'sim/gift-ranker-mini': { inputPerMTok: 0.25, outputPerMTok: 1 },
    },
    rateRules: [
      // Each user (metadata `user`) at most 30 requests in any minute.
      {
        name: 'per-user',
        limit: 30,
        windowMs: 60_000,
        technique: 'sliding',
        scope: { by: 'metadata', key: 'user' },
      },
    ],
    spendRules: [{ name: 'daily', budgetUsd: 5, windowMs: 86_400_000, scope: { by: 'provider' } }],
    defaults: { timeoutMs: 10_000, maxAttempts: 3, retryDelayMs: 250, backoff: 'exponential' },
    // Requests without max_tokens are reserved at this much until their real cost is known.
    maxRequestCostUsd: 0.05,
  };
  return { options, url, close: async () => sim?.close() };
}
