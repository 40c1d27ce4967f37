/**
 * GiftGenius as a Breakwater app: `breakwater serve --app examples/giftgenius/app.ts` (what `npm start`
 * runs). Unless GIFT_URL, COMMERCE_URL and ANALYTICS_URL point at running services, the app starts the three
 * example services itself (ports 8791-8793 for a gateway, free ports for a worker), so one command runs the
 * whole story. See docs/giftgenius.md.
 *
 * The example imports `src/entries/<name>.js`, the file behind the package's `breakwater/<name>` subpath
 * (`src/entries/index.js` is `breakwater` itself): an app outside this repository writes
 * `import { defineApp } from 'breakwater/gateway'`.
 */
import { defineApp, type AppParts, type BreakwaterApp } from '../../src/entries/gateway.js';
import { defineDeepAnalysis } from './analysis.js';
import { DEFAULT_PORTS, startGiftGeniusServices, type GiftGeniusServices } from './services/index.js';
import { giftGeniusTools } from './tools.js';
import { createUpstreams, type UpstreamSettings } from './upstreams.js';
import { DEMO_WEBHOOK_SECRET, paymentWebhooks } from './webhooks.js';
import { giftGeniusAi, type GiftGeniusAi } from './ai.js';
import { createOrderAction } from './checkout.js';
import { confirmCheckoutTool, defineCheckoutConfirm } from './confirm.js';
import { giftGeniusPrompts, giftGeniusResources } from './resources.js';
import { giftGeniusRoutes } from './routes.js';

/** Settings of {@link createGiftGeniusApp}; anything left out comes from the environment or the defaults. */
export interface GiftGeniusSettings extends Partial<Omit<UpstreamSettings, 'clock'>> {
  /** Ms each of the deep analysis's four steps takes (default: $GIFTGENIUS_STEP_MS, then 750). */
  stepMs?: number;
  /** The payment webhooks' Stripe endpoint secret (default: $GIFTGENIUS_WEBHOOK_SECRET, then a demo secret). */
  webhookSecret?: string;
  /** Ports for the services the app starts itself (default 8791-8793 in a gateway, free ports in a worker). */
  servicePorts?: { gift?: number; commerce?: number; analytics?: number };
  /**
   * The AI gateway's model server: a real OpenAI-compatible base URL (default: $LLM_URL), else the simulated
   * one, started on `llmPort` (default: $LLM_PORT, then 8794; 0 picks a free port). Only a gateway serves AI,
   * not a worker.
   */
  llmUrl?: string;
  llmPort?: number;
  /** Each tool call's budget in ms (default 10 000); tests shrink it with the timeouts. */
  toolDeadlineMs?: number;
}

const INSTRUCTIONS = `GiftGenius helps choose and buy gifts. Use suggest_gifts for quick ideas, start_deep_analysis for a
thorough one (follow it with get_job_status), and checkout to buy. When a tool answers with an error, tell the
user its message; if the error's outcome is "unknown", the order may exist: call checkout again with the same
operation_id instead of starting a new one. If it stays unknown, call confirm_checkout with that operation_id: its job
may ask the user whether to place the order again (get_job_status shows the question; answer with respond_to_job).`;

export function createGiftGeniusApp(settings: GiftGeniusSettings = {}): BreakwaterApp {
  return defineApp({
    async setup(context): Promise<AppParts> {
      const { env, clock, jobs, operations, role, log, sharedBreakers, store } = context;
      const given = {
        gift: settings.giftUrl ?? env.GIFT_URL,
        commerce: settings.commerceUrl ?? env.COMMERCE_URL,
        analytics: settings.analyticsUrl ?? env.ANALYTICS_URL,
      };
      let services: GiftGeniusServices | undefined;
      if (given.gift === undefined || given.commerce === undefined || given.analytics === undefined) {
        try {
          services = await startGiftGeniusServices({
            ports: settings.servicePorts ?? (role === 'serve' ? DEFAULT_PORTS : {}),
          });
        } catch (error) {
          throw new Error(
            `${(error as Error).message} Is another GiftGenius running? Stop it, or start the services ` +
              `elsewhere (GIFT_PORT, COMMERCE_PORT, ANALYTICS_PORT with examples/giftgenius/services/main.ts) and ` +
              `set GIFT_URL, COMMERCE_URL and ANALYTICS_URL (LLM_PORT or LLM_URL for the model server).`,
            { cause: error },
          );
        }
        log(
          `giftgenius: example services started: gift ${services.gift.url}, commerce ${services.commerce.url}, analytics ${services.analytics.url}`,
        );
      }
      const upstreams = createUpstreams({
        ...settings,
        giftUrl: given.gift ?? services!.gift.url,
        commerceUrl: given.commerce ?? services!.commerce.url,
        analyticsUrl: given.analytics ?? services!.analytics.url,
        sharedBreakers: settings.sharedBreakers ?? sharedBreakers,
        clock,
      });
      const stepMs = settings.stepMs ?? Number(env.GIFTGENIUS_STEP_MS ?? 750);
      defineDeepAnalysis(jobs, upstreams, {
        clock,
        stepMs: Number.isFinite(stepMs) && stepMs >= 0 ? stepMs : 750,
      });
      const webhookSecret = settings.webhookSecret ?? env.GIFTGENIUS_WEBHOOK_SECRET ?? DEMO_WEBHOOK_SECRET;
      let webhooks;
      try {
        webhooks = paymentWebhooks(upstreams.commerce, webhookSecret);
      } catch (error) {
        // A malformed secret is a startup error that names the source; nothing started may be left running.
        await services?.close();
        throw error;
      }
      let ai: GiftGeniusAi | undefined;
      if (role === 'serve') {
        try {
          const llmPort = settings.llmPort ?? (env.LLM_PORT === undefined ? undefined : Number(env.LLM_PORT));
          ai = await giftGeniusAi({ llmUrl: settings.llmUrl ?? env.LLM_URL, port: llmPort });
        } catch (error) {
          await services?.close();
          throw error;
        }
        log(
          `giftgenius: AI gateway at ${context.publicUrl}/v1 (models sim/gift-ranker, sim/gift-ranker-mini) → ${ai.url}`,
        );
        log(
          webhookSecret === DEMO_WEBHOOK_SECRET
            ? `giftgenius: payment webhooks at ${context.publicUrl}/webhooks/payments, signed with the demo secret ${DEMO_WEBHOOK_SECRET} (set GIFTGENIUS_WEBHOOK_SECRET for a real one)`
            : `giftgenius: payment webhooks at ${context.publicUrl}/webhooks/payments`,
        );
      }
      // One action object for the checkout tool, the HTTP route and the confirmation job (one per name).
      const createOrder = createOrderAction(upstreams.commerce);
      defineCheckoutConfirm(jobs, store, operations, createOrder);
      return {
        name: 'giftgenius',
        version: '1.0.0',
        instructions: INSTRUCTIONS,
        tools: [
          ...giftGeniusTools(upstreams, operations, { deadlineMs: settings.toolDeadlineMs, createOrder }),
          confirmCheckoutTool(),
        ],
        resources: giftGeniusResources(operations),
        prompts: giftGeniusPrompts(),
        routes: giftGeniusRoutes(operations, createOrder),
        upstreams: [upstreams.gift, upstreams.commerce, upstreams.analytics],
        webhooks,
        ai: ai?.options,
        close: async () => {
          await ai?.close();
          await services?.close();
        },
      };
    },
  });
}

export default createGiftGeniusApp();
