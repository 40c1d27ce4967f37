import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AUDIT_GENESIS_HASH, type AuditSealer } from './audit.js';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import type { OperationState } from './operations.js';
import { DAY_MS, HOUR_MS, JobMaker, delivered, inboxJob, report } from './retention-fixtures.js';
import { SIZE_KINDS, type PruneOptions } from './retention.js';

/**
 * The retention contract suite, part 2: stream events, idempotency records, settled operations, the audit log
 * (never pruned) and the store's size. Registered by `retentionContract` (part 1).
 */

/** A sealer of a chained record, as operations/ writes them: the hash covers seq, prevHash and body. */
function sealer(text: string): AuditSealer {
  return (seq, prevHash) => {
    const body = JSON.stringify({ seq, text });
    return { body, hash: createHash('sha256').update(`${seq}\n${prevHash}\n${body}`).digest('hex') };
  };
}

export function retentionStateContract(name: string, backend: FacetBackend): void {
  describe(`RetentionStore contract (state, size): ${name}`, () => {
    const h = useFacetHarness(backend);
    const prune = (options: PruneOptions) => h.store.retention.prune(options);

    it('stream events go once older than 1 hour, and a stream with them; later ones stay', async () => {
      const early = [
        await h.store.appendStreamEvent('s1', { n: 1 }),
        await h.store.appendStreamEvent('s1', { n: 2 }),
        await h.store.appendStreamEvent('s2', { n: 1 }),
      ];
      h.clock.tick(1000);
      const late = await h.store.appendStreamEvent('s2', { n: 2 });
      const t0 = h.start;
      expect(await prune({ now: t0 + HOUR_MS })).toEqual(report(t0 + HOUR_MS));
      const hour = t0 + HOUR_MS + 1;
      expect(await prune({ now: hour, batchSize: 2 })).toEqual(
        report(hour, { streamEvents: 3 }, { streamEvents: 2 }),
      );
      for (const id of early) expect(await h.store.streamEventsAfter(id)).toBeUndefined();
      expect(await h.store.streamEventsAfter(late)).toEqual({ streamId: 's2', events: [] });
      // s1 is gone with its last event: its next append opens a stream under a new number.
      const again = await h.store.appendStreamEvent('s1', { n: 3 });
      expect(again.split('-')[0]).not.toBe(early[0]!.split('-')[0]);
      expect(again.endsWith('-1')).toBe(true);
      // s2 still holds an event, so it keeps its number and its seq.
      expect(await h.store.appendStreamEvent('s2', { n: 3 })).toBe(`${late.split('-')[0]}-3`);
      // The three appended at t0 + 1 s go together.
      const later = t0 + 1000 + HOUR_MS + 1;
      expect(await prune({ now: later })).toEqual(report(later, { streamEvents: 3 }, { streamEvents: 1 }));
    });

    it('idempotency records go at their expiry, not before', async () => {
      for (const key of ['a', 'b', 'c']) {
        await h.store.idempotency.begin({
          scope: 'client',
          key,
          fingerprint: 'f',
          lockMs: 1000,
          ttlMs: 60_000,
        });
      }
      h.clock.tick(1);
      await h.store.idempotency.begin({
        scope: 'client',
        key: 'd',
        fingerprint: 'f',
        lockMs: 1000,
        ttlMs: 60_000,
      });
      const expiry = h.start + 60_000;
      expect(await prune({ now: expiry - 1 })).toEqual(report(expiry - 1));
      expect(await prune({ now: expiry, batchSize: 2 })).toEqual(
        report(expiry, { idempotency: 3 }, { idempotency: 2 }),
      );
      h.clock.tick(59_999);
      expect(await h.store.idempotency.get('client', 'd')).toMatchObject({ key: 'd', expiresAt: expiry + 1 });
      expect(await prune({ now: expiry + 1 })).toEqual(
        report(expiry + 1, { idempotency: 1 }, { idempotency: 1 }),
      );
    });

    it('settled operations go 30 days after they settled; unsettled ones never', async () => {
      const states: OperationState[] = [
        'succeeded',
        'failed',
        'pending',
        'in_flight',
        'unknown',
        'needs_attention',
      ];
      const ids: string[] = [];
      for (const state of states) {
        const { record } = await h.store.operations.begin({
          action: 'commerce.create_order',
          target: 'POST commerce /orders',
          request: {},
          retryAllowed: false,
          reconcile: null,
          recoveryDeadlineAt: h.start + HOUR_MS,
        });
        if (state !== 'pending') await h.store.operations.update(record.id, 1, { state });
        ids.push(record.id);
      }
      const t0 = h.start;
      expect(await prune({ now: t0 + 30 * DAY_MS })).toEqual(report(t0 + 30 * DAY_MS));
      const month = t0 + 30 * DAY_MS + 1;
      expect(await prune({ now: month })).toEqual(report(month, { operations: 2 }, { operations: 1 }));
      const left = async () => (await h.store.operations.list()).map((op) => op.state).sort();
      expect(await left()).toEqual(['in_flight', 'needs_attention', 'pending', 'unknown']);
      const later = t0 + 3650 * DAY_MS;
      expect(await prune({ now: later, retention: { operationsMs: 0 } })).toEqual(report(later));
      expect(await left()).toEqual(['in_flight', 'needs_attention', 'pending', 'unknown']);
      expect(await h.store.operations.get(ids[0]!)).toBeUndefined();
    });

    it('the audit log is never pruned: every record stays as it was, the chain intact', async () => {
      await h.store.audit.append([sealer('a'), sealer('b'), sealer('c')]);
      await new JobMaker(h).ended('completed');
      const before = await h.store.audit.read(0, 100);
      const later = h.start + 3650 * DAY_MS;
      const everything = {
        jobsMs: 0,
        deadLettersMs: 0,
        webhookInboxMs: 0,
        streamEventsMs: 0,
        operationsMs: 0,
      };
      expect((await prune({ now: later, retention: everything })).removed.jobs).toBe(1);
      expect(await h.store.audit.read(0, 100)).toEqual(before);
      expect(before.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(before[0]!.prevHash).toBe(AUDIT_GENESIS_HASH);
      expect((await h.store.retention.size()).rows.audit).toBe(3);
    });

    it('size counts the rows of every kind exactly, and the bytes on disk', async () => {
      const empty = await h.store.retention.size();
      expect(empty.rows).toEqual(Object.fromEntries(SIZE_KINDS.map((kind) => [kind, 0])));
      expect(empty.measuredAt).toBe(h.start);
      expect(empty.bytes).toBeGreaterThan(0);
      const jobs = new JobMaker(h);
      await jobs.ended('completed');
      await jobs.running();
      await h.store.acceptWebhook(delivered('evt_1'), inboxJob());
      await h.store.appendStreamEvent('s', { n: 1 });
      await h.store.idempotency.begin({
        scope: 'c',
        key: 'k',
        fingerprint: 'f',
        lockMs: 1000,
        ttlMs: 60_000,
      });
      await h.store.operations.begin({
        action: 'a',
        target: 't',
        request: {},
        retryAllowed: false,
        reconcile: null,
        recoveryDeadlineAt: h.start,
      });
      await h.store.audit.append([sealer('a')]);
      h.clock.tick(5);
      const size = await h.store.retention.size();
      expect(size.rows).toEqual({
        jobs: 3,
        jobEvents: 3,
        webhookInbox: 1,
        streamEvents: 1,
        idempotency: 1,
        operations: 1,
        audit: 1,
      });
      expect(size.measuredAt).toBe(h.start + 5);
    });
  });
}
