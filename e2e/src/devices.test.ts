import { readFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADD_DEVICE_NOTICE } from '../../apps/web/src/features/account/messages.js';
import {
  expectDialog,
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  sendAsBrowserWithoutFetchMetadata,
  startServer,
  submitSignUp,
  type RunningServer,
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

describe('adding a device', () => {
  it('shows the 10-minute notice, then /udid downloads the enrollment profile', async () => {
    // On the iPhone, where the profile is installed.
    const s = await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, {
      userAgent: IPHONE_USER_AGENT,
    });
    await s.page.goto('/udid');
    // Signed out: sign in first, then back to /udid, which downloads.
    await s.page.waitForURL('**/sign-in');
    const first = s.page.waitForEvent('download');
    await submitSignUp(s, 'enroller');
    expect((await first).suggestedFilename()).toBe('sideport-device.mobileconfig');

    await s.page.goto('/my');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    expect(await s.page.getByText('Add device first.').isVisible()).toBe(true);
    const download = s.page.waitForEvent('download');
    await s.page.getByRole('button', { name: 'Add Device' }).click();
    await expectDialog(s, ADD_DEVICE_NOTICE);
    const profile = await download;
    expect(profile.suggestedFilename()).toBe('sideport-device.mobileconfig');
    const text = await readFile((await profile.path())!, 'utf8');
    expect(text).toContain('<string>Profile Service</string>');
    expect(text).toMatch(
      new RegExp(`<key>URL</key>\\s*<string>${server.url}/api/udid/enroll/[A-Za-z0-9_-]{43}</string>`),
    );
    expect(new URL(s.page.url()).pathname).toBe('/udid');
    expect(
      await s.page.getByRole('link', { name: 'Download the device profile again' }).getAttribute('href'),
    ).toBe('/api/udid/profile');
    await s.context.close();
  });

  it('downloads the profile on a browser that sends no Fetch Metadata, and refuses a link from elsewhere', async () => {
    const s = await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, {
      userAgent: IPHONE_USER_AGENT,
    });
    await submitSignUp(s, 'old_safari');
    await s.page.waitForURL((u) => u.pathname === '/');
    // As iOS Safari before 16.4 sends them: no Sec-Fetch-*, no Origin on a GET.
    const answered = await sendAsBrowserWithoutFetchMetadata(s, server.url);

    const download = s.page.waitForEvent('download');
    await s.page.goto('/udid');
    expect((await download).suggestedFilename()).toBe('sideport-device.mobileconfig');
    expect(answered).toEqual(
      expect.arrayContaining(['POST /api/navigation-tokens 200', 'GET /api/udid/profile 200']),
    );

    // Again from the page's link: a new token, a new download.
    const again = s.page.waitForEvent('download');
    await s.page.getByRole('link', { name: 'Download the device profile again' }).click();
    expect((await again).suggestedFilename()).toBe('sideport-device.mobileconfig');

    // What a link on another site opens in that browser: the cookie and nothing else.
    const fromElsewhere = await s.page.goto('/api/udid/profile');
    expect(fromElsewhere?.status()).toBe(403);
    expect(await s.page.textContent('body')).toBe(
      "This request did not show that it came from the site's own pages; open it from there.",
    );
    await s.context.unrouteAll({ behavior: 'ignoreErrors' });
    await s.context.close();
  });

  it('disables Feather Install and Feather Cert with the reason when Feather is not offered', async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, 'featherless');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/my');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    for (const name of ['Feather Install', 'Feather Cert'])
      await expect.poll(() => s.page.getByRole('button', { name }).isDisabled()).toBe(true);
    expect(await s.page.locator('#feather-not-offered').innerText()).toBe(
      'Feather is not offered on this server.',
    );
    expect(s.dialogs).toEqual([]);
    expect(new URL(s.page.url()).pathname).toBe('/my');
    await s.context.close();
  });
});
