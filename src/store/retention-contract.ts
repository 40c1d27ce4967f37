import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { DAY_MS, HOUR_MS, JobMaker, delivered, inboxJob, report } from './retention-fixtures.js';
import { retentionStateContract } from './retention-state-contract.js';
import type { PruneOptions } from './retention.js';

/**
 * The retention contract suite, part 1: jobs, their events and webhook deliveries, batches, dry runs and the
 * options (every rule in the docstrings of `store/retention.ts`), run against each backend. Part 2
 * (`retention-state-contract.ts`): stream events, idempotency records, operations, the audit log and size.
 */

export function retentionContract(name: string, backend: FacetBackend): void {
  describe(`RetentionStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);
    const jobs = new JobMaker(h);
    const prune = (options: PruneOptions) => h.store.retention.prune(options);

    it('finished jobs go with their events once older than their retention: 7 days, dead letters 30', async () => {
      const completed = [await jobs.ended('completed'), await jobs.ended('completed')];
      const canceled = await jobs.ended('canceled');
      const failed = await jobs.ended('failed');
      const t0 = h.start;
      expect(await prune({ now: t0 + 7 * DAY_MS })).toEqual(report(t0 + 7 * DAY_MS));
      expect(await jobs.ids()).toEqual([...completed, canceled, failed]);

      const week = t0 + 7 * DAY_MS + 1;
      expect(await prune({ now: week })).toEqual(report(week, { jobs: 3, jobEvents: 5 }, { jobs: 2 }));
      expect(await jobs.ids()).toEqual([failed]);
      expect(await h.store.events(completed[0]!)).toEqual([]);
      expect(await h.store.get(canceled)).toBeUndefined();

      expect(await prune({ now: t0 + 30 * DAY_MS })).toEqual(report(t0 + 30 * DAY_MS));
      const month = t0 + 30 * DAY_MS + 1;
      expect(await prune({ now: month })).toEqual(report(month, { jobs: 1, jobEvents: 2 }, { jobs: 1 }));
      expect(await jobs.ids()).toEqual([]);
    });

    it('the store clock is the default now, and each retention can be set (Infinity: never)', async () => {
      const done = await jobs.ended('completed');
      const failed = await jobs.ended('failed');
      h.clock.tick(HOUR_MS + 1);
      const keepAll = { jobsMs: Infinity, deadLettersMs: Infinity };
      expect(await prune({ retention: keepAll })).toEqual(report(h.clock.now()));
      expect(await prune({ retention: { jobsMs: HOUR_MS, deadLettersMs: Infinity } })).toEqual(
        report(h.clock.now(), { jobs: 1, jobEvents: 2 }, { jobs: 1 }),
      );
      expect(await jobs.ids()).toEqual([failed]);
      expect(await h.store.get(done)).toBeUndefined();
      expect(await prune({ retention: { deadLettersMs: HOUR_MS } })).toEqual(
        report(h.clock.now(), { jobs: 1, jobEvents: 2 }, { jobs: 1 }),
      );
    });

    it('a pending or running job and its events are never removed; a retried dead letter is pending', async () => {
      const pending = await jobs.pending();
      const running = await jobs.running();
      await h.store.appendRunEvent(running, 'job.progress', { step: 1 });
      const retried = await jobs.ended('failed');
      expect((await h.store.retryFailed(retried))?.retried).toBe(true);
      const before = await Promise.all([pending.id, running.id, retried].map((id) => h.store.events(id)));
      const later = h.start + 365 * DAY_MS;
      const everything = { jobsMs: 0, deadLettersMs: 0, webhookInboxMs: 0 };
      expect(await prune({ now: later, retention: everything })).toEqual(report(later));
      expect(await jobs.ids()).toEqual([pending.id, running.id, retried]);
      expect(await Promise.all([pending.id, running.id, retried].map((id) => h.store.events(id)))).toEqual(
        before,
      );
      expect(before.map((events) => events.length)).toEqual([0, 2, 2]);
    });

    it('a batch size of 2 removes 5 jobs in 3 batches, oldest first', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        ids.push(await jobs.ended('completed'));
        h.clock.tick(1000);
      }
      // The first 5 finished more than 7 days before `now`; the last 2 exactly 7 days before and after.
      const now = h.start + 5000 + 7 * DAY_MS;
      expect(await prune({ now, batchSize: 2 })).toEqual(
        report(now, { jobs: 5, jobEvents: 10 }, { jobs: 3 }),
      );
      expect(await jobs.ids()).toEqual(ids.slice(5));
    });

    it('a dry run counts what a prune would remove and removes nothing', async () => {
      await jobs.ended('completed');
      await jobs.ended('canceled');
      await jobs.ended('failed');
      await jobs.running();
      const delivery = await h.store.acceptWebhook(delivered('evt_1'), inboxJob());
      await jobs.ended('completed', delivery.record.jobId);
      const now = h.start + 31 * DAY_MS;
      const sizeBefore = (await h.store.retention.size()).rows;
      const counted = await prune({ now, dryRun: true, batchSize: 1 });
      expect(counted).toEqual(report(now, { jobs: 4, jobEvents: 7, webhookInbox: 1 }, {}, true));
      expect((await h.store.retention.size()).rows).toEqual(sizeBefore);
      expect(await prune({ now, batchSize: 1 })).toEqual({
        ...counted,
        dryRun: false,
        batches: { jobs: 4, streamEvents: 0, idempotency: 0, operations: 0 },
      });
      expect((await h.store.retention.size()).rows).toMatchObject({ jobs: 1, jobEvents: 1, webhookInbox: 0 });
    });

    it('a delivery goes with its job once its job finished 7 days ago; a dead letter’s stays 30', async () => {
      const done = await h.store.acceptWebhook(delivered('evt_done'), inboxJob());
      const dead = await h.store.acceptWebhook(delivered('evt_dead'), inboxJob());
      const waiting = await h.store.acceptWebhook(delivered('evt_waiting'), inboxJob());
      await jobs.ended('completed', done.record.jobId);
      await jobs.ended('failed', dead.record.jobId);
      const t0 = h.start;
      expect(await prune({ now: t0 + 7 * DAY_MS })).toEqual(report(t0 + 7 * DAY_MS));
      const week = t0 + 7 * DAY_MS + 1;
      expect(await prune({ now: week })).toEqual(
        report(week, { jobs: 1, jobEvents: 2, webhookInbox: 1 }, { jobs: 1 }),
      );
      expect(await h.store.getWebhook('payments', 'evt_done')).toBeUndefined();
      expect(await h.store.getWebhook('payments', 'evt_dead')).toEqual(dead.record);
      const month = t0 + 30 * DAY_MS + 1;
      const everything = { jobsMs: 0, webhookInboxMs: 0 };
      expect(await prune({ now: month, retention: everything })).toEqual(
        report(month, { jobs: 1, jobEvents: 2, webhookInbox: 1 }, { jobs: 1 }),
      );
      expect((await h.store.listWebhooks()).map((r) => r.eventId)).toEqual(['evt_waiting']);
      expect(await h.store.get(waiting.record.jobId)).toMatchObject({ status: 'pending' });
      // Its deduplication is gone with it: a redelivery of a pruned event is a new delivery.
      expect((await h.store.acceptWebhook(delivered('evt_done'), inboxJob())).duplicate).toBe(false);
    });

    it('with a longer inbox retention a delivery and its job wait for both; a replaced job goes alone', async () => {
      const kept = await h.store.acceptWebhook(delivered('evt_1'), inboxJob());
      const first = await jobs.ended('completed', kept.record.jobId);
      const replayed = await h.store.replayWebhook('payments', 'evt_1', inboxJob());
      const second = await jobs.ended('completed', replayed!.jobId);
      const retention = { webhookInboxMs: 10 * DAY_MS };
      const week = h.start + 7 * DAY_MS + 1;
      // The first job no delivery points at any more; the second waits for its delivery's retention.
      expect(await prune({ now: week, retention })).toEqual(
        report(week, { jobs: 1, jobEvents: 2 }, { jobs: 1 }),
      );
      expect(await jobs.ids()).toEqual([second]);
      expect(await h.store.get(first)).toBeUndefined();
      expect(await prune({ now: h.start + 10 * DAY_MS, retention })).toEqual(report(h.start + 10 * DAY_MS));
      const tenDays = h.start + 10 * DAY_MS + 1;
      expect(await prune({ now: tenDays, retention })).toEqual(
        report(tenDays, { jobs: 1, jobEvents: 2, webhookInbox: 1 }, { jobs: 1 }),
      );
      expect(await h.store.listWebhooks()).toEqual([]);
    });

    it('bad options are refused before anything is read, naming the option', async () => {
      await jobs.ended('completed');
      const later = h.start + 8 * DAY_MS;
      const refusals: Array<[PruneOptions, string]> = [
        [{ batchSize: 0 }, 'retention.prune: batchSize must be an integer in [1, 10000], got 0'],
        [{ batchSize: 2.5 }, 'retention.prune: batchSize must be an integer in [1, 10000], got 2.5'],
        [{ now: Number.NaN }, 'retention.prune: now must be an integer >= 0, got NaN'],
        [{ dryRun: 'yes' as never }, "retention.prune: dryRun must be a boolean, got 'yes'"],
        [
          { retention: { jobsMs: -1 } },
          'retention.prune: retention.jobsMs must be an integer >= 0 or Infinity, got -1',
        ],
        [
          { retention: { jobMs: 1 } as never },
          'retention.prune: retention.jobMs must be one of jobsMs, deadLettersMs, webhookInboxMs, ' +
            "streamEventsMs, operationsMs, got 'jobMs'",
        ],
      ];
      for (const [options, message] of refusals) {
        await expect(h.store.retention.prune({ now: later, ...options })).rejects.toThrow(message);
      }
      await expect(h.store.retention.prune('soon' as never)).rejects.toThrow(
        "retention.prune: options must be an object, got 'soon'",
      );
      expect((await jobs.ids()).length).toBe(1);
    });

    it('an aborted signal stops between batches and says the prune is incomplete', async () => {
      for (let i = 0; i < 3; i++) await jobs.ended('completed');
      const controller = new AbortController();
      controller.abort();
      const now = h.start + 8 * DAY_MS;
      expect(await prune({ now, signal: controller.signal })).toEqual({ ...report(now), complete: false });
      expect((await jobs.ids()).length).toBe(3);
    });

    it('rejects once the store is closed', async () => {
      const other = await h.another();
      await other.close();
      await expect(other.retention.prune()).rejects.toThrow(/closed/);
      await expect(other.retention.size()).rejects.toThrow(/closed/);
    });
  });
  retentionStateContract(name, backend);
}
