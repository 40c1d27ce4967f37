import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import { openStore, type Store } from '../../store/index.js';
import { OperationLedger } from './ledger.js';
import { operationError } from './result.js';
import { ScriptedService, T0, accept, answered, breakerOpen, notFound } from './test-support.js';

/**
 * The ledger's decision when the service answered that it did not process the request (408, 425, 429,
 * 503), and the waits an operation's failure carries (an open breaker's, `Retry-After`), read with the
 * ledger's clock. A real SQLite store, a scripted service, the fake clock.
 */

let clock: FakeClock;
let store: Store;
let service: ScriptedService;
let audit: string[];

function ledger(): OperationLedger {
  return new OperationLedger({
    store: store.operations,
    clock,
    log: { warn: () => undefined },
    audit: { record: async (entry) => void audit.push(entry.action) },
  });
}

beforeEach(async () => {
  clock = new FakeClock(T0);
  store = await openStore({ url: ':memory:', clock });
  service = new ScriptedService();
  audit = [];
});

afterEach(async () => {
  await store.close();
});

describe('the service answered "not processed"', () => {
  it('503 with Retry-After, resending allowed: failed (not unknown), retry allowed, the wait kept; no lookup', async () => {
    service.sends = [answered(503, 20_000)];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    expect(result).toEqual({
      outcome: 'failed',
      state: 'pending',
      operation_id: result.operation_id,
      correlation_id: result.operation_id,
      transport_observation: 'http_503',
      retry_allowed: true,
      retry_after_ms: 20_000,
      reconcile: { method: 'GET', path: `/orders?idempotency_key=${result.operation_id}` },
      error: {
        code: 'upstream_unavailable',
        message: 'The shop is busy right now; try again in about 20 seconds.',
        dependency_code: 'shop_busy',
      },
      attempts: 1,
    });
    expect(service.calls).toEqual(['send#1 id=corr']);
    expect(audit).toEqual(['operation.begin', 'operation.attempt', 'operation.not_processed']);
    expect((await store.operations.get(result.operation_id))?.error).toEqual({
      code: 'upstream_unavailable',
      message: 'The shop is busy right now; try again in about 20 seconds.',
      dependency_code: 'shop_busy',
      retry_at: T0 + 20_000,
    });

    const error = operationError(result);
    expect([error.code, error.kind, error.outcome, error.retryable, error.retryAfterMs]).toEqual([
      'upstream_unavailable',
      'transient',
      'failed',
      true,
      20_000,
    ]);
    expect([error.operationId, error.details?.['dependency_code']]).toEqual([
      result.operation_id,
      'shop_busy',
    ]);

    // After the wait, resuming it sends again under the same id.
    clock.tick(20_000);
    service.sends = [accept];
    const again = await ops.execute(service.action(), { sku: 'kite' }, { operationId: result.operation_id });
    expect([again.outcome, again.attempts, again.retry_after_ms]).toEqual(['succeeded', 2, null]);
  });

  it.each([408, 425, 429])(
    'HTTP %i without a wait: failed, retry allowed, retry_after_ms null',
    async (status) => {
      service.sends = [answered(status)];
      const result = await ledger().execute(service.action(), { sku: 'kite' });
      expect([result.outcome, result.state, result.retry_allowed, result.retry_after_ms]).toEqual([
        'failed',
        'pending',
        true,
        null,
      ]);
      expect(operationError(result).retryAfterMs).toBeUndefined();
    },
  );

  it('resending not allowed: settled failed, the wait read again as time passes', async () => {
    const action = service.action({ retryAllowed: false });
    service.sends = [answered(429, 7_000)];
    const ops = ledger();
    const result = await ops.execute(action, { sku: 'kite' });
    expect([result.outcome, result.state, result.retry_allowed, result.retry_after_ms]).toEqual([
      'failed',
      'failed',
      false,
      7_000,
    ]);
    // Nothing happened at the shop: a new operation may be started after the wait.
    const error = operationError(result);
    expect([error.code, error.kind, error.retryable, error.retryAfterMs]).toEqual([
      'upstream_unavailable',
      'transient',
      true,
      7_000,
    ]);

    clock.tick(5_000);
    const later = await ops.reconcile(result.operation_id);
    expect([later.retry_after_ms, later.error?.message]).toEqual([
      2_000,
      'The shop is busy right now; try again in about 2 seconds.',
    ]);
    clock.tick(3_000);
    const over = await ops.reconcile(result.operation_id);
    expect([over.retry_after_ms, over.error?.message]).toEqual([
      0,
      'The shop is busy right now; try again shortly.',
    ]);
    expect(operationError(over).retryAfterMs).toBeUndefined();
    expect(service.calls).toEqual(['send#1 id=corr']);
  });

  it('a 500 is not "not processed" even when its outcome is failed (an idempotent method): unknown, looked up', async () => {
    service.sends = [
      async () => {
        throw new BreakwaterError('upstream_unavailable', {
          outcome: 'failed',
          details: { reason: 'http_500', written: true, upstream_status: 500 },
        });
      },
    ];
    service.lookups = [async () => ({ state: 'in_progress' })];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect([result.outcome, result.state, result.retry_after_ms]).toEqual(['unknown', 'unknown', null]);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);
  });

  it('left pending past its recovery deadline: settled failed not_processed (the service did answer)', async () => {
    const action = service.action({ recoveryMs: 60_000 });
    service.sends = [answered(503, 1_000)];
    const ops = ledger();
    const result = await ops.execute(action, { sku: 'kite' });
    clock.tick(60_000);
    expect(await ops.recover()).toBe(1);
    const settled = await store.operations.get(result.operation_id);
    expect([settled?.state, settled?.error]).toEqual([
      'failed',
      {
        code: 'not_processed',
        message: 'The service did not process any attempt before the recovery deadline.',
      },
    ]);
  });
});

describe('refused before sending: the wait of the open breaker', () => {
  it("pending, retry allowed, retry_after_ms the breaker's remaining open time; operationError keeps it", async () => {
    service.sends = [breakerOpen(20_000)];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect([result.outcome, result.state, result.retry_allowed, result.retry_after_ms]).toEqual([
      'failed',
      'pending',
      true,
      20_000,
    ]);
    expect(result.error).toEqual({
      code: 'circuit_open',
      message: 'The shop is temporarily unavailable after repeated failures; try again in about 20 seconds.',
      dependency_code: 'shop_unavailable',
    });
    const error = operationError(result);
    expect([error.code, error.retryable, error.retryAfterMs, error.message]).toEqual([
      'circuit_open',
      true,
      20_000,
      'The shop is temporarily unavailable after repeated failures; try again in about 20 seconds.',
    ]);
  });

  it('a lookup that finds nothing clears the wait with the error', async () => {
    service.sends = [breakerOpen(20_000)];
    service.lookups = [notFound];
    const ops = ledger();
    const result = await ops.execute(service.action(), { sku: 'kite' });
    const looked = await ops.reconcile(result.operation_id);
    expect([looked.state, looked.retry_after_ms, looked.error?.code]).toEqual([
      'pending',
      null,
      'upstream_unavailable',
    ]);
  });
});
