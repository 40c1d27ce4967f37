import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import { openStore, type Store } from '../../store/index.js';
import { OperationLedger } from './ledger.js';
import { operationError } from './result.js';
import { ScriptedService, T0, cutOff, found, type LookupStep } from './test-support.js';

/**
 * A lookup that cannot run now (the dependency's breaker is open or half-open with its trial running), and a
 * resume that arrives while this process's recovery loop is already looking: on a real SQLite store.
 */

let clock: FakeClock;
let store: Store;
let service: ScriptedService;

beforeEach(async () => {
  clock = new FakeClock(T0);
  store = await openStore({ url: ':memory:', clock });
  service = new ScriptedService();
});

afterEach(async () => {
  await store.close();
});

function ledger(): OperationLedger {
  return new OperationLedger({ store: store.operations, clock, log: { warn: () => undefined } });
}

/** The shop's breaker refuses the lookup, with `retryAfterMs` left (as `policy/`'s breaker rejects). */
function lookupRefused(retryAfterMs: number, state: 'open' | 'half-open' = 'open'): LookupStep {
  return async () => {
    throw new BreakwaterError('circuit_open', {
      retryAfterMs,
      details: { reason: 'circuit_open', circuit_state: state },
    });
  };
}

const UNKNOWN =
  'The service did not confirm this action, so it may or may not have happened; check its status before trying again.';

describe('an unknown outcome whose lookup met a wait', () => {
  it('carries the wait in retry_after_ms and its sentence, and no lookup is due before it', async () => {
    service.sends = [cutOff];
    service.lookups = [lookupRefused(20_000)];
    const ops = ledger();
    const first = await ops.execute(service.action(), { sku: 'kite' });
    expect(first).toMatchObject({
      outcome: 'unknown',
      retry_after_ms: 20_000,
      error: {
        code: 'outcome_unknown',
        message: `${UNKNOWN} Its status can be checked in about 20 seconds.`,
      },
    });
    const stored = await store.operations.get(first.operation_id);
    expect(stored).toMatchObject({ state: 'unknown', nextCheckAt: T0 + 20_000 });
    expect(stored?.evidence).toMatchObject({ lookup_retry_at: T0 + 20_000 });

    const error = operationError(first, {
      unknown: { code: 'shop_outcome_unknown', sentence: 'The shop did not confirm the order.' },
    });
    expect([error.code, error.outcome, error.retryAfterMs, error.message]).toEqual([
      'outcome_unknown',
      'unknown',
      20_000,
      'The shop did not confirm the order. Its status can be checked in about 20 seconds.',
    ]);

    // Read 15 s later, 5 s are left; a recovery pass before the wait looks nothing up.
    clock.tick(15_000);
    expect(await ops.recover()).toBe(0);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup']);

    // Once the wait is over, the lookup runs and its answer settles the operation; the wait is gone.
    clock.tick(5_000);
    service.lookups = [found];
    const resumed = await ops.execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id });
    expect(resumed).toMatchObject({ outcome: 'succeeded', retry_after_ms: null });
    expect((await store.operations.get(first.operation_id))?.evidence).not.toHaveProperty('lookup_retry_at');
  });

  it('a lookup that fails without a wait says none', async () => {
    service.sends = [cutOff];
    service.lookups = [
      async () => {
        throw new BreakwaterError('upstream_unavailable', { details: { reason: 'http_500' } });
      },
    ];
    const result = await ledger().execute(service.action(), { sku: 'kite' });
    expect(result).toMatchObject({
      outcome: 'unknown',
      retry_after_ms: null,
      error: { code: 'outcome_unknown', message: UNKNOWN },
    });
  });
});

describe('a resume while this process is already looking the operation up', () => {
  it('joins the running lookup and answers what it found: one lookup, no second refusal', async () => {
    service.sends = [cutOff];
    service.lookups = [lookupRefused(20_000)];
    const ops = ledger();
    const first = await ops.execute(service.action(), { sku: 'kite' });
    clock.tick(20_000);

    // The recovery pass's lookup is the half-open breaker's trial call: it is answered only later.
    let answer!: () => void;
    service.lookups = [
      async (ctx) => {
        await new Promise<void>((resolve) => (answer = resolve));
        return found(ctx);
      },
      lookupRefused(20_000, 'half-open'), // what a second, racing lookup would get
    ];
    const pass = ops.recover();
    await Promise.resolve();
    while (!service.calls.includes('lookup') || service.calls.length < 3) await new Promise(setImmediate);
    const resumed = ops.execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id });
    await new Promise(setImmediate);
    answer();
    expect(await resumed).toMatchObject({
      outcome: 'succeeded',
      result: { sku: 'kite' },
      retry_after_ms: null,
    });
    expect(await pass).toBe(1);
    expect(service.calls).toEqual(['send#1 id=corr', 'lookup', 'lookup']);
  });
});

describe('a resume while this process is still sending the attempt', () => {
  function slowSend(): { release: () => void } {
    const gate = { release: (): void => undefined };
    service.sends = [
      (ctx) =>
        new Promise((resolve) => {
          gate.release = () => resolve({ order_id: 'ord_1', sku: ctx.request.sku });
        }),
    ];
    return gate;
  }

  it('waits for the attempt and answers its outcome: one send, no lookup', async () => {
    const gate = slowSend();
    const ops = ledger();
    let id = '';
    const first = ops.execute(service.action(), { sku: 'kite' }, { onOperation: (opId) => (id = opId) });
    while (!service.calls.includes('send#1 id=corr')) await new Promise(setImmediate);
    const resumed = ops.execute(service.action(), { sku: 'kite' }, { operationId: id });
    await new Promise(setImmediate);
    gate.release();
    expect(await resumed).toMatchObject({ outcome: 'succeeded', result: { order_id: 'ord_1', sku: 'kite' } });
    expect((await first).outcome).toBe('succeeded');
    expect(service.calls).toEqual(['send#1 id=corr']);
  });

  it('cut off by its own signal while waiting, it answers the operation as it stands: unknown, in flight', async () => {
    const gate = slowSend();
    const ops = ledger();
    let id = '';
    const first = ops.execute(service.action(), { sku: 'kite' }, { onOperation: (opId) => (id = opId) });
    while (!service.calls.includes('send#1 id=corr')) await new Promise(setImmediate);
    const cut = new AbortController();
    const resumed = ops.execute(service.action(), { sku: 'kite' }, { operationId: id, signal: cut.signal });
    await new Promise(setImmediate);
    cut.abort();
    expect(await resumed).toMatchObject({ outcome: 'unknown', state: 'in_flight', operation_id: id });
    gate.release();
    expect((await first).outcome).toBe('succeeded');
    expect(service.calls).toEqual(['send#1 id=corr']);
  });
});
