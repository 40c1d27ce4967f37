/**
 * The audit log of a running GiftGenius gateway: a checkout's attempt and outcome, the job that handled a
 * payment webhook, the webhook's acceptance and an admin cancel are each one record of one verified chain.
 */
import { describe, expect, it } from 'vitest';
import { DEMO_WEBHOOK_SECRET, paymentDelivery } from '../../examples/giftgenius/webhooks.js';
import { verifyAudit } from '../../src/entries/operations.js';
import { connect, startBackends, startGiftGenius, tempDb, until, useCleanups } from './support.js';

const defer = useCleanups();

describe('GiftGenius audit log', () => {
  it('records checkouts, webhook acceptances, job ends and admin cancels in one chain that verifies', async () => {
    const backends = await startBackends(defer);
    // Slow analysis steps, so the cancel surely finds the job running.
    const gw = await startGiftGenius(defer, backends, { dbPath: tempDb(defer), settings: { stepMs: 5_000 } });
    const mcp = await connect(defer, gw.mcpUrl);

    const order = await mcp.call('checkout', { product_id: 'p001', customer_id: 'cus_audit' });
    expect(order.isError).toBeUndefined();
    const operationId = order.structuredContent.operation_id as string;

    const delivery = paymentDelivery(DEMO_WEBHOOK_SECRET, {
      id: 'evt_audit_1',
      type: 'payment_intent.succeeded',
      orderId: order.structuredContent.order_id,
      customerId: 'cus_audit',
      amountCents: 1_999,
    });
    const accepted = await fetch(`${gw.url}/webhooks/payments`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    expect(accepted.status).toBe(200);
    const inbox = await gw.store.getWebhook('payments', 'evt_audit_1');

    const analysis = await mcp.call('start_deep_analysis', { interests: ['tea'], budget_usd: 30 });
    const jobId = analysis.structuredContent.job_id as string;
    // Canceled while it runs, so its worker writes the end (a pending job's cancel is the admin's record).
    await until(async () => (await gw.jobs.get(jobId))?.status === 'in_progress', 'the analysis to start');
    const canceled = await fetch(`${gw.url}/jobs/${jobId}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(202); // running: asked to stop

    await until(async () => {
      const records = await gw.store.audit.read();
      const actions = records.map((r) => (JSON.parse(r.body) as { action: string }).action);
      return actions.includes('job.canceled') && actions.includes('job.completed');
    }, 'the webhook job and the canceled analysis to be audited');
    await gw.audit.flush();
    const bodies = (await gw.store.audit.read()).map((r) => JSON.parse(r.body) as Record<string, unknown>);
    const brief = bodies.map((b) => [b['actor'], b['action'], b['target']]);
    expect(brief).toEqual(
      expect.arrayContaining([
        ['mcp:checkout', 'operation.begin', 'POST commerce /orders'],
        ['mcp:checkout', 'operation.attempt', 'POST commerce /orders'],
        ['mcp:checkout', 'operation.succeeded', 'POST commerce /orders'],
        ['webhook:payments', 'webhook.accepted', 'payments/evt_audit_1'],
        ['worker', 'job.completed', inbox!.jobId],
        ['local', 'admin.job_cancel', `/jobs/${jobId}/cancel`],
        ['worker', 'job.canceled', jobId],
      ]),
    );
    const checkout = bodies.filter((b) => b['operation_id'] === operationId).map((b) => b['action']);
    expect(checkout).toEqual(['operation.begin', 'operation.attempt', 'operation.succeeded']);
    expect(bodies.map((b) => b['seq'])).toEqual(bodies.map((_, i) => i + 1));
    expect(await verifyAudit(gw.store.audit)).toMatchObject({ ok: true, records: bodies.length });
  });
});
