/**
 * The GiftGenius widget in Chromium (docs/giftgenius.md#the-widget): its page as the real gateway serves it
 * (`resources/read` by the official SDK client), run by a tiny MCP Apps host — the ext-apps `AppBridge` on
 * the host side of a sandboxed iframe under SEP-1865's default CSP — whose tool calls go through the same
 * client to the gateway. The gateway runs on a FakeClock: a step of the analysis ends only when the test
 * moves the clock, so every state is seen by the widget's own polling before the next one.
 */
import { fileURLToPath } from 'node:url';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { FakeClock } from '../../src/core/index.js';
import type { Gateway } from '../../src/gateway/index.js';
import { describeBrowser, openBrowser, screenshot } from '../dashboard/browser.js';
import { connect, startBackends, startGiftGenius, tempDb, useCleanups, type McpClient } from './support.js';

const defer = useCleanups();

const REQUEST = { interests: ['music', 'cooking'], budget_usd: 80, recipient: 'Alex' };
/** The analysis's drafts (the first three of its twenty candidates) and its final five, best first. */
const CANDIDATES = recommendGifts(loadCatalog(), { ...REQUEST, limit: 20 });
const DRAFTS = CANDIDATES.slice(0, 3).map((gift) => gift.name);
const FINAL = CANDIDATES.slice(0, 5).map((gift) => gift.name);
const STEPS = [
  '0/4 Finding candidates',
  '1/4 Scoring candidates against the interests',
  '2/4 Drafting gift ideas',
  '3/4 Checking the final picks',
  '4/4 Done',
];

/** The fake length of one analysis step. */
const STEP_MS = 1_000;

