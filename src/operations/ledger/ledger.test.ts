import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import { openStore, type Store } from '../../store/index.js';
import { OperationLedger } from './ledger.js';
import {
  ScriptedService,
  T0,
  accept,
  cutOff,
  found,
  notFound,
  refusedConnection,
  rejected,
  type Order,
  type SendStep,
} from './test-support.js';

let clock: FakeClock;
let store: Store;
let service: ScriptedService;
let warnings: string[];
let audit: { action: string; operationId?: string }[];

function ledger(): OperationLedger {
  return new OperationLedger({
    store: store.operations,
    clock,
    log: { warn: (_fields, message) => warnings.push(message) },
    audit: {
      record: async (entry) => {
        audit.push({ action: entry.action, operationId: entry.operationId });
      },
    },
  });
}

beforeEach(async () => {
  clock = new FakeClock(T0);
  store = await openStore({ url: ':memory:', clock });
  service = new ScriptedService();
  warnings = [];
  audit = [];
});

afterEach(async () => {
  await store.close();
});

describe('OperationLedger.execute', () => {
  it('persists the operation before the first call and sends its id as key and correlation id', async () => {
    const seenInLedger: string[] = [];
    service.sends = [
      async (ctx) => {
        const stored = await store.operations.get(ctx.operationId);
        seenInLedger.push(`${stored?.state} attempts=${stored?.attempts}`);
        return accept(ctx);
      },
    ];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect(seenInLedger).toEqual(['in_flight attempts=1']);
    expect(service.calls).toEqual(['send#1 id=corr']);
    expect(result).toEqual({
      outcome: 'succeeded',
      state: 'succeeded',
      operation_id: result.operation_id,
      correlation_id: result.operation_id,
      transport_observation: 'response_received',
      retry_allowed: false,
      retry_after_ms: null,
      reconcile: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
      result: { order_id: `ord_${result.operation_id.slice(-4)}`, sku: 'kite' },
      attempts: 1,
    });
    expect(result.operation_id).toMatch(/^op_[0-9a-f-]{36}$/);
    expect(audit.map((a) => a.action)).toEqual([
      'operation.begin',
      'operation.attempt',
      'operation.succeeded',
    ]);
  });

  it('a failure before the request was written: failed, retry allowed, and a resume sends again', async () => {
    service.sends = [refusedConnection];
    const ops = ledger();
    const first = await ops.execute(service.action(), { sku: 'kite' });
    expect([first.outcome, first.state, first.retry_allowed, first.transport_observation]).toEqual([
      'failed',
      'pending',
      true,
      'ECONNREFUSED',
    ]);
    service.sends = [accept];
    const again = await ops.execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id });
    expect([again.outcome, again.attempts, again.operation_id]).toEqual(['succeeded', 2, first.operation_id]);
    expect(service.calls).toEqual(['send#1 id=corr', 'send#2 id=corr']);
  });

  it('a refusal settles it failed; a resume answers the same without sending', async () => {
    service.sends = [rejected];
    const ops = ledger();
    const first = await ops.execute(service.action(), { sku: 'kite' });
    expect([first.outcome, first.state, first.retry_allowed, first.error]).toEqual([
      'failed',
      'failed',
      false,
      { code: 'upstream_error', message: 'The shop could not accept this order: out of stock.' },
    ]);
    const again = await ops.execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id });
    expect(again).toEqual(first);
    expect(service.calls).toEqual(['send#1 id=corr']);
  });

  it('cut off after writing, a lookup that finds the order settles it succeeded, no resend', async () => {
    service.sends = [cutOff];
    service.lookups = [found];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect([result.outcome, result.transport_observation, result.attempts]).toEqual([
      'succeeded',
      'lookup_succeeded',
      1,
    ]);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
    expect(audit.map((a) => a.action)).toEqual([
      'operation.begin',
      'operation.attempt',
      'operation.unknown',
      'operation.reconciled',
    ]);
  });

  it('cut off, nothing found, resending allowed: resent under the same id after the lookup', async () => {
    service.sends = [cutOff, accept];
    service.lookups = [notFound];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect([result.outcome, result.attempts]).toEqual(['succeeded', 2]);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup', 'send#2 id=corr']);
  });

  it('cut off, nothing found, resending not allowed: never settled failed by itself; escalated, then a manual lookup settles it', async () => {
    const action = service.action({ retryAllowed: false, recoveryMs: 60_000 });
    service.sends = [cutOff];
    service.lookups = [notFound, notFound];
    const ops = ledger();
    const result = await ops.execute(action, { sku: 'kite' });
    expect([result.outcome, result.state, result.retry_allowed, result.error?.code]).toEqual([
      'unknown',
      'unknown',
      false,
      'outcome_unknown',
    ]);
    // A "not found" proves nothing while the request may still be on its way: it stays unknown.
    clock.tick(5_000);
    expect(await ops.recover()).toBe(1);
    expect((await store.operations.get(result.operation_id))?.state).toBe('unknown');
    clock.tick(55_000);
    await ops.recover();
    expect((await store.operations.get(result.operation_id))?.state).toBe('needs_attention');
    // Past the deadline a person asks: nothing there now means it did not happen.
    service.lookups = [notFound];
    const settled = await ops.reconcile(result.operation_id);
    expect([settled.outcome, settled.error]).toEqual([
      'failed',
      {
        code: 'not_accepted',
        message: 'The service holds nothing under this operation, so it did not happen.',
      },
    ]);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup', 'lookup', 'lookup']);
  });

  it('once the service said it holds the request (409 in progress), a later "not found" never settles it failed', async () => {
    const inProgress: SendStep = async () => {
      throw new BreakwaterError('outcome_unknown', {
        outcome: 'unknown',
        details: { reason: 'idempotency_in_progress' },
      });
    };
    const action = service.action({ recoveryMs: 60_000, maxAttempts: 2 });
    service.sends = [cutOff, inProgress];
    service.lookups = [notFound, notFound];
    const ops = ledger();
    const result = await ops.execute(action, { sku: 'kite' });
    expect([result.outcome, result.transport_observation]).toEqual(['unknown', 'idempotency_in_progress']);
    clock.tick(60_000);
    await ops.recover();
    service.lookups = [notFound];
    const looked = await ops.reconcile(result.operation_id);
    expect([looked.outcome, looked.state]).toEqual(['unknown', 'needs_attention']);
    const stored = await store.operations.get(result.operation_id);
    expect((stored?.evidence as { acknowledged?: boolean }).acknowledged).toBe(true);
  });

  it('a transient failure that may have been written (a PUT reset, a 503) is unknown, not "not sent"', async () => {
    const resetAfterWrite: SendStep = async () => {
      throw new BreakwaterError('upstream_unavailable', {
        outcome: 'failed',
        details: { reason: 'ECONNRESET', written: true },
      });
    };
    service.sends = [resetAfterWrite];
    service.lookups = [found];
    const result = await ledger().execute(service.action({ retryAllowed: false }), { sku: 'kite' });
    expect([result.outcome, result.transport_observation]).toEqual(['succeeded', 'lookup_succeeded']);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
  });

  it('a lookup that fails leaves it unknown; the recovery pass looks again and settles it', async () => {
    service.sends = [cutOff];
    service.lookups = [
      async () => {
        throw new BreakwaterError('upstream_unavailable', { details: { reason: 'ECONNREFUSED' } });
      },
    ];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    expect(result.outcome).toBe('unknown');
    const stored = await store.operations.get(result.operation_id);
    expect([stored?.nextCheckAt, (stored?.evidence as { last_lookup: string }).last_lookup]).toEqual([
      T0 + 5_000,
      'lookup failed: ECONNREFUSED',
    ]);
    service.lookups = [found];
    clock.tick(4_999);
    expect(await ops.recover()).toBe(0);
    clock.tick(1);
    expect(await ops.recover()).toBe(1);
    expect((await store.operations.get(result.operation_id))?.state).toBe('succeeded');
  });

  it('past its recovery deadline an unsettled operation needs attention, with the evidence, a warning and an event', async () => {
    const action = service.action({ lookup: undefined, recoveryMs: 60_000 });
    service.sends = [cutOff];
    const ops = ledger();
    const escalated: string[] = [];
    ops.onNeedsAttention(({ record }) => escalated.push(record.id));
    const result = await ops.execute(action, { sku: 'kite' });
    expect(result.outcome).toBe('unknown');
    clock.tick(60_000);
    await ops.recover();
    const stored = await store.operations.get(result.operation_id);
    expect(stored?.state).toBe('needs_attention');
    expect(stored?.evidence).toEqual({
      last_attempt_at: T0,
      escalated_at: T0 + 60_000,
      created_at: T0,
      deadline_at: T0 + 60_000,
      target: 'POST shop /orders',
      attempts: 1,
      last_observation: 'ECONNRESET',
      lookup: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
    });
    expect([escalated, ops.escalated, warnings]).toEqual([
      [result.operation_id],
      1,
      ['operation outcome still unknown past its recovery deadline: needs attention'],
    ]);
    // A resume does not send: it answers unknown.
    const resumed = await ops.execute(action, { sku: 'kite' }, { operationId: result.operation_id });
    expect([resumed.outcome, resumed.state]).toEqual(['unknown', 'needs_attention']);
    expect(service.calls).toEqual(['send#1 id=corr']);
  });

  it('onOutcome hears each move to succeeded, failed or unknown once, with the state before', async () => {
    // Two ledgers: one action name may not stand for two actions in one.
    const ops = ledger();
    const strict = ledger();
    const heard: [string, string, string][] = [];
    for (const l of [ops, strict]) {
      l.onOutcome(({ record, previous }) => heard.push([record.id, previous, record.state]));
    }
    service.sends = [cutOff, accept, rejected, cutOff];
    service.lookups = [notFound, notFound, notFound];
    const resent = await ops.execute(service.action(), { sku: 'kite' });
    const refused = await ops.execute(service.action(), { sku: 'yo-yo' });
    const noResend = service.action({ retryAllowed: false, recoveryMs: 60_000 });
    const lost = await strict.execute(noResend, { sku: 'top' });
    clock.tick(60_000);
    await strict.recover();
    await strict.reconcile(lost.operation_id);
    expect(heard).toEqual([
      [resent.operation_id, 'in_flight', 'unknown'],
      [resent.operation_id, 'in_flight', 'succeeded'],
      [refused.operation_id, 'in_flight', 'failed'],
      [lost.operation_id, 'in_flight', 'unknown'],
      [lost.operation_id, 'needs_attention', 'failed'],
    ]);
  });

  it('reconcile settles a needs_attention operation on a confirmed result, never resending', async () => {
    const action = service.action({ recoveryMs: 10_000 });
    service.sends = [cutOff];
    service.lookups = [async () => ({ state: 'in_progress' })];
    const ops = ledger();
    const result = await ops.execute(action, { sku: 'kite' });
    clock.tick(10_000);
    await ops.recover();
    service.lookups = [notFound];
    const looked = await ops.reconcile(result.operation_id);
    expect([looked.outcome, looked.state, looked.error?.code]).toEqual(['failed', 'failed', 'not_accepted']);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup', 'lookup']);
  });

  it('an attempt in flight elsewhere is not sent twice; once it went silent, recovery looks it up', async () => {
    const ops = ledger();
    const elsewhere = ledger(); // another process over the same store
    let release!: () => void;
    service.sends = [
      (ctx) =>
        new Promise<Order>((resolve) => {
          release = () => resolve({ order_id: 'late', sku: ctx.request.sku });
        }),
    ];
    const action = service.action({ attemptTimeoutMs: 20_000 });
    const first = ops.execute(action, { sku: 'kite' });
    await clock.tickAsync(0);
    const [flying] = await store.operations.list({ states: ['in_flight'] });
    const resumed = await elsewhere.execute(action, { sku: 'kite' }, { operationId: flying!.id });
    expect([resumed.outcome, resumed.state]).toEqual(['unknown', 'in_flight']);
    clock.tick(20_000);
    service.lookups = [found];
    expect(await elsewhere.recover()).toBe(1);
    expect((await store.operations.get(flying!.id))?.state).toBe('succeeded');
    // The original call answers late: the ledger keeps what the lookup settled.
    release();
    const late = await first;
    expect([late.outcome, late.result]).toEqual([
      'succeeded',
      { order_id: `ord_${flying!.id.slice(-4)}`, sku: 'kite' },
    ]);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
  });

  it('a resume with another request is refused (422), an unknown id is not_found (404)', async () => {
    service.sends = [cutOff];
    service.lookups = [async () => ({ state: 'in_progress' })];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    const mismatch = ops.execute(service.action(), { sku: 'yo-yo' }, { operationId: result.operation_id });
    await expect(mismatch).rejects.toMatchObject({ code: 'idempotency_key_mismatch', status: 422 });
    const missing = ops.execute(service.action(), { sku: 'kite' }, { operationId: 'op_nope' });
    await expect(missing).rejects.toMatchObject({ code: 'not_found', status: 404 });
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
  });

  it('the same caller key resumes the same operation', async () => {
    service.sends = [accept];
    const ops = ledger();
    const first = await ops.execute(service.action(), { sku: 'kite' }, { key: 'idem-1' });
    const second = await ops.execute(service.action(), { sku: 'kite' }, { key: 'idem-1' });
    expect(second).toEqual(first);
    expect(service.calls).toEqual(['send#1 id=corr']);
  });

  it('two resumes of one unknown operation at once: one lookup and one resend between them', async () => {
    service.sends = [cutOff];
    service.lookups = [async () => ({ state: 'in_progress' })];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    service.lookups = [notFound, notFound];
    service.sends = [accept, accept];
    const both = await Promise.all([
      ops.execute(service.action(), { sku: 'kite' }, { operationId: result.operation_id }),
      ops.execute(service.action(), { sku: 'kite' }, { operationId: result.operation_id }),
    ]);
    const sends = service.calls.filter((call) => call.startsWith('send'));
    expect(sends).toEqual(['send#1 id=corr', 'send#2 id=corr']);
    // The loser of each race re-reads: it sees the winner's attempt in flight (unknown) or its success.
    for (const r of both) expect(['succeeded', 'unknown']).toContain(r.outcome);
    expect(both.some((r) => r.outcome === 'succeeded')).toBe(true);
  });
});
