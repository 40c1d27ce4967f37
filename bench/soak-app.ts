/**
 * The app `npm run bench -- soak` serves (`breakwater serve --app bench/soak-app.ts`): one Stripe-style
 * webhook source whose handler does nothing (each delivery is an inbox row and a job), and two job types the
 * load side enqueues: `soak.work` completes after a progress event, `soak.fail` throws a plain Error on each
 * of its 2 attempts and ends in the dead letter. Both sides define the job types (`defineSoakJobs`): a job is
 * enqueued only as a type its process knows.
 */
import type { Jobs } from '../src/entries/jobs.js';
import { lib } from './lib.js';

/** The webhook source's signing secret (the load side signs with it). */
export const SOAK_SECRET = 'whsec_soak_0123456789abcdef';

/** The job types, and the share of enqueued jobs that fail. */
export const SOAK_JOBS = { work: 'soak.work', fail: 'soak.fail', failShare: 0.1 } as const;

/** Defines the soak's job types on `jobs`. */
export function defineSoakJobs(jobs: Jobs): void {
  jobs.defineJob<{ n: number }>(SOAK_JOBS.work, async (ctx) => {
    await ctx.progress(1, 1, 'done');
    return { n: ctx.payload.n, ok: true };
  });
  jobs.defineJob<{ n: number }>(
    SOAK_JOBS.fail,
    (ctx) => {
      throw new Error(`soak job ${ctx.payload.n} failed on purpose`);
    },
    { maxAttempts: 2, backoff: lib.constantBackoff(100) },
  );
}

export default lib.defineApp({
  setup({ jobs }) {
    defineSoakJobs(jobs);
    const payments = lib.defineWebhookSource({
      name: 'payments',
      verifier: lib.stripeVerifier({ secrets: [SOAK_SECRET] }),
      concurrency: 8,
    });
    return {
      name: 'breakwater-soak',
      version: '1.0.0',
      webhooks: { sources: [payments], handlers: [lib.onWebhook('payments', '*', () => undefined)] },
    };
  },
});
