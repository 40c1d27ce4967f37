/**
 * What the dashboard's browser tests share (not a test file itself): the system Chromium driven by
 * playwright-core (never a browser download), a `describe` that skips with a printed reason when
 * BREAKWATER_TEST_CHROMIUM is unset, and screenshots saved under test-artifacts/.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { describe } from 'vitest';

/** The Chromium executable of the tests (`/usr/bin/chromium`), or `''` when BREAKWATER_TEST_CHROMIUM is unset. */
export const TEST_CHROMIUM = process.env.BREAKWATER_TEST_CHROMIUM ?? '';

/** `describe`, or `describe.skip` after printing why `what` is skipped (no BREAKWATER_TEST_CHROMIUM). */
export function describeBrowser(what: string): typeof describe.skip {
  if (TEST_CHROMIUM !== '') return describe;
  console.log(
    `Browser ${what} skipped: set BREAKWATER_TEST_CHROMIUM=/usr/bin/chromium (Debian's chromium package)`,
  );
  return describe.skip;
}

/** Where screenshots go (git-ignored). */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');

/** The flags every run uses: no sandbox (root in CI), no GPU, nothing fetched in the background. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Launches the system Chromium with a fresh profile in a temporary --user-data-dir (removed after the test)
 * and returns a page of 1280×1000.
 */
export async function openBrowser(
  defer: (cleanup: () => unknown) => void,
): Promise<{ context: BrowserContext; page: Page }> {
  const profile = mkdtempSync(join(tmpdir(), 'breakwater-chromium-'));
  defer(() => rmSync(profile, { recursive: true, force: true }));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: TEST_CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 1000 },
  });
  defer(() => context.close());
  const page = context.pages()[0] ?? (await context.newPage());
  return { context, page };
}

/** Saves a full-page screenshot as test-artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