let hostScript: Promise<string> | undefined;
function hostBundle(): Promise<string> {
  hostScript ??= build({
    entryPoints: [fileURLToPath(new URL('./widget-host.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    logLevel: 'silent',
  }).then((result) => result.outputFiles[0]!.text);
  return hostScript;
}

interface Rig {
  clock: FakeClock;
  gw: Gateway;
  mcp: McpClient;
  page: Page;
  /** The tool calls the widget made through the host, in order. */
  calls: { name: string; arguments: Record<string, unknown> }[];
}

/**
 * A gateway on a FakeClock, the MCP client, and the host page with the widget loaded (its poll period set
 * to `pollMs` through the page's `data-poll-ms`).
 */
async function setup(pollMs: number, form: 'mcp-apps' | 'apps-sdk' = 'mcp-apps'): Promise<Rig> {
  const clock = new FakeClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const backends = await startBackends(defer);
  const gw = await startGiftGenius(defer, backends, {
    dbPath: tempDb(defer),
    settings: { stepMs: STEP_MS, toolDeadlineMs: 30_000 },
    gateway: { clock, graceMs: 100 },
  });
  const mcp = await connect(defer, gw.mcpUrl);
  const [uri, mimeType] =
    form === 'mcp-apps'
      ? ['ui://giftgenius/analysis.html', 'text/html;profile=mcp-app']
      : ['ui://giftgenius/analysis.skybridge.html', 'text/html+skybridge'];
  const read = await mcp.client.readResource({ uri });
  const contents = read.contents[0] as { mimeType: string; text: string };
  expect(contents.mimeType).toBe(mimeType);
  const html = contents.text.replace('<body>', `<body data-poll-ms="${pollMs}">`);
  const { page } = await openBrowser(defer);
  const calls: Rig['calls'] = [];
  await page.exposeFunction(
    'hostCallTool',
    async (params: { name: string; arguments: Record<string, unknown> }) => {
      calls.push({ name: params.name, arguments: params.arguments });
      return mcp.client.callTool(params);
    },
  );
  const rig = { clock, gw, mcp, page, calls };
  if (form === 'apps-sdk') {
    // ChatGPT's side, as far as the widget uses it: the tool's output, callTool, the widget state.
    const started = await mcp.client.callTool({ name: 'start_deep_analysis', arguments: REQUEST });
    const openai = `window.openai = {
      toolInput: ${JSON.stringify(REQUEST)},
      toolOutput: ${JSON.stringify(started.structuredContent)},
      widgetState: null,
      setWidgetState: (state) => { window.savedState = state; },
      callTool: (name, args) => window.hostCallTool({ name, arguments: args }),
    };`;
    await page.setContent(html.replace('<head>', () => `<head><script>${openai}</script>`));
    return rig;
  }
  await page.setContent(`<!doctype html><html><body><script>${await hostBundle()}</script></body></html>`);
  await page.evaluate(
    (page) => (window as unknown as { startHost(h: string): Promise<void> }).startHost(page),
    html,
  );
  return rig;
}

/** Moves the FakeClock 50 ms at a time (with a real pause for the sockets) until `check` holds. */
async function drive(clock: FakeClock, check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await clock.tickAsync(50);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** The job as `get_job_status` shows it to the test's client. */
async function status(
  rig: Rig,
  jobId: string,
): Promise<{ status: string; progress: { step: number } | null }> {
  return (await rig.mcp.call('get_job_status', { job_id: jobId })).structuredContent;
}

const widget = (rig: Rig) => rig.page.frameLocator('#widget');
const page = (rig: Rig) => rig.page.locator('body');

async function texts(rig: Rig, selector: string): Promise<string[]> {
  return widget(rig).locator(selector).allTextContents();
}

/** Moves the job through its steps to its end. */
async function runToTheEnd(rig: Rig, jobId: string): Promise<void> {
  await drive(rig.clock, async () => (await status(rig, jobId)).status === 'completed', 'the end');
}

async function pushHandle(rig: Rig): Promise<string> {
  const started = await rig.mcp.client.callTool({ name: 'start_deep_analysis', arguments: REQUEST });
  const jobId = (started.structuredContent as { job_id: string }).job_id;
  await rig.page.evaluate(
    ([input, result]) => {
      const { host } = window as unknown as {
        host: { toolInput(a: unknown): Promise<void>; toolResult(r: unknown): Promise<void> };
      };
      return host.toolInput(input).then(() => host.toolResult(result));
    },
    [REQUEST, started] as const,
  );
  await widget(rig)
    .locator('#job', { hasText: `Job ${jobId}` })
    .waitFor();
  return jobId;
}

describeBrowser('the GiftGenius widget')('the GiftGenius widget in an MCP Apps host', () => {
  it('polls get_job_status when no push comes: each step, the three drafts, then the final list', async () => {
    const rig = await setup(100);
    expect(await widget(rig).locator('#request').textContent()).toBe('');
    const jobId = await pushHandle(rig);
    expect(await widget(rig).locator('#request').textContent()).toBe('Gifts for Alex: music, cooking');
    for (let step = 0; step <= 4; step++) {
      await drive(rig.clock, async () => (await status(rig, jobId)).progress?.step === step, `step ${step}`);
      await widget(rig).locator(`li.step[data-step="${step}"]`).waitFor();
      expect(await texts(rig, 'li.step')).toEqual(STEPS.slice(0, step + 1));
      if (step === 3) {
        expect(await widget(rig).locator('#drafts-section').isVisible()).toBe(true);
        expect(await texts(rig, 'li.draft strong')).toEqual(DRAFTS);
      }
    }
    await drive(rig.clock, async () => (await status(rig, jobId)).status === 'completed', 'the end');
    await widget(rig).locator('#status[data-status="completed"]').waitFor();
    expect(await texts(rig, 'li.gift strong')).toEqual(FINAL);
    expect(await widget(rig).locator('#drafts-section').isVisible()).toBe(false);
    expect(await widget(rig).locator('#cancel').isDisabled()).toBe(true);
    // Every update came from the widget's own polling, through the host.
    expect(rig.calls.length).toBeGreaterThan(5);
    expect(new Set(rig.calls.map((call) => JSON.stringify(call)))).toEqual(
      new Set([JSON.stringify({ name: 'get_job_status', arguments: { job_id: jobId } })]),
    );
    await screenshot(rig.page, 'giftgenius-widget');
    const frame = rig.page.locator('#widget');
    if (process.env.BREAKWATER_UPDATE_SCREENSHOTS === '1') {
      mkdirSync(join(process.cwd(), 'docs', 'img'), { recursive: true });
      await frame.screenshot({ path: join(process.cwd(), 'docs', 'img', 'giftgenius-widget.png') });
    }
  }, 60_000);

  it('cancels through the host: Cancel calls cancel_job and the job ends canceled', async () => {
    const rig = await setup(100);
    const jobId = await pushHandle(rig);
    await drive(rig.clock, async () => (await status(rig, jobId)).progress?.step === 1, 'step 1');
    await widget(rig).locator('li.step[data-step="1"]').waitFor();
    expect(await widget(rig).locator('#cancel').isEnabled()).toBe(true);
    await widget(rig).locator('#cancel').click();
    await drive(rig.clock, async () => (await status(rig, jobId)).status === 'canceled', 'the cancel');
    await widget(rig).locator('#status[data-status="canceled"]').waitFor();
    expect(rig.calls.filter((call) => call.name === 'cancel_job')).toEqual([
      { name: 'cancel_job', arguments: { job_id: jobId } },
    ]);
    expect(await widget(rig).locator('#cancel').isDisabled()).toBe(true);
    expect(await widget(rig).locator('#error').isHidden()).toBe(true);
    expect(await texts(rig, 'li.gift')).toEqual([]);
  }, 60_000);

  it('shows a pushed result at once, without a call of its own', async () => {
    // A host that asked for progress gets the final list as the call's result, and pushes it.
    const rig = await setup(60_000);
    let answer: unknown;
    const call = rig.mcp.client
      .callTool({ name: 'start_deep_analysis', arguments: REQUEST }, undefined, {
        onprogress: () => undefined,
      })
      .then((result) => (answer = result));
    await drive(rig.clock, async () => answer !== undefined, 'the call');
    await call;
    await rig.page.evaluate(
      (result) =>
        (window as unknown as { host: { toolResult(r: unknown): Promise<void> } }).host.toolResult(result),
      answer,
    );
    await widget(rig).locator('#status[data-status="completed"]').waitFor();
    expect(await texts(rig, 'li.gift strong')).toEqual(FINAL);
    expect(rig.calls).toEqual([]);
  }, 60_000);

  it("stops polling at an answer that asking again cannot change: a job that is not the user's", async () => {
    const rig = await setup(100);
    // A stranger's job and a job that never existed read alike (not_found): the widget cannot tell them apart.
    const handle = { job_id: 'job_not_yours', status: 'pending' };
    await rig.page.evaluate(
      (result) =>
        (window as unknown as { host: { toolResult(r: unknown): Promise<void> } }).host.toolResult(result),
      { content: [{ type: 'text', text: 'Started.' }], structuredContent: handle },
    );
    await widget(rig).locator('#error', { hasText: 'There is no job job_not_yours.' }).waitFor();
    // Five poll periods later, still the one call.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(rig.calls).toEqual([{ name: 'get_job_status', arguments: { job_id: 'job_not_yours' } }]);
    expect(await widget(rig).locator('#cancel').isDisabled()).toBe(true);
  }, 60_000);
});

describeBrowser('the GiftGenius widget')('the GiftGenius widget in ChatGPT (Apps SDK form)', () => {
  it('starts from toolOutput, keeps the job id in widgetState, and polls through window.openai.callTool', async () => {
    const rig = await setup(100, 'apps-sdk');
    const jobId = (await page(rig).locator('#job').textContent())?.replace('Job ', '') ?? '';
    expect(jobId).toMatch(/^job_/);
    expect(await page(rig).locator('#request').textContent()).toBe('Gifts for Alex: music, cooking');
    expect(await rig.page.evaluate(() => (window as unknown as { savedState: unknown }).savedState)).toEqual({
      job_id: jobId,
    });
    await runToTheEnd(rig, jobId);
    await page(rig).locator('#status[data-status="completed"]').waitFor();
    expect(await page(rig).locator('li.gift strong').allTextContents()).toEqual(FINAL);
    expect(await page(rig).locator('li.step').allTextContents()).toContain('4/4 Done');
    expect(new Set(rig.calls.map((call) => call.name))).toEqual(new Set(['get_job_status']));
  }, 60_000);
});
