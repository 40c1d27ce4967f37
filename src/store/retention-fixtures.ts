import type { FacetHarness } from './facets-contract.js';
import type { JobRecord } from './jobs.js';
import { PRUNE_KINDS, type PruneReport } from './retention.js';
import type { Store } from './store.js';

/** What the two retention contract suites share: times, the expected report, and jobs made to order. */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The report of a prune that removed `removed` (other kinds 0) in `batches` (other kinds 0). */
export function report(
  now: number,
  removed: Partial<PruneReport['removed']> = {},
  batches: Partial<PruneReport['batches']> = {},
  dryRun = false,
): PruneReport {
  return {
    dryRun,
    now,
    removed: { ...Object.fromEntries(PRUNE_KINDS.map((k) => [k, 0])), ...removed } as PruneReport['removed'],
    batches: { jobs: 0, streamEvents: 0, idempotency: 0, operations: 0, ...batches },
    complete: true,
  };
}

/**
 * Makes jobs in the store and ends them, at the fake clock's time. Each job has a type of its own, so a claim
 * of one leases that job and no other.
 */
export class JobMaker {
  private made = 0;

  constructor(private readonly h: FacetHarness) {}

  get store(): Store {
    return this.h.store;
  }

  async pending(): Promise<JobRecord> {
    const { job } = await this.store.enqueue(jobOf(`task-${++this.made}`, this.h.clock.now()));
    return job;
  }

  /** Claims the job `id` (default a new one): `in_progress`, one `job.started` event. */
  async running(id?: string): Promise<{ id: string; token: number }> {
    const job = id === undefined ? await this.pending() : (await this.store.get(id))!;
    const [claim] = await this.store.claim({ owner: 'w', types: [job.type], limit: 1, leaseMs: 60_000 });
    if (claim?.job.id !== job.id) throw new Error(`job ${job.id} was not claimed`);
    return { id: job.id, token: claim.token };
  }

  /** A job that ended `status` now, with its events: completed and failed 2, canceled (while pending) 1. */
  async ended(status: 'completed' | 'failed' | 'canceled', id?: string): Promise<string> {
    if (status === 'canceled') {
      const jobId = id ?? (await this.pending()).id;
      await this.store.cancel(jobId);
      return jobId;
    }
    const lease = await this.running(id);
    if (status === 'completed') await this.store.complete(lease, { ok: true });
    else await this.store.fail(lease, { code: 'upstream_error', message: 'boom', kind: 'permanent' });
    return lease.id;
  }

  /** Ids of the jobs in the store, oldest first. */
  async ids(): Promise<string[]> {
    return (await this.store.list({ limit: 1000 })).map((job) => job.id).reverse();
  }
}

/** A job of `type`, due at `runAt`, one attempt. */
function jobOf(type: string, runAt: number) {
  return { type, payload: { n: 1 }, runAt, priority: 0, maxAttempts: 1 };
}

/** A delivery of the `payments` source received at the epoch (its age is its job's, not its receipt's). */
export function delivered(eventId: string) {
  return {
    source: 'payments',
    eventId,
    eventType: 'charge.succeeded',
    receivedAt: 0,
    occurredAt: null,
    body: '{}',
  };
}

let deliveries = 0;

/** The job of a delivery, of a type of its own (see {@link JobMaker}). */
export function inboxJob() {
  return jobOf(`hook-${++deliveries}`, 0);
}
