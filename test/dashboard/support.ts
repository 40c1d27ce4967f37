/**
 * The dashboard tests' gateway (not a test file itself): GiftGenius for real over the example services, plus
 * one job type of the tests' own, `dashboard.report`, that fails for good (a dead letter) while
 * `reportBroken.value` is true. The ledger's recovery loop is slowed to 10 minutes so an operation stays
 * `unknown` until the test reconciles it.
 */
import { BreakwaterError } from '../../src/entries/index.js';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway/index.js';
import { FAST_SETTINGS, type Backends } from '../e2e/support.js';

export const REPORT_JOB = 'dashboard.report';

/** Switches the report job between failing for good and succeeding. */
export const reportBroken = { value: true };

/** Starts the gateway on port 0 over `backends`; closed by `defer`. */
export async function startDashboardGateway(
  defer: (cleanup: () => unknown) => void,
  backends: Backends,
  options: { dbPath: string; stepMs?: number; gateway?: Partial<GatewayOptions> },
): Promise<Gateway> {
  const giftGenius = createGiftGeniusApp({
    ...FAST_SETTINGS,
    ...backends.urls,
    stepMs: options.stepMs ?? FAST_SETTINGS.stepMs,
    // A short open period: a commerce breaker opened by a hang lets a trial through soon after.
    commerceOpenMs: 200,
  });
  const gateway = await startGateway({
    app: {
      async setup(context) {
        const parts = await giftGenius.setup(context);
        context.jobs.defineJob(
          REPORT_JOB,
          async () => {
            if (reportBroken.value) {
              throw new BreakwaterError('invalid_payload', { message: 'The report template is missing.' });
            }
            return { summary: 'The weekly report was sent.' };
          },
          { maxAttempts: 1 },
        );
        return parts;
      },
    },
    store: options.dbPath,
    port: 0,
    log: () => undefined,
    graceMs: 200,
    operationsCheckEveryMs: 600_000,
    ...options.gateway,
  });
  defer(() => gateway.close());
  return gateway;
}
