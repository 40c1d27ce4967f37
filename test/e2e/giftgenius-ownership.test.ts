import { afterEach, describe, expect, it } from 'vitest';
import {
  startGiftGeniusServices,
  type GiftGeniusServices,
} from '../../examples/giftgenius/services/index.js';
import { giftGeniusTools } from '../../examples/giftgenius/tools.js';
import { createUpstreams } from '../../examples/giftgenius/upstreams.js';
import { DEEP_ANALYSIS_JOB } from '../../examples/giftgenius/analysis.js';
import { OperationLedger } from '../../src/operations/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { connectClient, startGateway, type Gateway, type TestClient } from '../../src/mcp/test-support.js';
import { as } from '../support/principals.js';

/**
 * Ownership of operations (docs/operations.md#owners): GiftGenius's `checkout` resumes an operation by the
 * `operation_id` a caller passes; only the principal that began it (or admin) may. The official SDK client
 * over real HTTP.
 */
describe('GiftGenius checkout: an operation id is its owner’s', () => {
  let services: GiftGeniusServices;
  let ledgerStore: Store;
  let gw: Gateway;
  const clients: TestClient[] = [];

  afterEach(async () => {
    for (const tc of clients.splice(0)) await tc.close();
    await gw.close();
    await ledgerStore.close();
    await services.close();
  });

  async function connect(caller: string): Promise<TestClient> {
    const tc = await connectClient(gw.mcpUrl, as(caller));
    clients.push(tc);
    return tc;
  }

  it('a stranger resuming another’s checkout by operation_id gets not_found and places nothing', async () => {
    services = await startGiftGeniusServices({});
    ledgerStore = await openStore({ url: ':memory:' });
    const upstreams = createUpstreams({
      giftUrl: services.gift.url,
      commerceUrl: services.commerce.url,
      analyticsUrl: services.analytics.url,
    });
    const ledger = new OperationLedger({ store: ledgerStore.operations, log: { warn: () => undefined } });
    gw = await startGateway({
      tools: () => giftGeniusTools(upstreams, ledger),
      defineJobs: (jobs) => jobs.defineJob(DEEP_ANALYSIS_JOB, () => undefined),
    });
    const orders = async () =>
      ((await (await fetch(`${services.commerce.url}/orders`)).json()) as { orders: unknown[] }).orders;

    const ada = await connect('ada');
    const placed = await ada.client.callTool({
      name: 'checkout',
      arguments: { product_id: 'p001', customer_id: 'cus_ada' },
    });
    const operationId = (placed.structuredContent as { operation_id: string }).operation_id;
    expect((await ledgerStore.operations.get(operationId))!.owner).toBe('key:ada');
    expect(await orders()).toHaveLength(1);

    const bob = await connect('bob');
    const stolen = await bob.client.callTool({
      name: 'checkout',
      arguments: { product_id: 'p001', customer_id: 'cus_ada', operation_id: operationId },
    });
    expect(stolen.isError).toBe(true);
    expect(stolen.structuredContent).toMatchObject({
      error: {
        code: 'not_found',
        message: `No commerce.create_order operation has the id ${operationId}; start a new one without an operation id.`,
      },
    });
    expect(JSON.stringify(stolen)).not.toContain('cus_ada"');
    expect(await orders()).toHaveLength(1);

    // The owner resumes it: the same order, nothing placed twice.
    const resumed = await ada.client.callTool({
      name: 'checkout',
      arguments: { product_id: 'p001', customer_id: 'cus_ada', operation_id: operationId },
    });
    expect(resumed.structuredContent).toMatchObject({
      operation_id: operationId,
      order_id: (placed.structuredContent as { order_id: string }).order_id,
    });
    expect(await orders()).toHaveLength(1);
  });
});
