/**
 * What the retention tests share: a store filled with one of each kind of finished state (and some that must
 * stay), made at a time the caller's fake clock chooses, and the counts a prune of all of it reports.
 */
import type { FakeClock } from '../../src/core/index.js';
import { createAuditLog } from '../../src/operations/index.js';
import { JobMaker, delivered, inboxJob } from '../../src/store/retention-fixtures.js';
import type { PruneReport, Store } from '../../src/store/index.js';

/** The ids of what {@link seedFinishedState} made that must outlive every prune. */
export interface Seeded {
  pendingJob: string;
  runningJob: string;
  pendingOperation: string;
}

/**
 * At `clock`'s time: a completed, a failed and a canceled job, a webhook delivery whose job completed, three
 * stream events, an idempotency record living one minute, a succeeded operation — all of it gone once more
 * than 30 days have passed — and a pending job, a running job and a pending operation that stay, with three
 * audit records (never pruned).
 */
export async function seedFinishedState(store: Store, clock: FakeClock): Promise<Seeded> {
  const jobs = new JobMaker({
    clock,
    store,
    start: clock.now(),
    another: () => Promise.reject(new Error('not used')),
  });
  await jobs.ended('completed');
  await jobs.ended('failed');
  await jobs.ended('canceled');
  const delivery = await store.acceptWebhook(delivered('evt_old'), inboxJob());
  await jobs.ended('completed', delivery.record.jobId);
  for (let n = 1; n <= 3; n++) await store.appendStreamEvent('session-1', { n });
  await store.idempotency.begin({ scope: 'c', key: 'k', fingerprint: 'f', lockMs: 1000, ttlMs: 60_000 });
  const operation = (owner: string, deadlineMs: number) =>
    store.operations.begin({
      action: 'commerce.create_order',
      target: 'POST commerce /orders',
      request: { owner },
      retryAllowed: false,
      reconcile: null,
      recoveryDeadlineAt: clock.now() + deadlineMs,
    });
  const settled = (await operation('a', 3_600_000)).record;
  await store.operations.update(settled.id, settled.version, { state: 'succeeded', result: { ok: true } });
  // Its deadline a year off: past it, a gateway's recovery loop would settle it (`failed`, `not_sent`).
  const pendingOperation = (await operation('b', 365 * 86_400_000)).record.id;
  const pendingJob = (await jobs.pending()).id;
  const runningJob = (await jobs.running()).id;
  const audit = createAuditLog({ store: store.audit, clock });
  for (const action of ['job.completed', 'job.failed', 'webhook.accepted']) {
    void audit.record({ actor: 'system', action, target: 'seed' });
  }
  await audit.flush();
  return { pendingJob, runningJob, pendingOperation };
}

/** What a prune more than 30 days after {@link seedFinishedState} removes. */
export const SEEDED_REMOVED: PruneReport['removed'] = {
  jobs: 4,
  // completed 2, failed 2, canceled 1, the delivery's job 2
  jobEvents: 7,
  webhookInbox: 1,
  streamEvents: 3,
  idempotency: 1,
  operations: 1,
};
