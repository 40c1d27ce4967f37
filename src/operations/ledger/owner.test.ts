import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  FakeClock,
  PRINCIPALS,
  PrincipalContext,
  type Principal,
} from '../../core/index.js';
import { openStore, type Store } from '../../store/index.js';
import { OperationLedger } from './ledger.js';
import { ScriptedService, T0, accept, cutOff, found } from './test-support.js';

/** A principal as an API key would give it: its own id, the `mcp` scope, no `admin`. */
function keyPrincipal(id: string): Principal {
  return {
    id: `key:${id}`,
    kind: 'api_key',
    name: id,
    scopes: new Set(['mcp']),
    metadata: {},
    trustedBackend: false,
  };
}

const ada = keyPrincipal('ada');
const bob = keyPrincipal('bob');

let clock: FakeClock;
let store: Store;
let service: ScriptedService;
let ledger: OperationLedger;

beforeEach(async () => {
  clock = new FakeClock(T0);
  store = await openStore({ url: ':memory:', clock });
  service = new ScriptedService();
  ledger = new OperationLedger({ store: store.operations, clock, log: { warn: () => undefined } });
});

afterEach(async () => {
  await store.close();
});

describe('OperationLedger: owners', () => {
  it('a new operation belongs to the current principal, the given owner, or none outside any', async () => {
    service.sends = [accept, accept, accept];
    const asAda = await PrincipalContext.run(ada, () => ledger.execute(service.action(), { sku: 'kite' }));
    const given = await PrincipalContext.run(ada, () =>
      ledger.execute(service.action(), { sku: 'kite' }, { owner: 'key:shop' }),
    );
    const outside = await ledger.execute(service.action(), { sku: 'kite' });
    const owners = await Promise.all(
      [asAda, given, outside].map(async (result) => (await store.operations.get(result.operation_id))!.owner),
    );
    expect(owners).toEqual(['key:ada', 'key:shop', null]);
  });

  it("a stranger resuming another's operation by id gets not_found, as for an id that does not exist", async () => {
    service.sends = [cutOff];
    const first = await PrincipalContext.run(ada, () => ledger.execute(service.action(), { sku: 'kite' }));
    expect(first.outcome).toBe('unknown');
    const calls = service.calls.length;

    const strangers = await PrincipalContext.run(bob, () =>
      ledger
        .execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id })
        .catch((e: unknown) => e),
    );
    const missing = await PrincipalContext.run(bob, () =>
      ledger
        .execute(
          service.action(),
          { sku: 'kite' },
          { operationId: 'op_00000000-0000-7000-8000-000000000000' },
        )
        .catch((e: unknown) => e),
    );
    expect(strangers).toBeInstanceOf(BreakwaterError);
    expect(strangers).toMatchObject({
      code: 'not_found',
      status: 404,
      message: `No shop.create_order operation has the id ${first.operation_id}; start a new one without an operation id.`,
    });
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    // Nothing was sent or looked up for the stranger, and the operation is as it was.
    expect(service.calls).toHaveLength(calls);
    expect((await store.operations.get(first.operation_id))!.state).toBe('unknown');
    await expect(PrincipalContext.run(bob, () => ledger.reconcile(first.operation_id))).rejects.toMatchObject(
      {
        code: 'not_found',
        message: `No operation has the id ${first.operation_id}.`,
      },
    );

    // The owner resumes it; so does admin, and the application outside any principal.
    service.lookups = [found];
    const resumed = await PrincipalContext.run(ada, () =>
      ledger.execute(service.action(), { sku: 'kite' }, { operationId: first.operation_id }),
    );
    expect(resumed).toMatchObject({ outcome: 'succeeded', operation_id: first.operation_id });
    expect(
      await PrincipalContext.run(PRINCIPALS.admin, () => ledger.reconcile(first.operation_id)),
    ).toMatchObject({ outcome: 'succeeded' });
    expect(await ledger.reconcile(first.operation_id)).toMatchObject({ outcome: 'succeeded' });
  });

  it("a key held by another principal's operation is refused without naming that operation", async () => {
    service.sends = [accept];
    const first = await PrincipalContext.run(ada, () =>
      ledger.execute(service.action(), { sku: 'kite' }, { key: 'order-7' }),
    );
    const error = await PrincipalContext.run(bob, () =>
      ledger.execute(service.action(), { sku: 'kite' }, { key: 'order-7' }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'idempotency_key_mismatch',
      status: 422,
      message: 'The key "order-7" belongs to another operation; start this one with a key of its own.',
    });
    expect((error as BreakwaterError).operationId).toBeUndefined();
    expect(JSON.stringify(error)).not.toContain(first.operation_id);
    // Its owner resumes it with the key.
    const again = await PrincipalContext.run(ada, () =>
      ledger.execute(service.action(), { sku: 'kite' }, { key: 'order-7' }),
    );
    expect(again).toEqual(first);
  });
});
