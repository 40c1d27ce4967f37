import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import { useFacetHarness, type FacetBackend } from './facets-contract.js';
import type { NewOperation, OperationRecord, OperationState } from './operations.js';

/**
 * The operation ledger contract suite: every rule in the docstrings of `store/operations.ts`, run against
 * each backend (both backends pass the same contract tests: docs/architecture.md#contract-suites).
 */

const OP_ID = /^op_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const HOUR_MS = 3_600_000;

/** A request as a tool might persist it: nested, non-ASCII, an escaped NUL, key order that must be kept. */
const REQUEST = { z: 1, a: { items: [{ sku: 'gift-1', qty: 2 }], note: 'caf\u00e9 \ud83d\ude00 a\u0000b' } };

export function operationsContract(name: string, backend: FacetBackend): void {
  describe(`OperationStore contract: ${name}`, () => {
    const h = useFacetHarness(backend);

    function operation(overrides: Partial<NewOperation> = {}): NewOperation {
      return {
        action: 'commerce.create_order',
        target: 'POST commerce /orders',
        request: REQUEST,
        retryAllowed: false,
        reconcile: { method: 'GET', path: '/orders?idempotency_key=k' },
        recoveryDeadlineAt: h.start + HOUR_MS,
        ...overrides,
      };
    }

    async function created(overrides: Partial<NewOperation> = {}): Promise<OperationRecord> {
      const { record, created: isNew } = await h.store.operations.begin(operation(overrides));
      expect(isNew).toBe(true);
      return record;
    }

    it('begin persists a pending operation: version 1, no attempts, the id as correlation id', async () => {
      const { record, created: isNew } = await h.store.operations.begin(operation());
      expect(isNew).toBe(true);
      expect(record.id).toMatch(OP_ID);
      expect(record).toEqual({
        id: record.id,
        action: 'commerce.create_order',
        target: 'POST commerce /orders',
        key: null,
        request: REQUEST,
        correlationId: record.id,
        retryAllowed: false,
        reconcile: { method: 'GET', path: '/orders?idempotency_key=k' },
        state: 'pending',
        attempts: 0,
        version: 1,
        observation: null,
        result: null,
        error: null,
        evidence: null,
        recoveryDeadlineAt: h.start + HOUR_MS,
        nextCheckAt: h.start + HOUR_MS,
        createdAt: h.start,
        updatedAt: h.start,
        settledAt: null,
        owner: null,
      });
      expect(Object.keys(record.request as object)).toEqual(['z', 'a']);
      expect(await h.store.operations.get(record.id)).toEqual(record);
    });

    it('begin keeps a given correlation id, key, retryAllowed and a null reconcile hint', async () => {
      const record = await created({
        correlationId: 'corr-1',
        key: 'idem-1',
        retryAllowed: true,
        reconcile: null,
      });
      expect(record).toMatchObject({
        correlationId: 'corr-1',
        key: 'idem-1',
        retryAllowed: true,
        reconcile: null,
      });
      expect(await h.store.operations.get(record.id)).toEqual(record);
    });

    it('begin with an (action, key) already stored returns that operation, created: false', async () => {
      const first = await created({ key: 'idem-1' });
      h.clock.tick(5);
      const again = await h.store.operations.begin(operation({ key: 'idem-1', request: { other: true } }));
      expect(again).toEqual({ record: first, created: false });
      // The same key under another action is another operation.
      const other = await created({ key: 'idem-1', action: 'commerce.refund' });
      expect(other.id).not.toBe(first.id);
      expect(await h.store.operations.list()).toHaveLength(2);
    });

    it('begin with a caller-made id stores it; the same id again (even concurrently) returns that one', async () => {
      const first = await created({ id: 'op_caller-made-1' });
      expect([first.id, first.correlationId]).toEqual(['op_caller-made-1', 'op_caller-made-1']);
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          h.store.operations.begin(operation({ id: 'op_caller-made-1', request: { other: true } })),
        ),
      );
      expect(results.every((r) => !r.created && r.record.id === first.id)).toBe(true);
      expect(results[0]!.record).toEqual(first);
      expect(await h.store.operations.list()).toHaveLength(1);
    });

    it('20 concurrent begins of one (action, key): exactly one creates, all answer its record', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => h.store.operations.begin(operation({ key: 'idem-race' }))),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.record.id)).size).toBe(1);
      expect(await h.store.operations.list()).toHaveLength(1);
    });

    it('concurrent begins of one key from two stores on the same storage create one operation', async () => {
      const other = await h.another();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? h.store : other).operations.begin(operation({ key: 'idem-race' })),
        ),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.record.id)).size).toBe(1);
    });

    it('begins without a key never collide', async () => {
      const a = await created();
      const b = await created();
      expect(a.id < b.id).toBe(true);
    });

    it('get of an unknown or malformed id is undefined', async () => {
      await created();
      expect(await h.store.operations.get('op_missing')).toBeUndefined();
      expect(await h.store.operations.get('')).toBeUndefined();
      expect(await h.store.operations.get('op\0x')).toBeUndefined();
    });

    it('update applies the patch at the expected version, bumping version and updatedAt', async () => {
      const record = await created();
      h.clock.tick(100);
      const updated = await h.store.operations.update(record.id, 1, {
        state: 'in_flight',
        attempts: 1,
        observation: 'not_sent',
        nextCheckAt: h.start + 10_100,
      });
      const expected: OperationRecord = {
        ...record,
        state: 'in_flight',
        attempts: 1,
        observation: 'not_sent',
        nextCheckAt: h.start + 10_100,
        version: 2,
        updatedAt: h.start + 100,
      };
      expect(updated).toEqual(expected);
      expect(await h.store.operations.get(record.id)).toEqual(expected);

      // Absent (or undefined) fields are kept; null clears a nullable one.
      h.clock.tick(100);
      const next = await h.store.operations.update(record.id, 2, {
        state: 'unknown',
        observation: null,
        result: undefined,
        evidence: { seen: ['response_timeout'] },
        nextCheckAt: null,
      });
      expect(next).toEqual({
        ...expected,
        state: 'unknown',
        observation: null,
        evidence: { seen: ['response_timeout'] },
        nextCheckAt: null,
        version: 3,
        updatedAt: h.start + 200,
      });
      // An empty patch still bumps the version (a claim on the operation).
      expect(await h.store.operations.update(record.id, 3, {})).toMatchObject({
        version: 4,
        state: 'unknown',
      });
    });

    it('update with a stale version, or of an unknown id, is undefined and changes nothing', async () => {
      const record = await created();
      const moved = await h.store.operations.update(record.id, 1, { attempts: 1 });
      expect(moved!.version).toBe(2);
      expect(await h.store.operations.update(record.id, 1, { attempts: 7 })).toBeUndefined();
      expect(await h.store.operations.update(record.id, 3, { attempts: 7 })).toBeUndefined();
      expect(await h.store.operations.update('op_missing', 1, { attempts: 7 })).toBeUndefined();
      expect(await h.store.operations.get(record.id)).toEqual(moved);
    });

    it('two updates with the same expected version: exactly one wins', async () => {
      const record = await created();
      const other = await h.another();
      const results = await Promise.all([
        h.store.operations.update(record.id, 1, { state: 'succeeded', result: { order: 'ord_1' } }),
        other.operations.update(record.id, 1, { state: 'failed', error: { code: 'x' } }),
        h.store.operations.update(record.id, 1, { state: 'unknown' }),
        other.operations.update(record.id, 1, { attempts: 3 }),
      ]);
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.version).toBe(2);
      expect(await h.store.operations.get(record.id)).toEqual(winners[0]);
    });

    it('a settled operation gets settledAt and never changes again', async () => {
      for (const state of ['succeeded', 'failed'] as const) {
        const record = await created();
        h.clock.tick(50);
        const settled = await h.store.operations.update(record.id, 1, {
          state,
          attempts: 1,
          observation: state === 'succeeded' ? 'http_201' : 'http_422',
          result: state === 'succeeded' ? { order: 'ord_1' } : undefined,
          error: state === 'failed' ? { code: 'invalid_payload', message: 'bad sku' } : undefined,
        });
        expect(settled).toMatchObject({
          state,
          version: 2,
          settledAt: h.clock.now(),
          updatedAt: h.clock.now(),
        });
        h.clock.tick(50);
        expect(await h.store.operations.update(record.id, 2, { state: 'pending' })).toBeUndefined();
        expect(await h.store.operations.update(record.id, 2, { attempts: 2 })).toBeUndefined();
        expect(await h.store.operations.get(record.id)).toEqual(settled);
      }
    });

    it('an unsettled state keeps settledAt null', async () => {
      const record = await created();
      for (const [version, state] of [
        [1, 'in_flight'],
        [2, 'unknown'],
        [3, 'needs_attention'],
        [4, 'pending'],
      ] as const) {
        const next = await h.store.operations.update(record.id, version, { state });
        expect(next).toMatchObject({ state, settledAt: null, version: version + 1 });
      }
    });

    it('list filters by states, action, dueBy and beforeId, newest first, limited', async () => {
      const a = await created({ action: 'commerce.create_order' });
      const b = await created({ action: 'commerce.refund' });
      const c = await created({ action: 'commerce.create_order' });
      const d = await created({ action: 'analytics.track' });
      await h.store.operations.update(a.id, 1, { state: 'unknown', nextCheckAt: h.start + 1_000 });
      await h.store.operations.update(b.id, 1, { state: 'in_flight', nextCheckAt: h.start + 2_000 });
      await h.store.operations.update(c.id, 1, { state: 'unknown', nextCheckAt: h.start + 3_000 });
      await h.store.operations.update(d.id, 1, { state: 'succeeded' });
      const ids = (records: OperationRecord[]) => records.map((r) => r.id);

      expect(ids(await h.store.operations.list())).toEqual([d.id, c.id, b.id, a.id]);
      expect(ids(await h.store.operations.list({ states: ['unknown'] }))).toEqual([c.id, a.id]);
      expect(ids(await h.store.operations.list({ states: ['unknown', 'in_flight', 'unknown'] }))).toEqual([
        c.id,
        b.id,
        a.id,
      ]);
      expect(await h.store.operations.list({ states: [] })).toEqual([]);
      expect(ids(await h.store.operations.list({ action: 'commerce.create_order' }))).toEqual([c.id, a.id]);
      expect(await h.store.operations.list({ action: 'nope' })).toEqual([]);
      expect(ids(await h.store.operations.list({ dueBy: h.start + 2_000 }))).toEqual([b.id, a.id]);
      expect(ids(await h.store.operations.list({ dueBy: h.start + 999 }))).toEqual([]);
      expect(
        ids(await h.store.operations.list({ states: ['unknown', 'in_flight'], dueBy: h.start + 3_000 })),
      ).toEqual([c.id, b.id, a.id]);
      expect(ids(await h.store.operations.list({ beforeId: c.id }))).toEqual([b.id, a.id]);
      expect(ids(await h.store.operations.list({ limit: 2 }))).toEqual([d.id, c.id]);
      expect(ids(await h.store.operations.list({ limit: 2, beforeId: c.id }))).toEqual([b.id, a.id]);
      expect(await h.store.operations.list({ limit: 0 })).toEqual([]);
      expect(
        ids(
          await h.store.operations.list({ action: 'commerce.create_order', states: ['unknown'], limit: 1 }),
        ),
      ).toEqual([c.id]);
      const listed = await h.store.operations.list({ states: ['succeeded'] });
      expect(listed).toEqual([await h.store.operations.get(d.id)]);
    });

    it('list pages 100 by default and at most 1000', async () => {
      for (let i = 0; i < 105; i++) await created();
      expect(await h.store.operations.list()).toHaveLength(100);
      expect(await h.store.operations.list({ limit: 5000 })).toHaveLength(105);
      const all = await h.store.operations.list({ limit: 1000 });
      const sorted = [...all].sort((x, y) => (x.id < y.id ? 1 : -1));
      expect(all.map((r) => r.id)).toEqual(sorted.map((r) => r.id));
    });

    it('begin refuses bad operations (RangeError, or invalid_payload for the request) and writes nothing', async () => {
      const ranges: Partial<NewOperation>[] = [
        { action: '' },
        { action: 'a'.repeat(256) },
        { action: 'a\0' },
        { target: '' },
        { target: 't'.repeat(256) },
        { key: '' },
        { key: 'k\0' },
        { id: '' },
        { id: 'i'.repeat(256) },
        { correlationId: '' },
        { correlationId: 'c'.repeat(256) },
        { recoveryDeadlineAt: Number.NaN },
        { recoveryDeadlineAt: Infinity },
        { retryAllowed: 'yes' as unknown as boolean },
        { reconcile: { method: 'GET' } as unknown as NewOperation['reconcile'] },
      ];
      for (const overrides of ranges) {
        await expect(h.store.operations.begin(operation(overrides))).rejects.toBeInstanceOf(RangeError);
      }
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      for (const request of [undefined, () => 1, Symbol('x'), 10n, cyclic]) {
        const error = await h.store.operations.begin(operation({ request })).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BreakwaterError);
        expect((error as BreakwaterError).code).toBe('invalid_payload');
        expect((error as BreakwaterError).details).toEqual({ field: 'request' });
      }
      expect(await h.store.operations.list()).toEqual([]);
    });

    it('update refuses a bad patch (RangeError, or invalid_payload for JSON fields) and changes nothing', async () => {
      const record = await created();
      const ranges = [
        { attempts: -1 },
        { attempts: 1.5 },
        { state: 'done' as OperationState },
        { observation: '' },
        { observation: 'o\0' },
        { nextCheckAt: Number.NaN },
      ];
      for (const patch of ranges) {
        await expect(h.store.operations.update(record.id, 1, patch)).rejects.toBeInstanceOf(RangeError);
      }
      await expect(h.store.operations.update(record.id, 0, {})).rejects.toBeInstanceOf(RangeError);
      await expect(h.store.operations.update(record.id, 1.5, {})).rejects.toBeInstanceOf(RangeError);
      for (const field of ['result', 'error', 'evidence'] as const) {
        const error = await h.store.operations
          .update(record.id, 1, { [field]: 10n })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BreakwaterError);
        expect((error as BreakwaterError).code).toBe('invalid_payload');
        expect((error as BreakwaterError).details).toEqual({ field });
      }
      expect(await h.store.operations.get(record.id)).toEqual(record);
    });

    it('list refuses an unknown state or a non-finite dueBy with a RangeError', async () => {
      await expect(h.store.operations.list({ states: ['done' as OperationState] })).rejects.toBeInstanceOf(
        RangeError,
      );
      await expect(h.store.operations.list({ dueBy: Number.NaN })).rejects.toBeInstanceOf(RangeError);
    });

    it('operations survive a reopen of the storage', async () => {
      const record = await created({ key: 'idem-1' });
      const other = await h.another();
      expect(await other.operations.get(record.id)).toEqual(record);
      expect(await other.operations.begin(operation({ key: 'idem-1' }))).toEqual({ record, created: false });
    });

    it('every method rejects after close', async () => {
      const record = await created();
      await h.store.close();
      await expect(h.store.operations.begin(operation())).rejects.toThrow(/closed/);
      await expect(h.store.operations.get(record.id)).rejects.toThrow(/closed/);
      await expect(h.store.operations.update(record.id, 1, { attempts: 1 })).rejects.toThrow(/closed/);
      await expect(h.store.operations.list()).rejects.toThrow(/closed/);
    });
  });
}
