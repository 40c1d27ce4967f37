/**
 * The dashboard in headless Chromium (docs/operations-guide.md#the-dashboard) against a real GiftGenius
 * gateway: the page loads; a deep analysis's progress bar advances to done over SSE; a dead-lettered job is
 * retried by a click; an unknown checkout is reconciled by a click (one order); a failing gift service turns
 * its breaker open on the page, and the breaker buttons isolate and reset. Screenshots go to test-artifacts/.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Gateway } from '../../src/gateway/index.js';
import { tempDb } from '../support/cleanups.js';
import { connect, getJson, startBackends, until, type Backends, type McpClient } from '../e2e/support.js';
import { describeBrowser, openBrowser, screenshot } from './browser.js';
import { REPORT_JOB, reportBroken, startDashboardGateway } from './support.js';

const cleanups: Array<() => unknown> = [];
const defer = (cleanup: () => unknown) => void cleanups.push(cleanup);
let backends: Backends;
let gw: Gateway;
let mcp: McpClient;
let page: Page;

/** Each deep analysis step takes this long, so the page can be seen between steps. */
const STEP_MS = 600;

describeBrowser('dashboard tests')('the dashboard in Chromium, against a real GiftGenius gateway', () => {
  beforeAll(async () => {
    backends = await startBackends(defer);
    gw = await startDashboardGateway(defer, backends, { dbPath: tempDb(defer), stepMs: STEP_MS });
    mcp = await connect(defer, gw.mcpUrl);
    ({ page } = await openBrowser(defer));
  }, 30_000);

  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await Promise.resolve()
        .then(cleanup)
        .catch(() => undefined);
    }
  });

  it('loads: breakers, bulkheads, webhook sources and spend from the gateway', async () => {
    await page.goto(gw.dashboardUrl);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.title()).toBe('Breakwater');
    const breakers = await page.$$eval('tr[data-breaker]', (rows) =>
      rows.map((row) => [row.getAttribute('data-breaker'), row.getAttribute('data-state')]),
    );
    expect(breakers).toEqual([
      ['gift', 'closed'],
      ['commerce', 'closed'],
      ['analytics', 'closed'],
    ]);
    const bulkheads = await page.$$eval('[data-bulkhead]', (nodes) =>
      nodes.map((node) => node.querySelector('.meter-head span')?.textContent),
    );
    expect(bulkheads).toEqual([
      '0 / 10 in use · 0 / 20 queued',
      '0 / 3 in use · 0 / 5 queued',
      '0 / 50 in use · 0 / 0 queued',
    ]);
    expect(await page.textContent('tr[data-source="payments"]')).toMatch(/payments\s*0\s*0\s*0\s*0/);
    expect(await page.textContent('[data-spend-rule="daily"] .meter-head')).toContain('$0.0000 of $5.00');
    expect(await page.textContent('#admin-mode')).toBe('this machine only (no admin token)');
    await screenshot(page, 'dashboard-loaded');
  }, 20_000);

  it('follows a deep analysis: its progress bar advances step by step to done, with the partial result', async () => {
    // Every value the job's bar takes, in order, recorded in the page (a step can be shorter than a poll).
    await page.evaluate(`(() => {
      const seen = (window.__bars = {});
      new MutationObserver(() => {
        for (const li of document.querySelectorAll('#jobs li[data-job-id]')) {
          const value = li.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow');
          const log = (seen[li.dataset.jobId] ??= []);
          if (value && log.at(-1) !== value) log.push(value);
        }
      }).observe(document.getElementById('jobs'), { subtree: true, childList: true, attributes: true });
    })()`);
    const started = await mcp.call('start_deep_analysis', {
      interests: ['coffee', 'books'],
      budget_usd: 60,
      recipient: 'Sam',
    });
    const jobId = started.structuredContent.job_id as string;
    expect(jobId).toMatch(/^job_/);
    const bar = `li[data-job-id="${jobId}"] [role="progressbar"]`;
    // Every step of four shows, as the job's events arrive over SSE (no page reload).
    await page.waitForSelector(`${bar}[aria-valuenow="75"]`, { timeout: 10_000 });
    expect(await page.textContent(`li[data-job-id="${jobId}"] .job-detail`)).toMatch(
      /^Checking the final picks · partial: 3 drafts: /,
    );
    await screenshot(page, 'dashboard-job-running');
    await page.waitForSelector(`li[data-job-id="${jobId}"][data-status="completed"]`, { timeout: 10_000 });
    expect(await page.getAttribute(bar, 'aria-valuenow')).toBe('100');
    // Forwards only, one step at a time (0 % shows only if the page saw the job before its first step).
    const values = (await page.evaluate(`window.__bars[${JSON.stringify(jobId)}]`)) as string[];
    expect(values.filter((v) => v !== '0')).toEqual(['25', '50', '75', '100']);
    expect(values.slice(0, values.indexOf('25')).every((v) => v === '0')).toBe(true);
    expect(await page.textContent(`li[data-job-id="${jobId}"] .job-detail`)).toMatch(
      /^5 gifts for Sam, best first: /,
    );
    expect((await gw.jobs.get(jobId))?.status).toBe('completed');
    await screenshot(page, 'dashboard-job-done');
  }, 30_000);

  it('retries a dead-lettered job with a click: it runs again and completes', async () => {
    reportBroken.value = true;
    const jobId = await gw.jobs.enqueue(REPORT_JOB, { week: 48 });
    await until(async () => (await gw.jobs.get(jobId))?.status === 'failed', 'the report job to fail', 5_000);
    const row = `tr[data-dead-letter="${jobId}"]`;
    await page.waitForSelector(row);
    expect(await page.textContent(row)).toContain('invalid_payload The report template is missing.');
    await screenshot(page, 'dashboard-dead-letter');

    reportBroken.value = false;
    await page.click(`${row} button[data-action="retry"]`);
    await page.waitForSelector(row, { state: 'detached' });
    await page.waitForSelector(`li[data-job-id="${jobId}"][data-status="completed"]`, { timeout: 10_000 });
    expect(await page.textContent(`li[data-job-id="${jobId}"] .job-detail`)).toBe(
      'The weekly report was sent.',
    );
    const job = await gw.jobs.get(jobId);
    expect([job?.status, job?.attempts, job?.result]).toEqual([
      'completed',
      1,
      { summary: 'The weekly report was sent.' },
    ]);
  }, 30_000);

  it('reconciles an unknown checkout with a click: the lookup settles it, one order at the shop', async () => {
    const commerce = backends.services.commerce;
    commerce.faults.set({ hang: true });
    const lost = await mcp.call('checkout', { product_id: 'p007', quantity: 1, customer_id: 'cus_dash' });
    const operationId = lost.structuredContent.error.operation_id as string;
    expect(lost.structuredContent.error.outcome).toBe('unknown');
    await until(() => commerce.faults.hanging() === 0, 'the hanging commerce requests to end', 5_000);
    commerce.faults.clear();

    const row = `tr[data-operation="${operationId}"]`;
    await page.waitForSelector(`${row}[data-state="unknown"]`);
    await screenshot(page, 'dashboard-operation-unknown');
    // The commerce breaker (opened by the hang) lets a trial call through after its short open period.
    await until(async () => {
      const { body } = await getJson(`${gw.url}/readyz`);
      return !body.open_breakers.some((b: { state: string }) => b.state === 'open');
    }, 'the commerce breaker to let a trial through');
    await page.click(`${row} button[data-action="reconcile"]`);
    await page.waitForSelector(row, { state: 'detached', timeout: 10_000 });
    const settled = await gw.store.operations.get(operationId);
    const { body } = await getJson(`${commerce.url}/orders`);
    expect([settled?.state, body.orders.length]).toEqual(['succeeded', 1]);
  }, 30_000);

  it('shows the gift breaker open once the gift service fails, and isolates and resets breakers by click', async () => {
    await fetch(`${backends.services.gift.url}/_faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ errorRate: 1 }),
    });
    for (let call = 0; gw.parts.upstreams![0]!.breaker!.state().state !== 'open'; call++) {
      expect(call).toBeLessThan(10);
      await mcp.call('suggest_gifts', { interests: ['coffee'], budget_usd: 40 });
    }
    const gift = 'tr[data-breaker="gift"]';
    await page.waitForSelector(`${gift}[data-state="open"]`);
    expect(await page.textContent(`${gift} td:nth-child(3)`)).toMatch(
      /^closed → open consecutive failures, \d+ s ago$/,
    );
    expect(await page.textContent('#status')).toMatch(/^gift open · /);
    await screenshot(page, 'dashboard-breaker-open');

    await fetch(`${backends.services.gift.url}/_faults`, { method: 'DELETE' });
    await page.click(`${gift} button[data-action="reset"]`);
    await page.waitForSelector(`${gift}[data-state="closed"]`);
    expect(await page.textContent(`${gift} td:nth-child(3)`)).toMatch(/^open → closed reset, \d+ s ago$/);

    const commerce = 'tr[data-breaker="commerce"]';
    await page.click(`${commerce} button[data-action="isolate"]`);
    await page.waitForSelector(`${commerce}[data-state="isolated"]`);
    expect(gw.parts.upstreams![1]!.breaker!.state().state).toBe('isolated');
    await screenshot(page, 'dashboard-breaker-isolated');
    await page.click(`${commerce} button[data-action="reset"]`);
    await page.waitForSelector(`${commerce}[data-state="closed"]`);
    expect(gw.parts.upstreams![1]!.breaker!.state().state).toBe('closed');
  }, 30_000);
});
