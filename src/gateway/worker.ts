/**
 * The worker-only process (`breakwater worker`): the store, the jobs runtime and the app's job types, no
 * HTTP. See `gateway.ts` for the gateway that serves.
 */
import { createJobs, type Jobs } from '../jobs/index.js';
import { openStore, type Store } from '../store/index.js';
import { systemClock } from '../core/index.js';
import type { AuditLog, OperationLedger } from '../operations/index.js';
import { createWebhookIngress } from '../webhooks/index.js';
import type { AppParts } from './app.js';
import { GATEWAY_DEFAULTS, type GatewayOptions } from './types.js';
import { textNotices, watchOperatorEvents } from './operator/index.js';
import { auditJobsAndWebhooks, operationsRuntime } from './operations-runtime.js';

/** Options of {@link startWorker}. */
export type WorkerOptions = Pick<
  GatewayOptions,
  'app' | 'store' | 'graceMs' | 'leaseMs' | 'sharedBreakers' | 'clock' | 'env' | 'log' | 'storeCheckEveryMs'
> & {
  /** Base URL of the gateway, for job URLs the app may build (default `http://127.0.0.1:8787`). */
  publicUrl?: string;
};

/** A running worker-only process. */
export interface WorkerProcess {
  store: Store;
  jobs: Jobs;
  operations: OperationLedger;
  audit: AuditLog;
  parts: AppParts;
  /** Stops claiming, lets running jobs finish up to the grace period, then closes the app and the store. */
  close(): Promise<void>;
}

/**
 * Starts a worker without HTTP: opens the store, runs the app's `setup` (role `worker`) so its job types
 * are defined, and starts claiming.
 * @throws the store's error when it cannot be opened; the app's error from `setup`.
 */
export async function startWorker(options: WorkerOptions): Promise<WorkerProcess> {
  const clock = options.clock ?? systemClock;
  const graceMs = options.graceMs ?? GATEWAY_DEFAULTS.graceMs;
  const ownsStore = typeof options.store !== 'object';
  const store =
    typeof options.store === 'object' ? options.store : await openStore({ url: options.store, clock });
  const jobs = createJobs({ store, clock, leaseMs: options.leaseMs });
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.log(line));
  let parts: AppParts;
  let operations: OperationLedger;
  let audit: AuditLog;
  try {
    ({ audit, operations } = operationsRuntime(store, clock, env, log));
    parts = await options.app.setup({
      store,
      jobs,
      operations,
      audit,
      clock,
      publicUrl: options.publicUrl ?? `http://${GATEWAY_DEFAULTS.host}:${GATEWAY_DEFAULTS.port}`,
      role: 'worker',
      env,
      log,
      sharedBreakers: options.sharedBreakers === true ? store.counters : undefined,
    });
    // The app's webhook handlers run here too (one job type per source); nothing is served.
    if (parts.webhooks !== undefined) createWebhookIngress({ ...parts.webhooks, store, jobs, clock });
    auditJobsAndWebhooks(audit, jobs, undefined);
  } catch (error) {
    if (ownsStore) await store.close();
    throw error;
  }
  jobs.start();
  const recovery = operations.startRecovery();
  // The same notices as the gateway's, as text: a worker has no JSON log.
  const notices = watchOperatorEvents({
    sink: textNotices(log, clock),
    clock,
    upstreams: parts.upstreams,
    breakers: (parts.webhooks?.handlers ?? []).flatMap((h) => (h.breaker === undefined ? [] : [h.breaker])),
    jobs,
    store,
    storeCheckEveryMs: options.storeCheckEveryMs,
  });
  let closing: Promise<void> | undefined;
  return {
    store,
    jobs,
    operations,
    audit,
    parts,
    close: () =>
      (closing ??= (async () => {
        notices.dispose();
        recovery.dispose();
        await jobs.stop({ graceMs });
        await parts.close?.().catch(() => undefined);
        for (const upstream of parts.upstreams ?? []) await upstream.close().catch(() => undefined);
        await audit.flush().catch(() => undefined);
        if (ownsStore) await store.close();
      })()),
  };
}
