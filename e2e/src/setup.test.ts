import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newDataDir, openSession, startServer, type RunningServer } from './harness.js';

let server: RunningServer;
let browser: Browser;

beforeAll(async () => {
  // No ADMIN_ID: the first start prints the one-time setup link.
  server = await startServer(newDataDir());
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** The link as printed, opened on the server's own address. */
async function printedLink(): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const match = /No admin account yet\. Open http:\/\/localhost:\d+(\/setup\/[\w-]+)/.exec(server.output());
    if (match) return match[1]!;
    if (Date.now() > deadline) throw new Error(`no setup link printed:\n${server.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the first start', () => {
  it('leads through the printed link to the admin console, which opens on the setup checklist', async () => {
    const link = await printedLink();
    const s = await openSession(browser, server.url);
    await s.page.goto(link);
    // A second tab on the same link, its form open before the account exists.
    const other = await openSession(browser, server.url);
    await other.page.goto(link);
    await other.page.getByRole('button', { name: 'Create admin account' }).waitFor();
    await s.page.getByLabel('Id', { exact: true }).fill('operator');
    await s.page.getByLabel('Password', { exact: true }).fill('short');
    await s.page.getByLabel('Password confirm').fill('short');
    await s.page.getByRole('button', { name: 'Create admin account' }).click();
    // The sign-up rules apply before anything is sent, in an alert region a screen reader reads out.
    await expect
      .poll(() => s.page.getByRole('alert').allInnerTexts())
      .toEqual(['Please enter at least 8 characters for Password']);
    expect(s.dialogs).toEqual([]);

    await s.page.getByLabel('Password', { exact: true }).fill('a long password');
    await s.page.getByLabel('Password confirm').fill('a long password');
    await s.page.getByLabel('Password confirm').press('Enter');
    await s.page.waitForURL((u) => u.pathname === '/admin');
    const agent = s.page.getByTestId('setup-agent');
    await expect.poll(() => agent.innerText()).toContain('To do');
    expect(await agent.innerText()).toContain('No agent online (none seen yet)');
    expect(await s.page.getByTestId('setup-billing').innerText()).toContain('STRIPE_SECRET_KEY');
    await s.context.close();

    // The tab opened before reads the server's refusal in the same region.
    await other.page.getByLabel('Id', { exact: true }).fill('another');
    await other.page.getByLabel('Password', { exact: true }).fill('a long password');
    await other.page.getByLabel('Password confirm').fill('a long password');
    await other.page.getByRole('button', { name: 'Create admin account' }).click();
    await expect
      .poll(() => other.page.getByRole('alert').allInnerTexts())
      .toEqual(['An admin account exists, so this setup link no longer works. Sign in instead.']);
    expect(other.dialogs).toEqual([]);
    await other.context.close();

    // The link worked once: a second visitor is told so and creates nothing.
    const later = await openSession(browser, server.url);
    await later.page.goto(link);
    await expect
      .poll(() => later.page.getByTestId('setup-closed').innerText())
      .toContain('An admin account exists, so this setup link no longer works.');
    await later.context.close();
  });
});
