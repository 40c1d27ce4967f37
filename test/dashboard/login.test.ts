/**
 * The dashboard behind BREAKWATER_ADMIN_TOKEN in headless Chromium: the page sends a browser without a
 * session to the login form; a wrong token is refused on the form; the right one opens the dashboard, whose
 * buttons then work with the session cookie; logging out ends the session.
 */
import { expect, it } from 'vitest';
import { tempDb } from '../support/cleanups.js';
import { startBackends, useCleanups } from '../e2e/support.js';
import { describeBrowser, openBrowser, screenshot } from './browser.js';
import { startDashboardGateway } from './support.js';

const defer = useCleanups();
const TOKEN = 'browser-login-token-7c3d9a1e';

describeBrowser('login tests')('the dashboard with an admin token, in Chromium', () => {
  it('logs in through the form, acts with the session, and logs out', async () => {
    const backends = await startBackends(defer);
    const gw = await startDashboardGateway(defer, backends, {
      dbPath: tempDb(defer),
      gateway: { adminToken: TOKEN },
    });
    const { context, page } = await openBrowser(defer);

    await page.goto(gw.dashboardUrl);
    await page.waitForURL(`${gw.url}/admin/login`);
    await page.fill('#token', 'not-the-admin-token');
    await page.click('button[type="submit"]');
    await page.waitForSelector('#message:has-text("That token is not right.")');
    await screenshot(page, 'dashboard-login-refused');

    await page.fill('#token', TOKEN);
    await page.click('button[type="submit"]');
    await page.waitForURL(gw.dashboardUrl);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.textContent('#admin-mode')).toBe('signed in');
    const [cookie] = await context.cookies();
    expect([cookie?.name, cookie?.httpOnly, cookie?.sameSite, cookie?.path]).toEqual([
      'breakwater_admin',
      true,
      'Strict',
      '/',
    ]);

    // A change with the session cookie (the page adds x-breakwater-admin: 1).
    await page.click('tr[data-breaker="analytics"] button[data-action="isolate"]');
    await page.waitForSelector('tr[data-breaker="analytics"][data-state="isolated"]');
    expect(gw.parts.upstreams![2]!.breaker!.state().state).toBe('isolated');

    await page.click('#logout');
    await page.waitForURL(`${gw.url}/admin/login`);
    expect(await context.cookies()).toEqual([]);
    const response = await page.goto(`${gw.url}/admin/api/overview`);
    expect(response?.status()).toBe(401);
  }, 30_000);
});
