import { describe, expect, it } from 'vitest';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import { MAX_OWNER_LENGTH, type JobRecord, type NewJob } from './jobs.js';
import type { NewOperation, OperationRecord } from './operations.js';

/**
 * The owner contract (docs/architecture.md#identity-and-ownership): jobs and operations keep the principal id
 * that started them, exactly as given, and list by it (`JobFilter.owner`, `OperationFilter.owner`) newest
 * first with keyset pagination, on every backend. The stores never check access: the capabilities do.
 */
export function ownerContract(name: string, backend: FacetBackend): void {
  describe(`owner contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    function newJob(overrides: Partial<NewJob> = {}): NewJob {
      return {
        type: 'email',
        payload: { n: 1 },
        runAt: h.clock.now(),
        priority: 0,
        maxAttempts: 3,
        ...overrides,
      };
    }

    async function enqueue(overrides: Partial<NewJob> = {}): Promise<JobRecord> {
      const { job } = await h.store.enqueue(newJob(overrides));
      h.clock.tick(1);
      return job;
    }

    function operation(overrides: Partial<NewOperation> = {}): NewOperation {
      return {
        action: 'commerce.create_order',
        target: 'POST commerce /orders',
        request: { sku: 'gift-1' },
        retryAllowed: false,
        reconcile: null,
        recoveryDeadlineAt: h.start + 60_000,
        ...overrides,
      };
    }

    async function begin(overrides: Partial<NewOperation> = {}): Promise<OperationRecord> {
      const { record } = await h.store.operations.begin(operation(overrides));
      h.clock.tick(1);
      return record;
    }

    const ids = (records: { id: string }[]) => records.map((record) => record.id);

    describe('jobs', () => {
      it('enqueue keeps the owner as given; absent or null is null', async () => {
        const owned = await enqueue({ owner: 'key:k1' });
        const absent = await enqueue();
        const none = await enqueue({ owner: null });
        expect([owned.owner, absent.owner, none.owner]).toEqual(['key:k1', null, null]);
        expect((await h.store.get(owned.id))?.owner).toBe('key:k1');
        expect((await h.store.get(absent.id))?.owner).toBeNull();
      });

      it('the owner stays through claim, settle, cancel and retry', async () => {
        const job = await enqueue({ owner: 'oauth:https://issuer.example ada' });
        const [claim] = await h.store.claim({ owner: 'worker-1', types: [], limit: 1, leaseMs: 30_000 });
        expect(claim!.job.owner).toBe('oauth:https://issuer.example ada');
        await h.store.fail(
          { id: job.id, token: claim!.token },
          { code: 'x', message: 'x', kind: 'permanent' },
        );
        expect((await h.store.retryFailed(job.id))!.job.owner).toBe('oauth:https://issuer.example ada');
        expect((await h.store.cancel(job.id))!.owner).toBe('oauth:https://issuer.example ada');
      });

      it('an idempotency key returns the existing job with its own owner, whoever enqueues again', async () => {
        const first = await enqueue({ owner: 'key:a', idempotencyKey: 'order-1' });
        const again = await h.store.enqueue(newJob({ owner: 'key:b', idempotencyKey: 'order-1' }));
        expect(again).toEqual({ job: first, created: false });
      });

      it('list by owner: only that owner, newest first, with type, status, limit and beforeId', async () => {
        const a1 = await enqueue({ owner: 'key:a', type: 'x' });
        const b1 = await enqueue({ owner: 'key:b', type: 'x' });
        const a2 = await enqueue({ owner: 'key:a', type: 'y' });
        await enqueue();
        const a3 = await enqueue({ owner: 'key:a', type: 'x' });
        await h.store.cancel(a2.id);

        expect(ids(await h.store.list({ owner: 'key:a' }))).toEqual([a3.id, a2.id, a1.id]);
        expect(ids(await h.store.list({ owner: 'key:b' }))).toEqual([b1.id]);
        expect(ids(await h.store.list({ owner: 'key:a', type: 'x' }))).toEqual([a3.id, a1.id]);
        expect(ids(await h.store.list({ owner: 'key:a', status: 'canceled' }))).toEqual([a2.id]);
        expect(ids(await h.store.list({ owner: 'key:a', status: ['failed', 'canceled'] }))).toEqual([a2.id]);
        expect(ids(await h.store.list({ owner: 'key:a', status: 'pending' }))).toEqual([a3.id, a1.id]);
        expect(ids(await h.store.list({ owner: 'key:a', limit: 2 }))).toEqual([a3.id, a2.id]);
        expect(ids(await h.store.list({ owner: 'key:a', limit: 2, beforeId: a2.id }))).toEqual([a1.id]);
        expect(ids(await h.store.list({ owner: 'key:a', type: 'x', beforeId: a3.id }))).toEqual([a1.id]);
        expect(ids(await h.store.list({ owner: 'key:a', createdBefore: a2.createdAt }))).toEqual([
          a2.id,
          a1.id,
        ]);
        // Exact match only: no prefix, no case folding; an owner nobody has matches nothing.
        expect(await h.store.list({ owner: 'key:' })).toEqual([]);
        expect(await h.store.list({ owner: 'KEY:A' })).toEqual([]);
        expect(await h.store.list({ owner: 'key:c' })).toEqual([]);
        // Without an owner filter, every job (ownerless ones too).
        expect(await h.store.list()).toHaveLength(5);
      });

      it.each([
        ['empty', ''],
        ['holding NUL', 'key:a\0b'],
        ['too long', 'k'.repeat(MAX_OWNER_LENGTH + 1)],
        ['not a string', 42],
      ])('refuses an owner %s, writing nothing', async (_, owner) => {
        await expect(h.store.enqueue(newJob({ owner: owner as string }))).rejects.toThrow(
          `job store: owner must be null or a string of 1 to ${MAX_OWNER_LENGTH} characters without NUL`,
        );
        expect(await h.store.list()).toEqual([]);
      });

      it('keeps an owner of the longest length', async () => {
        const owner = 'k'.repeat(MAX_OWNER_LENGTH);
        const job = await enqueue({ owner });
        expect(ids(await h.store.list({ owner }))).toEqual([job.id]);
      });

      it("a webhook delivery's job keeps the owner its job was built with (accept and replay)", async () => {
        const delivery = {
          source: 'stripe',
          eventId: 'evt_1',
          eventType: 'payment_intent.succeeded',
          receivedAt: h.clock.now(),
          occurredAt: null,
          body: '{}',
        };
        const job = newJob({ type: 'webhook:stripe', owner: 'webhook:stripe' });
        const { record } = await h.store.acceptWebhook(delivery, job);
        expect((await h.store.get(record.jobId))?.owner).toBe('webhook:stripe');
        const replayed = await h.store.replayWebhook('stripe', 'evt_1', job);
        expect((await h.store.get(replayed!.jobId))?.owner).toBe('webhook:stripe');
        expect(ids(await h.store.list({ owner: 'webhook:stripe' }))).toEqual([replayed!.jobId, record.jobId]);
      });
    });

    describe('operations', () => {
      it('begin keeps the owner as given; absent or null is null; update never changes it', async () => {
        const owned = await begin({ owner: 'key:k1' });
        const absent = await begin();
        const none = await begin({ owner: null });
        expect([owned.owner, absent.owner, none.owner]).toEqual(['key:k1', null, null]);
        const updated = await h.store.operations.update(owned.id, 1, { state: 'in_flight', attempts: 1 });
        expect(updated).toEqual({
          ...owned,
          state: 'in_flight',
          attempts: 1,
          version: 2,
          updatedAt: h.clock.now(),
        });
        expect(await h.store.operations.get(owned.id)).toEqual(updated);
      });

      it('a begin with a key stored already answers that operation, with its owner', async () => {
        const first = await begin({ owner: 'key:a', key: 'idem-1' });
        const again = await h.store.operations.begin(operation({ owner: 'key:b', key: 'idem-1' }));
        expect(again).toEqual({ record: first, created: false });
      });

      it('list by owner: only that owner, newest first, with states, action, limit and beforeId', async () => {
        const a1 = await begin({ owner: 'key:a' });
        const b1 = await begin({ owner: 'key:b' });
        const a2 = await begin({ owner: 'key:a', action: 'commerce.refund' });
        await begin();
        const a3 = await begin({ owner: 'key:a' });
        await h.store.operations.update(a3.id, 1, { state: 'unknown' });

        const list = (filter: Parameters<typeof h.store.operations.list>[0]) =>
          h.store.operations.list(filter).then(ids);
        expect(await list({ owner: 'key:a' })).toEqual([a3.id, a2.id, a1.id]);
        expect(await list({ owner: 'key:b' })).toEqual([b1.id]);
        expect(await list({ owner: 'key:a', states: ['unknown'] })).toEqual([a3.id]);
        expect(await list({ owner: 'key:a', action: 'commerce.refund' })).toEqual([a2.id]);
        expect(await list({ owner: 'key:a', limit: 1 })).toEqual([a3.id]);
        expect(await list({ owner: 'key:a', beforeId: a3.id })).toEqual([a2.id, a1.id]);
        expect(await list({ owner: 'key:' })).toEqual([]);
        expect(await list({ owner: '' })).toEqual([]);
        expect(await list({ owner: 'key:a\0' })).toEqual([]);
        expect(await list({})).toHaveLength(5);
      });

      it('refuses a bad owner at begin (nothing written) and a non-string owner filter', async () => {
        for (const owner of ['', 'key:a\0b', 'k'.repeat(MAX_OWNER_LENGTH + 1)]) {
          await expect(h.store.operations.begin(operation({ owner }))).rejects.toThrow(
            `operations.begin: owner must be a string of 1 to ${MAX_OWNER_LENGTH} characters without NUL`,
          );
        }
        expect(await h.store.operations.list()).toEqual([]);
        await expect(h.store.operations.list({ owner: 7 as unknown as string })).rejects.toThrow(
          'operations.list: owner must be a string',
        );
      });
    });
  });
}
