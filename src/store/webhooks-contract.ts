import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import type { JobStore, LeaseRef, NewJob } from './jobs.js';
import type { InboxDelivery, InboxRecord, WebhookInboxStore } from './webhooks.js';

/**
 * The webhook inbox contract suite: every rule in the docstrings of `store/webhooks.ts`, run against each
 * backend (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

/** A store with jobs and the inbox (both backends are). */
export type InboxTestStore = JobStore & WebhookInboxStore;

/** How the suite reaches one backend. */
export interface WebhookInboxBackend {
  /** Opens a store on fresh, empty storage, reading time from `clock`; called once per test. */
  open(clock: FakeClock): Promise<InboxTestStore>;
  /** Opens another store on the storage the last {@link open} made (a restart of the process). */
  reopen(clock: FakeClock): Promise<InboxTestStore>;
  /** Runs after each test once the suite has closed its stores (drop a schema, delete a file). */
  cleanup?(): Promise<void>;
}

const INBOX_ID = /^whk_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const JOB_ID = /^job_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A raw body as a payment platform might send it: odd spacing, number spellings, non-ASCII, a NUL. */
const RAW_BODY =
  '{"id":"evt_1",  "amount": 1.50e2,"note":"caf\u00e9 \u2713 \ud83d\ude00","nul":"a\u0000b",\n\t"n":-0.0}';

