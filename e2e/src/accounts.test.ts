import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAscServer, type AscServer } from '../../apps/server/src/test/asc-server.js';
import { caller, sessionCookie } from './api-client.js';
import { enrollDevice, payForDevice, waitForDevices } from './device-client.js';
import {
  expectDialog,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

const ADMIN = { id: 'operator', password: 'operator password' };
const newP8 = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
/** Two teams: the first from ASC_KEY_ID, the second from ASC_ACCOUNTS_FILE. */
const FIRST = {
  keyId: 'E2EKEY0001',
  issuerId: '69a6de70-00e1-47e3-e053-5b8c7c11a4d1',
  keyPem: newP8(),
  teamId: 'E2ETEAM001',
};
const SECOND = {
  keyId: 'E2EKEY0002',
  issuerId: '69a6de70-00e2-47e3-e053-5b8c7c11a4d1',
  keyPem: newP8(),
  teamId: 'E2ETEAM002',
};
/** Slots of each family per account: small, so the console's counts are easy to read. */
const LIMIT = 3;

let asc: AscServer;
let server: RunningServer;
let browser: Browser;
let keysDir: string;
let bob: string;

beforeAll(async () => {
  asc = await startAscServer({ ...FIRST, deviceLimit: LIMIT, accounts: [{ ...SECOND, deviceLimit: LIMIT }] });
  keysDir = mkdtempSync(path.join(tmpdir(), 'sideport-e2e-keys-'));
  writeFileSync(path.join(keysDir, 'AuthKey_E2EKEY0002.p8'), SECOND.keyPem);
  writeFileSync(
    path.join(keysDir, 'accounts.json'),
    JSON.stringify([
      {
        keyId: SECOND.keyId,
        issuerId: SECOND.issuerId,
        privateKeyFile: 'AuthKey_E2EKEY0002.p8',
        name: 'Second team',
      },
    ]),
  );
  server = await startServer(newDataDir(), {
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
    ASC_KEY_ID: FIRST.keyId,
    ASC_ISSUER_ID: FIRST.issuerId,
    ASC_PRIVATE_KEY: FIRST.keyPem,
    ASC_BASE_URL: asc.url,
    ASC_ACCOUNTS_FILE: path.join(keysDir, 'accounts.json'),
    ASC_DEVICES_PER_FAMILY: String(LIMIT),
  });
  browser = await launchBrowser();

  // Alice's two iPhones and iPad go to the first account; Bob's iPhone to the second, which has more room.
  const alice = await sessionCookie(server, 'alice');
  const devices = [
    { UDID: '00008120-0000000000E2E001', PRODUCT: 'iPhone15,2' },
    { UDID: '00008120-0000000000E2E002', PRODUCT: 'iPhone14,5' },
    { UDID: '00008120-0000000000E2E003', PRODUCT: 'iPad13,1' },
  ];
  asc.setDeviceClass(devices[2]!.UDID, 'IPAD');
  for (const [index, fields] of devices.entries()) {
    await enrollDevice(server, alice, fields);
    await payForDevice(server, alice, index);
    await waitForDevices(server, alice, Array<string>(index + 1).fill('Registered'));
  }
  bob = await sessionCookie(server, 'bobby');
  await enrollDevice(server, bob, { UDID: '00008120-0000000000E2E101', PRODUCT: 'iPhone16,1' });
  await payForDevice(server, bob, 0);
  await waitForDevices(server, bob, ['Registered']);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await asc?.close();
  if (keysDir) rmSync(keysDir, { recursive: true, force: true });
});

async function accountsTab(viewport?: { width: number; height: number }) {
  const s = await openSession(browser, server.url, viewport);
  await submitSignIn(s, ADMIN.id, ADMIN.password);
  await s.page.waitForURL((u) => u.pathname === '/');
  await s.page.goto('/admin');
  await s.page.getByRole('tab', { name: 'Accounts' }).click();
  return s;
}

const row = (page: Page, name: string) => page.getByTestId('account-row').filter({ hasText: name });
/** An account's slot lines as the console shows them: 'iPhone 2 used · 1 free'. */
const slotsOf = (page: Page, name: string) =>
  row(page, name)
    .getByTestId('account-slot')
    .allInnerTexts()
    .then((texts) => texts.map((t) => t.replace(/\s+/g, ' ').trim()));

describe('the admin console’s developer accounts', () => {
  it('shows each account’s slots per family and renewal date, and disabling one moves its devices', async () => {
    const s: Session = await accountsTab();
    const { page } = s;
    await expect.poll(() => page.getByTestId('account-row').count()).toBe(2);
    await expect
      .poll(() => slotsOf(page, 'Key E2EKEY0001'))
      .toEqual(['iPhone 2 used · 1 free', 'iPad 1 used · 2 free']);
    await expect.poll(() => slotsOf(page, 'Second team')).toEqual(['iPhone 1 used · 2 free']);
    expect(await row(page, 'Key E2EKEY0001').innerText()).toMatch(
      /First[\s\S]*from the configuration[\s\S]*1 person, 3 devices[\s\S]*In use/,
    );

    // The membership renewal date, as Apple's membership page shows it.
    const renews = new Date(Date.now() + 60 * 86_400_000).toISOString().slice(0, 10);
    const date = page.getByLabel('Membership renewal of Second team');
    await date.fill(renews);
    await row(page, 'Second team').getByRole('button', { name: 'Save' }).click();
    const admin = caller(
      server,
      await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true }),
    );
    const renewalOnServer = async () =>
      (
        await admin.json<Array<{ name: string; membership_renews_at: string | null }>>(
          'GET',
          '/api/admin/accounts',
        )
      ).find((a) => a.name === 'Second team')?.membership_renews_at;
    await expect.poll(renewalOnServer).toBe(renews);
    await page.reload();
    await page.getByRole('tab', { name: 'Accounts' }).click();
    await expect.poll(() => page.getByLabel('Membership renewal of Second team').inputValue()).toBe(renews);

    // Disabled: Bob's iPhone moves to the first account; its slot on the second stays taken this membership year.
    await page.getByRole('button', { name: 'Disable Second team' }).click();
    await expectDialog(
      s,
      'Disable Second team? The devices on it (1 person) move to the other accounts, and their apps are signed again.',
    );
    await expect
      .poll(() => row(page, 'Second team').innerText())
      .toMatch(/Disabled\s*Disabled by operator on \d{4}-\d{2}-\d{2}\./);
    await expect
      .poll(() => slotsOf(page, 'Key E2EKEY0001'), { timeout: 120_000 })
      .toEqual(['iPhone 3 used · 0 free', 'iPad 1 used · 2 free']);
    await expect.poll(() => row(page, 'Second team').innerText()).toMatch(/0 people, 0 devices/);
    expect(await slotsOf(page, 'Second team')).toEqual(['iPhone 1 used · 2 free']);
    expect(asc.account(FIRST.keyId).devices.map((d) => d.udid)).toContain('00008120-0000000000E2E101');
    await waitForDevices(server, bob, ['Registered']);
    await expect(
      row(page, 'Second team').getByRole('button', { name: 'Enable Second team' }).isVisible(),
    ).resolves.toBe(true);
    expect(asc.violations).toEqual([]);
    await s.context.close();
  });

  it('fits a 375 px screen, each account a card of labelled lines', async () => {
    const s = await accountsTab({ width: 375, height: 800 });
    await expect.poll(() => s.page.getByTestId('account-row').count()).toBe(2);
    expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    // The action is on screen, under the account, not at the far end of the scrolled table.
    const action = await s.page.getByRole('button', { name: 'Disable Key E2EKEY0001' }).boundingBox();
    expect(action!.x + action!.width).toBeLessThanOrEqual(375);
    await s.context.close();
  });
});
