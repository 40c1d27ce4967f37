import { afterEach, describe, expect, it } from 'vitest';
import { giftGeniusPrompts, giftGeniusResources } from '../../examples/giftgenius/resources.js';
import {
  startGiftGeniusServices,
  type GiftGeniusServices,
} from '../../examples/giftgenius/services/index.js';
import { giftGeniusTools } from '../../examples/giftgenius/tools.js';
import { createUpstreams } from '../../examples/giftgenius/upstreams.js';
import { DEEP_ANALYSIS_JOB } from '../../examples/giftgenius/analysis.js';
import { clientClosers, errorOf, modernClient, v1Client } from '../../src/mcp/catalog-test-support.js';
import { startGateway, type Gateway } from '../../src/mcp/test-support.js';
import { OperationLedger } from '../../src/operations/index.js';
import { openStore, type Store } from '../../src/store/index.js';

/**
 * GiftGenius's order template and `plan_gift` prompt in both eras (the SDK's v1 client on 2025-11-25 and its
 * v2 client on 2026-07-28), over real HTTP with the example's real services: an order is readable by the
 * principal whose checkout placed it, and "not found" for anyone else.
 */
describe('GiftGenius orders and plan_gift', () => {
  let services: GiftGeniusServices;
  let ledgerStore: Store;
  let gw: Gateway;

  afterEach(async () => {
    for (const close of clientClosers.splice(0)) await close().catch(() => undefined);
    await gw.close();
    await ledgerStore.close();
    await services.close();
  });

  async function start(): Promise<void> {
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
      server: { resources: giftGeniusResources(ledger), prompts: giftGeniusPrompts() },
    });
  }

  it('an order is read by the one who placed it; a stranger gets "Resource not found"', async () => {
    await start();
    const ada = await modernClient(gw.mcpUrl, 'ada');
    const placed = await ada.callTool({
      name: 'checkout',
      arguments: { product_id: 'p001', customer_id: 'cus_ada' },
    });
    const order = placed.structuredContent as { operation_id: string; order_id: string; product_id: string };
    const uri = `giftgenius://orders/${order.operation_id}`;
    expect((await ada.listResourceTemplates()).resourceTemplates).toEqual([
      {
        uriTemplate: 'giftgenius://orders/{operationId}',
        name: 'order',
        title: 'One of your orders',
        description:
          'An order by the operation_id its checkout answered: its outcome and, once placed, the order.',
        mimeType: 'application/json',
      },
    ]);
    for (const client of [ada, await v1Client(gw.mcpUrl, 'ada')]) {
      const read = await client.readResource({ uri });
      expect(read.contents).toHaveLength(1);
      expect(read.contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
      const body = JSON.parse((read.contents[0] as { text: string }).text) as Record<string, unknown>;
      expect(body).toMatchObject({
        operation_id: order.operation_id,
        outcome: 'succeeded',
        order: { order_id: order.order_id, product_id: 'p001' },
      });
    }
    for (const bob of [await modernClient(gw.mcpUrl, 'bob'), await v1Client(gw.mcpUrl, 'bob')])
      expect(await errorOf(bob.readResource({ uri }))).toMatchObject({ code: -32602, data: { uri } });
  });

  it('plan_gift completes its occasion and builds the brief, in both eras', async () => {
    await start();
    for (const client of [await modernClient(gw.mcpUrl, 'ada'), await v1Client(gw.mcpUrl, 'ada')]) {
      const ref = { type: 'ref/prompt' as const, name: 'plan_gift' };
      expect((await client.complete({ ref, argument: { name: 'occasion', value: 'h' } })).completion).toEqual(
        {
          values: ['housewarming', 'holiday'],
          total: 2,
          hasMore: false,
        },
      );
      const got = await client.getPrompt({
        name: 'plan_gift',
        arguments: { recipient: 'Sam, who loves coffee', occasion: 'birthday', budget: '40' },
      });
      expect(got.description).toBe('A gift for Sam, who loves coffee');
      expect(got.messages[0]?.content).toMatchObject({
        type: 'text',
        text: expect.stringMatching(
          /^Find a gift for Sam, who loves coffee for their birthday\. Spend at most 40 USD\./,
        ),
      });
      expect(
        await errorOf(
          client.getPrompt({ name: 'plan_gift', arguments: { recipient: 'Sam', budget: 'lots' } }),
        ),
      ).toMatchObject({ code: -32602 });
    }
  });
});
