import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../../core/index.js';
import { FakeClock } from '../../core/index.js';
import { openStore, type OperationStore, type Store } from '../../store/index.js';
import { OperationLedger } from './ledger.js';
import type { OperationAuditSink } from './types.js';
import { ScriptedService, T0, accept, cutOff, found, refusedConnection } from './test-support.js';

/** The ledger when its own parts fail, and the recovery pass's bookkeeping, on a real SQLite store. */

let clock: FakeClock;
let store: Store;
let service: ScriptedService;
let warnings: string[];

beforeEach(async () => {
  clock = new FakeClock(T0);
  store = await openStore({ url: ':memory:', clock });
  service = new ScriptedService();
  warnings = [];
});

afterEach(async () => {
  await store.close();
});

function ledger(operations: OperationStore = store.operations, audit?: OperationAuditSink) {
  return new OperationLedger({
    store: operations,
    clock,
    log: { warn: (_fields, message) => warnings.push(message) },
    audit,
  });
}

/** The real operation store, whose `update` fails on the calls numbered in `failing` (1-based). */
function failingUpdates(failing: number[]): OperationStore {
  const real = store.operations;
  let calls = 0;
  return {
    begin: (op) => real.begin(op),
    get: (id) => real.get(id),
    list: (filter) => real.list(filter),
    update: (id, version, patch) => {
      calls++;
      if (failing.includes(calls)) return Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return real.update(id, version, patch);
    },
  };
}

describe('OperationLedger when its own parts fail', () => {
  it('the store failing after the attempt went out: the caller gets outcome_unknown with the operation id', async () => {
    service.sends = [accept];
    // update #1 moves it in flight; #2 (recording the answer) fails.
    const ops = ledger(failingUpdates([2]));
    const error = (await ops
      .execute(service.action(), { sku: 'kite' })
      .catch((e: unknown) => e)) as BreakwaterError;
    expect([error.code, error.outcome, error.operationId]).toEqual([
      'outcome_unknown',
      'unknown',
      expect.stringMatching(/^op_/),
    ]);
    expect(error.details?.['reconcile']).toEqual({
      method: 'GET',
      path: `/orders?idempotency_key=${error.operationId}`,
    });
    // Resuming it looks the order up instead of placing a second one.
    service.lookups = [found];
    const resumed = await ledger().execute(
      service.action(),
      { sku: 'kite' },
      { operationId: error.operationId },
    );
    expect(resumed.outcome).toBe('succeeded');
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
  });

  it('the store failing before anything went out: the error names the operation, outcome failed', async () => {
    const ops = ledger(failingUpdates([1]));
    const error = (await ops
      .execute(service.action(), { sku: 'kite' })
      .catch((e: unknown) => e)) as BreakwaterError;
    expect([error.outcome, typeof error.operationId]).toEqual(['failed', 'string']);
    expect((await store.operations.get(error.operationId!))?.state).toBe('pending');
    expect(service.calls).toEqual([]);
  });

  it('a failing audit log is a warning; the operation goes on', async () => {
    service.sends = [accept];
    const audit = {
      record: async (entry: { action: string }) => {
        if (entry.action === 'operation.attempt') throw new Error('audit store down');
      },
    };
    const result = await ledger(store.operations, audit).execute(service.action(), { sku: 'kite' });
    expect(result.outcome).toBe('succeeded');
    expect(warnings).toEqual(['audit record of an operation step failed']);
  });

  it('onOperation hears the id and lookup before the first attempt', async () => {
    const heard: string[] = [];
    service.sends = [
      async (ctx) => {
        heard.push(`send ${ctx.operationId}`);
        return accept(ctx);
      },
    ];
    const result = await ledger().execute(
      service.action(),
      { sku: 'kite' },
      { onOperation: (id, reconcile) => heard.push(`begun ${id} ${reconcile?.path}`) },
    );
    const id = result.operation_id;
    expect(heard).toEqual([`begun ${id} /orders?idempotency_key=${id}`, `send ${id}`]);
  });

  it('attempts used up: a not-sent operation no longer says retry', async () => {
    service.sends = [refusedConnection, refusedConnection];
    const action = service.action({ maxAttempts: 2 });
    const ops = ledger();
    const first = await ops.execute(action, { sku: 'kite' });
    expect([first.retry_allowed, first.attempts]).toEqual([true, 1]);
    const second = await ops.execute(action, { sku: 'kite' }, { operationId: first.operation_id });
    expect([second.outcome, second.retry_allowed, second.attempts]).toEqual(['failed', false, 2]);
  });
});

describe('OperationLedger.recover bookkeeping', () => {
  it('an operation begun but never attempted (its process died) is settled not_sent at its deadline', async () => {
    const { record } = await store.operations.begin({
      action: 'shop.create_order',
      target: 'POST shop /orders',
      request: { sku: 'kite' },
      retryAllowed: true,
      reconcile: null,
      recoveryDeadlineAt: T0 + 60_000,
    });
    const ops = ledger();
    ops.define(service.action());
    clock.tick(60_000);
    expect(await ops.recover()).toBe(1);
    const settled = await store.operations.get(record.id);
    expect([settled?.state, (settled?.error as { code: string }).code]).toEqual(['failed', 'not_sent']);
    expect(service.calls).toEqual([]);
  });

  it('operations of actions this process does not define never crowd out its own', async () => {
    service.sends = [cutOff];
    service.lookups = [async () => ({ state: 'in_progress' })];
    const ops = ledger();
    const mine = await ops.execute(service.action(), { sku: 'kite' });
    for (let i = 0; i < 3; i++) {
      const { record } = await store.operations.begin({
        action: 'other.action',
        target: 'POST other /things',
        request: { i },
        retryAllowed: false,
        reconcile: null,
        recoveryDeadlineAt: T0 + 60_000,
      });
      await store.operations.update(record.id, record.version, { state: 'unknown', nextCheckAt: T0 });
    }
    clock.tick(5_000);
    service.lookups = [found];
    expect(await ops.recover(2)).toBe(1);
    expect((await store.operations.get(mine.operation_id))?.state).toBe('succeeded');
  });

  it('a pending operation scheduled early (ops reconcile) is put back to its deadline, not looked up', async () => {
    service.sends = [refusedConnection];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    const record = (await store.operations.get(result.operation_id))!;
    await store.operations.update(record.id, record.version, { nextCheckAt: T0 });
    expect(await ops.recover()).toBe(1);
    expect((await store.operations.get(record.id))?.nextCheckAt).toBe(record.recoveryDeadlineAt);
    expect(await ops.recover()).toBe(0);
    expect(service.calls).toEqual(['send#1 id=corr']);
  });
});
