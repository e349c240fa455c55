import { createHash } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedUserDevice } from './seed.js';
import {
  expectDialog,
  launchBrowser,
  newDataDir,
  openSession,
  sendAsBrowserWithoutFetchMetadata,
  startServer,
  submitSignIn,
  submitSignUp,
  TEST_PASSWORD,
  type RunningServer,
  type Session,
} from './harness.js';

let server: RunningServer;
let browser: Browser;

beforeAll(async () => {
  server = await startServer(newDataDir());
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function signUpAndOpenMyPage(s: Session, id: string) {
  await s.page.goto('/my');
  await s.page.waitForURL('**/sign-in');
  await submitSignUp(s, id);
  await s.page.waitForURL('**/my');
}

const cell = (s: Session, id: string) => s.page.getByTestId(id).innerText();

describe('paying in test mode', () => {
  it('buys a plan on the test checkout and shows it on My page', async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'subscriber');
    await expect.poll(() => cell(s, 'premium-until')).toBe('-');
    expect(await cell(s, 'daily-limit')).toBe('3 App/day');
    expect(await s.page.getByRole('columnheader').allInnerTexts()).toEqual([
      'Service',
      'Until',
      'Limit',
      'Actions',
    ]);
    expect(await s.page.getByRole('cell', { name: /Decrypt Premium/ }).innerText()).toContain(
      'Fast decrypt & Downgrade',
    );

    await s.page.getByRole('button', { name: '$6.99 / month · 50 App/day' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    expect(await s.page.getByText('TEST MODE: no real payment is made.').isVisible()).toBe(true);
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await expect.poll(() => s.page.getByRole('alert').innerText()).toContain('Payment complete.');
    const inAMonth = new Date();
    inAMonth.setUTCMonth(inAMonth.getUTCMonth() + 1);
    await expect.poll(() => cell(s, 'premium-until')).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{4}$/);
    const until = new Date(await cell(s, 'premium-until'));
    expect(Math.abs(until.getTime() - inAMonth.getTime())).toBeLessThan(3 * 86_400_000);
    expect(await cell(s, 'daily-limit')).toBe('50 App/day');
    await s.context.close();
  });

  it('buys a plan on a browser that sends no Fetch Metadata (iOS Safari before 16.4)', async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'old_safari_payer');
    const answered = await sendAsBrowserWithoutFetchMetadata(s, server.url);
    await s.page.getByRole('button', { name: '$3.99 / month · 20 App/day' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await expect.poll(() => cell(s, 'daily-limit')).toBe('20 App/day');
    // Asked for by the API client (its header proves the call), paid with the page's form (its Origin).
    expect(answered).toContain('GET /api/pay/service/0 200');
    expect(
      answered.filter((call) => /^POST \/billing\/dev-checkout\/[^/]+\/pay 303$/.test(call)),
    ).toHaveLength(1);
    await s.context.unrouteAll({ behavior: 'ignoreErrors' });
    await s.context.close();
  });

  it('changes plan: the new one replaces the old, and the portal names both', async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'planchanger');
    await s.page.getByRole('button', { name: '$6.99 / month · 50 App/day' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await expect.poll(() => cell(s, 'daily-limit')).toBe('50 App/day');

    await s.page.getByRole('button', { name: '$3.99 / month · 20 App/day' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    expect(await s.page.getByRole('paragraph').allInnerTexts()).toContain(
      'Replaces your current plan, Decrypt Premium monthly, 50 apps/day, which ends when this one is paid.',
    );
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await expect.poll(() => cell(s, 'daily-limit')).toBe('20 App/day');

    // The plan one has cannot be chosen again: disabled, it says so.
    const current = s.page.getByRole('button', { name: '$3.99 / month · 20 App/day · current' });
    await expect.poll(() => current.filter({ visible: true }).isDisabled()).toBe(true);
    expect(new URL(s.page.url()).pathname).toBe('/my');

    await s.page.getByRole('button', { name: 'Billing Portal' }).click();
    await s.page.waitForURL('**/billing/dev-portal**');
    const rows = s.page.getByRole('table').first().getByRole('row');
    const subscriptions = (await rows.allInnerTexts()).slice(1).map((r) => r.split('\t').slice(0, 2));
    expect(subscriptions.sort()).toEqual([
      ['Decrypt Premium monthly, 20 apps/day', 'active'],
      ['Decrypt Premium monthly, 50 apps/day', 'canceled'],
    ]);
    expect(await s.page.locator('body').innerText()).not.toContain('plan:');
    await s.context.close();
  });

  it("pays a reset of today's limit, and a canceled checkout changes nothing", async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'resetter');
    await s.page.getByRole('button', { name: "Reset today's limit · $0.99" }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    expect(await s.page.locator('body').innerText()).toContain('0.99');
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await expect.poll(() => s.page.getByRole('alert').innerText()).toContain('Payment complete.');
    await expect.poll(() => cell(s, 'premium-until')).toBe('-');

    await s.page.getByRole('button', { name: '$3.99 / month · 20 App/day' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    await s.page.getByRole('button', { name: 'Cancel' }).click();
    await s.page.waitForURL('**/my?checkout=canceled');
    await expect.poll(() => s.page.getByRole('alert').innerText()).toContain('Payment canceled.');
    await expect.poll(() => cell(s, 'daily-limit')).toBe('3 App/day');
    expect(await cell(s, 'premium-until')).toBe('-');
    await s.context.close();
  });

  it('shows the Device tab with its buttons and the empty text', async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'deviceless');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    expect(await s.page.getByRole('heading', { name: 'Devices - Sign Service' }).isVisible()).toBe(true);
    for (const name of ['Add Device', 'Feather Install', 'Feather Cert']) {
      expect(await s.page.getByRole('button', { name }).isVisible()).toBe(true);
    }
    expect(await s.page.getByText('Add device first.').isVisible()).toBe(true);
    // On a computer nothing downloads: no confirmation, the phone's QR code at once. This server
    // listens on a loopback address no phone reaches: it says to set PUBLIC_URL instead.
    await s.page.getByRole('button', { name: 'Add Device' }).click();
    await expect
      .poll(() => s.page.getByTestId('phone-qr-unreachable').innerText())
      .toContain('set PUBLIC_URL');
    expect(await s.page.getByRole('img', { name: /QR code/ }).count()).toBe(0);
    expect(s.dialogs).toEqual([]);
    expect(new URL(s.page.url()).pathname).toBe('/my');
    await s.context.close();
  });

  it('opens the billing portal', async () => {
    const s = await openSession(browser, server.url);
    await signUpAndOpenMyPage(s, 'portalgoer');
    await s.page.getByRole('button', { name: 'Billing Portal' }).click();
    await s.page.waitForURL('**/billing/dev-portal**');
    expect(await s.page.getByRole('heading', { name: 'Billing Portal' }).isVisible()).toBe(true);
    await s.context.close();
  });
});

describe('paying for a device', () => {
  it('warns before paying for a Mac, then the paid Mac waits in Process for an admin (Processing)', async () => {
    const dataDir = newDataDir();
    const password = TEST_PASSWORD;
    await seedUserDevice(
      dataDir,
      { id: 'macowner', passwordMd5: createHash('md5').update(password).digest('hex') },
      { product: 'MacBookPro18,1', udid: '00008103-000A1B2C3D4E5F60' },
    );
    const own = await startServer(dataDir);
    try {
      const s = await openSession(browser, own.url);
      await submitSignIn(s, 'macowner');
      await s.page.waitForURL((u) => u.pathname === '/');
      await s.page.goto('/my');
      await s.page.getByRole('tab', { name: 'Device' }).click();
      const row = s.page.getByRole('row', { name: /MacBookPro18,1/ });
      await expect.poll(() => row.innerText()).toContain('00008103-000A1B2C3D4E5F60');
      // The buyer is told before paying that Apple may take a while (docs/sign-service.md, Apple's wait).
      expect(await row.innerText()).toContain(
        'Registration can take a while: Apple usually accepts a device within minutes, but on some accounts it takes a few hours before apps install on it.',
      );
      s.answers.push(false);
      await row.getByRole('button', { name: 'Register $19.99/year' }).click();
      await expectDialog(
        s,
        'Only M1/M2 Macs are supported, an extra process follows payment, and payment is non-refundable for unsupported devices.',
      );
      expect(new URL(s.page.url()).pathname).toBe('/my');
      s.answers.push(true);
      await row.getByRole('button', { name: 'Register $19.99/year' }).click();
      await s.page.waitForURL('**/billing/dev-checkout/**');
      expect(await s.page.locator('body').innerText()).toContain('19.99');
      await s.page.getByRole('button', { name: 'Pay' }).click();
      // Back on the Device tab, where the Mac's status follows.
      await s.page.waitForURL('**/my?checkout=success&tab=device');
      await expect
        .poll(() =>
          s.page
            .getByRole('row', { name: /MacBookPro18,1/ })
            .getByRole('button', { name: /^(Processing|Pending|Register)/ })
            .innerText(),
        )
        // Paid, it goes to registration, where a Mac waits for an admin's confirmation (docs/product.md:
        // 'an extra process follows payment'); the tab follows without a reload.
        .toBe('Processing');
      expect(
        await s.page
          .getByRole('row', { name: /MacBookPro18,1/ })
          .getByRole('button', { name: 'Processing' })
          .isDisabled(),
      ).toBe(true);
      await s.context.close();
    } finally {
      await own.stop();
    }
  });
});