export function webhookInboxContract(name: string, backend: WebhookInboxBackend): void {
  describe(`WebhookInboxStore contract: ${name}`, () => {
    let clock: FakeClock;
    let store: InboxTestStore;
    let start: number;
    const extra: InboxTestStore[] = [];

    beforeEach(async () => {
      clock = new FakeClock();
      start = clock.now();
      store = await backend.open(clock);
    });

    afterEach(async () => {
      for (const other of extra.splice(0)) await other.close();
      await (store as InboxTestStore | undefined)?.close();
      store = undefined as unknown as InboxTestStore;
      await backend.cleanup?.();
    });

    function delivery(overrides: Partial<InboxDelivery> = {}): InboxDelivery {
      return {
        source: 'stripe',
        eventId: 'evt_1',
        eventType: 'payment_intent.succeeded',
        receivedAt: clock.now(),
        occurredAt: start - 2_000,
        body: RAW_BODY,
        ...overrides,
      };
    }

    /** The job of a delivery, carrying its inbox id (the function form of InboxJob). */
    function jobFor(d: InboxDelivery, overrides: Partial<NewJob> = {}): (inboxId: string) => NewJob {
      return (inboxId) => ({
        type: `webhook.${d.source}`,
        payload: { inbox_id: inboxId, event_type: d.eventType },
        runAt: clock.now(),
        priority: 0,
        maxAttempts: 5,
        ...overrides,
      });
    }

    async function accept(overrides: Partial<InboxDelivery> = {}): Promise<InboxRecord> {
      const d = delivery(overrides);
      const { duplicate, record } = await store.acceptWebhook(d, jobFor(d));
      expect(duplicate).toBe(false);
      return record;
    }

    /** Claims up to `limit` due jobs (oldest first, all priorities being equal); their leases by job id. */
    async function claimJobs(limit = 1000): Promise<Map<string, LeaseRef>> {
      const claims = await store.claim({ owner: 'w', types: [], limit, leaseMs: 30_000 });
      return new Map(claims.map((c) => [c.job.id, { id: c.job.id, token: c.token }]));
    }

    describe('acceptWebhook', () => {
      it('stores the delivery exactly and enqueues its job, whose payload carries the inbox id', async () => {
        const d = delivery();
        const { duplicate, record } = await store.acceptWebhook(d, jobFor(d, { orderingKey: 'pi_42' }));
        expect(duplicate).toBe(false);
        expect(record.id).toMatch(INBOX_ID);
        expect(record.jobId).toMatch(JOB_ID);
        expect(record).toEqual({
          ...d,
          id: record.id,
          jobId: record.jobId,
          replays: 0,
        } satisfies InboxRecord);
        expect(record.body).toBe(RAW_BODY);
        expect(await store.getWebhook('stripe', 'evt_1')).toEqual(record);
        const job = await store.get(record.jobId);
        expect(job).toMatchObject({
          type: 'webhook.stripe',
          status: 'pending',
          payload: { inbox_id: record.id, event_type: 'payment_intent.succeeded' },
          orderingKey: 'pi_42',
          maxAttempts: 5,
          createdAt: start,
        });
        expect(await store.list()).toHaveLength(1);
      });

      it('a plain NewJob is stored as given; occurredAt may be null', async () => {
        const job: NewJob = {
          type: 'webhook.github',
          payload: { x: 1 },
          runAt: start,
          priority: 2,
          maxAttempts: 1,
        };
        const d = delivery({
          source: 'github',
          eventId: 'a1b2',
          eventType: 'push',
          occurredAt: null,
          body: '',
        });
        const { record } = await store.acceptWebhook(d, job);
        expect(record).toMatchObject({ occurredAt: null, body: '', eventType: 'push' });
        expect(await store.get(record.jobId)).toMatchObject({
          payload: { x: 1 },
          priority: 2,
          orderingKey: null,
        });
      });

      it('a duplicate (source, eventId) inserts and enqueues nothing and answers the stored record', async () => {
        const first = await accept();
        clock.tick(400);
        let calls = 0;
        const again = await store.acceptWebhook(
          delivery({ eventType: 'other', body: '{}', receivedAt: clock.now() }),
          (inboxId) => {
            calls++;
            return jobFor(delivery())(inboxId);
          },
        );
        expect(again).toEqual({ duplicate: true, record: first });
        expect(calls).toBeLessThanOrEqual(1);
        expect(await store.list()).toHaveLength(1);
        expect(await store.listWebhooks()).toEqual([first]);
        // Event ids are per source: the same id from another source is another delivery.
        const github = await accept({ source: 'github' });
        expect(github.id).not.toBe(first.id);
        expect(await store.list()).toHaveLength(2);
      });

      it('50 concurrent accepts of one event: one stored delivery, one job, 49 duplicates', async () => {
        const d = delivery({ eventId: 'evt_storm' });
        const results = await Promise.all(
          Array.from({ length: 50 }, () => store.acceptWebhook({ ...d }, jobFor(d))),
        );
        expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
        const winner = results.find((r) => !r.duplicate)!.record;
        for (const r of results) expect(r.record).toEqual(winner);
        expect(await store.list()).toHaveLength(1);
        expect((await store.list())[0]!.id).toBe(winner.jobId);
        expect(await store.listWebhooks()).toEqual([winner]);
      });

      it('rejects a bad delivery with invalid_payload naming the field, writing nothing', async () => {
        const bad: [keyof InboxDelivery, unknown][] = [
          ['source', ''],
          ['source', 'x'.repeat(256)],
          ['source', 'a\u0000b'],
          ['eventId', ''],
          ['eventId', 42],
          ['eventType', ''],
          ['receivedAt', Number.NaN],
          ['occurredAt', Infinity],
          ['occurredAt', undefined],
          ['body', Buffer.from('{}')],
        ];
        let calls = 0;
        const job = (inboxId: string) => {
          calls++;
          return jobFor(delivery())(inboxId);
        };
        for (const [field, value] of bad) {
          const promise = store.acceptWebhook({ ...delivery(), [field]: value } as InboxDelivery, job);
          await expect(promise, `${field} = ${String(value)}`).rejects.toBeInstanceOf(BreakwaterError);
          await expect(promise).rejects.toMatchObject({
            code: 'invalid_payload',
            status: 400,
            details: { field },
          });
        }
        expect(calls).toBe(0);
        expect(await store.listWebhooks()).toEqual([]);
        expect(await store.list()).toEqual([]);
        // The longest key accepted.
        expect((await accept({ eventId: 'e'.repeat(255) })).eventId).toHaveLength(255);
      });

      it('rejects a job with an idempotency key or a payload with no JSON form, writing nothing', async () => {
        const d = delivery();
        const keyed = jobFor(d, { idempotencyKey: 'evt_1' });
        await expect(store.acceptWebhook(d, keyed)).rejects.toBeInstanceOf(TypeError);
        await expect(store.acceptWebhook(d, jobFor(d, { payload: { n: 1n } }))).rejects.toBeInstanceOf(
          TypeError,
        );
        await expect(
          store.acceptWebhook(d, () => {
            throw new RangeError('no job for you');
          }),
        ).rejects.toThrow('no job for you');
        expect(await store.listWebhooks()).toEqual([]);
        expect(await store.list()).toEqual([]);
        // The event is still new afterwards.
        expect((await store.acceptWebhook(d, jobFor(d))).duplicate).toBe(false);
      });
    });

    describe('getWebhook and listWebhooks', () => {
      it('get of an unknown delivery (or a key that cannot be stored) is undefined', async () => {
        await accept();
        expect(await store.getWebhook('stripe', 'evt_2')).toBeUndefined();
        expect(await store.getWebhook('github', 'evt_1')).toBeUndefined();
        expect(await store.getWebhook('', '')).toBeUndefined();
      });

      it('lists newest first, by source, paged by beforeId and limit with no gap and no repeat', async () => {
        const made: InboxRecord[] = [];
        for (let i = 0; i < 7; i++) {
          made.push(await accept({ source: i % 2 === 0 ? 'stripe' : 'github', eventId: `evt_${i}` }));
          clock.tick(1);
        }
        const newestFirst = [...made].reverse();
        expect(await store.listWebhooks()).toEqual(newestFirst);
        expect(await store.listWebhooks({ source: 'github' })).toEqual(
          newestFirst.filter((r) => r.source === 'github'),
        );
        expect(await store.listWebhooks({ source: 'nobody' })).toEqual([]);
        const pages: InboxRecord[][] = [];
        let beforeId: string | undefined;
        for (;;) {
          const page = await store.listWebhooks({ source: 'stripe', limit: 3, beforeId });
          if (page.length === 0) break;
          pages.push(page);
          beforeId = page[page.length - 1]!.id;
        }
        expect(pages.map((p) => p.length)).toEqual([3, 1]);
        expect(pages.flat()).toEqual(newestFirst.filter((r) => r.source === 'stripe'));
        expect(await store.listWebhooks({ beforeId: made[2]!.id })).toEqual([made[1], made[0]]);
        expect(await store.listWebhooks({ limit: 0 })).toEqual([]);
      });
    });

    describe('webhookBacklog', () => {
      it("counts the source's unfinished jobs as they are claimed, finish, are retried and replayed", async () => {
        const a = await accept({ eventId: 'a' });
        const b = await accept({ eventId: 'b' });
        const c = await accept({ eventId: 'c' });
        const d = await accept({ eventId: 'd' });
        await accept({ source: 'github', eventId: 'a' });
        // A job of the same type that no delivery enqueued is not backlog.
        await store.enqueue({
          type: 'webhook.stripe',
          payload: null,
          runAt: start,
          priority: 0,
          maxAttempts: 1,
        });
        expect(await store.webhookBacklog('stripe')).toBe(4);
        expect(await store.webhookBacklog('github')).toBe(1);
        expect(await store.webhookBacklog('nobody')).toBe(0);

        const leases = await claimJobs(2);
        expect([...leases.keys()]).toEqual([a.jobId, b.jobId]);
        expect(await store.webhookBacklog('stripe')).toBe(4); // in_progress still counts
        await store.complete(leases.get(a.jobId)!, 'done');
        expect(await store.webhookBacklog('stripe')).toBe(3);
        await store.fail(leases.get(b.jobId)!, {
          code: 'invalid_payload',
          message: 'bad',
          kind: 'permanent',
        });
        expect(await store.webhookBacklog('stripe')).toBe(2);
        await store.cancel(c.jobId);
        expect(await store.webhookBacklog('stripe')).toBe(1);
        await store.retryFailed(b.jobId);
        expect(await store.webhookBacklog('stripe')).toBe(2);
        await store.replayWebhook('stripe', 'a', jobFor(delivery()));
        expect(await store.webhookBacklog('stripe')).toBe(3);
        expect((await store.get(d.jobId))!.status).toBe('pending');
        expect(await store.webhookBacklog('github')).toBe(1);
      });
    });

    describe('replayWebhook', () => {
      it('enqueues a new job for the delivery, points the record at it and counts the replay', async () => {
        const first = await accept();
        await store.complete((await claimJobs()).get(first.jobId)!, 'handled');
        clock.tick(60_000);
        const replayed = await store.replayWebhook('stripe', 'evt_1', jobFor(delivery()));
        expect(replayed).toEqual({ ...first, jobId: replayed!.jobId, replays: 1 });
        expect(replayed!.jobId).not.toBe(first.jobId);
        expect(await store.getWebhook('stripe', 'evt_1')).toEqual(replayed);
        expect(await store.get(replayed!.jobId)).toMatchObject({
          status: 'pending',
          payload: { inbox_id: first.id, event_type: 'payment_intent.succeeded' },
          createdAt: start + 60_000,
        });
        expect((await store.get(first.jobId))!.status).toBe('completed');
        const again = await store.replayWebhook('stripe', 'evt_1', jobFor(delivery()));
        expect(again!.replays).toBe(2);
        expect(await store.list()).toHaveLength(3);
      });

      it('concurrent replays each count and each enqueue a job', async () => {
        await accept();
        const results = await Promise.all(
          Array.from({ length: 5 }, () => store.replayWebhook('stripe', 'evt_1', jobFor(delivery()))),
        );
        expect(new Set(results.map((r) => r!.jobId)).size).toBe(5);
        expect((await store.getWebhook('stripe', 'evt_1'))!.replays).toBe(5);
        expect(await store.list()).toHaveLength(6);
      });

      it('an unknown delivery is undefined; nothing is written and the job function is not called', async () => {
        await accept();
        let calls = 0;
        const job = (inboxId: string) => {
          calls++;
          return jobFor(delivery())(inboxId);
        };
        expect(await store.replayWebhook('stripe', 'evt_404', job)).toBeUndefined();
        expect(await store.replayWebhook('', 'evt_1', job)).toBeUndefined();
        expect(calls).toBe(0);
        expect(await store.list()).toHaveLength(1);
        await expect(
          store.replayWebhook('stripe', 'evt_1', jobFor(delivery(), { idempotencyKey: 'k' })),
        ).rejects.toBeInstanceOf(TypeError);
        expect((await store.getWebhook('stripe', 'evt_1'))!.replays).toBe(0);
        expect(await store.list()).toHaveLength(1);
      });
    });

    it('deliveries, their jobs and the deduplication survive close and reopen', async () => {
      const first = await accept();
      const second = await accept({ source: 'github', eventId: 'g1', occurredAt: null });
      await store.close();
      const again = await backend.reopen(clock);
      extra.push(again);
      store = again;
      expect(await again.getWebhook('stripe', 'evt_1')).toEqual(first);
      expect(await again.listWebhooks()).toEqual([second, first]);
      expect(await again.webhookBacklog('stripe')).toBe(1);
      expect((await again.get(first.jobId))!.payload).toEqual({
        inbox_id: first.id,
        event_type: 'payment_intent.succeeded',
      });
      const d = delivery();
      expect(await again.acceptWebhook(d, jobFor(d))).toEqual({ duplicate: true, record: first });
      expect(await again.list()).toHaveLength(2);
    });
  });
}
