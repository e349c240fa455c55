import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { makeSampleIpa } from '../../apps/server/src/dev/sample-ipa.js';
import { agentClient, caller, createAgent, sessionCookie, storeRecord } from './api-client.js';
import { enrollDevice, payForDevice, registeredDevice, waitForDevices } from './device-client.js';
import {
  expectDialog,
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  recordLabels,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

const ADMIN = { id: 'operator', password: 'operator password' };
const READY = { id: 851, name: 'Signable App', bundleId: 'com.example.signable', appVerId: '8511' };
const IPHONE = { PRODUCT: 'iPhone15,2', UDID: '00008120-001A2B3C4D5E6F71' };
const IPAD = { PRODUCT: 'iPad13,4', UDID: '00008103-001A2B3C4D5E6F72' };
const RESIGN_QUESTION =
  'This app was signed before Registered on one of your devices. Do you want to request a new sign?';

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;

beforeAll(async () => {
  store = await startItunesServer({ records: [storeRecord(READY.id, READY.name, READY.bundleId)] });
  // The operator's Feather IPA: any IPA will do for the certificate.
  const feather = path.join(mkdtempSync(path.join(tmpdir(), 'sideport-e2e-feather-')), 'feather.ipa');
  afterAll(() => rmSync(path.dirname(feather), { recursive: true, force: true }));
  await makeSampleIpa({ output: feather, bundleId: 'com.example.feather', version: '1.0' });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
    FEATHER_IPA: feather,
  });
  browser = await launchBrowser();
  // The version is decrypted the real way: requested, claimed by an agent, uploaded and checked.
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  const agent = agentClient(server, (await createAgent(server, admin, 'e2e agent')).token);
  await caller(server, await sessionCookie(server, 'requester')).json('GET', `/api/decrypt/KR/${READY.id}`);
  const job = await agent.claim();
  await agent.upload(job!, { bundleId: READY.bundleId, version: '1.0', appVerId: READY.appVerId });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const normalButton = (page: Page) =>
  page.getByTestId('version-card').first().getByRole('group', { name: 'Normal' }).getByRole('button');

/**
 * Signs in through the form as `id` (made over the API, with `cookie`'s session), in Safari on an
 * iPhone with `onIphone` (where Install goes to the itms-services URL), else a desktop browser.
 */
async function signedIn(id: string, password?: string, { onIphone = false } = {}) {
  const s = onIphone
    ? await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, { userAgent: IPHONE_USER_AGENT })
    : await openSession(browser, server.url);
  await submitSignIn(s, id, password);
  await s.page.waitForURL((u) => u.pathname === '/');
  return s;
}

async function openVersions(s: Session) {
  await s.page
    .getByTestId('app-card')
    .filter({ hasText: READY.name })
    .getByRole('button', { name: 'View' })
    .click();
  await expect.poll(() => s.page.getByTestId('version-card').count()).toBe(1);
}

/** The install URL the page goes to (itms-services: Chromium hands it to the system, so it is asked for, not loaded). */
async function watchNavigation(s: Session) {
  const cdp = await s.context.newCDPSession(s.page);
  const requested: string[] = [];
  cdp.on('Page.frameRequestedNavigation', (event) => requested.push(event.url));
  await cdp.send('Page.enable');
  return requested;
}

/** GET /api/check/sign until the user's sign of that mode is there (404 while it is being made). */
async function waitForSigned(cookie: string, type: number) {
  const person = caller(server, cookie);
  await expect
    .poll(
      async () => (await person.call('GET', `/api/check/sign/${READY.id}/${READY.appVerId}/${type}`)).status,
      {
        timeout: 120_000,
      },
    )
    .toBe(200);
}

describe('the sign service in the browser', () => {
  it('registers an enrolled iPhone from the Device tab, with no Mac warning', async () => {
    const cookie = await sessionCookie(server, 'registrant');
    await enrollDevice(server, cookie, IPHONE);
    const s = await signedIn('registrant');
    await s.page.goto('/my');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    const row = s.page.getByRole('row', { name: /iPhone15,2/ });
    await expect
      .poll(() => row.getByRole('cell').allInnerTexts())
      .toEqual([
        '1',
        // The model's name and the name the device gave itself at enrollment, beside its code.
        'iPhone15,2\niPhone 14 Pro · Ana’s iPhone',
        IPHONE.UDID,
        '-',
        'Register $19.99/year\nNot registered: installs need a registration.\nRegistration can take a while: Apple usually accepts a device within minutes, but on some accounts it takes a few hours before apps install on it.',
      ]);

    await row.getByRole('button', { name: 'Register $19.99/year' }).click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    expect(s.dialogs).toEqual([]);
    await s.page.getByRole('button', { name: 'Pay' }).click();
    // Back on the Device tab, where the payment's device is.
    await s.page.waitForURL('**/my?checkout=success&tab=device');
    expect(await s.page.getByRole('tab', { name: 'Device' }).getAttribute('aria-selected')).toBe('true');
    const inAYear = new Date();
    inAYear.setUTCFullYear(inAYear.getUTCFullYear() + 1);
    // Registered at once with the dev identity; the tab follows without a reload.
    await expect
      .poll(() =>
        s.page
          .getByRole('row', { name: /iPhone15,2/ })
          .getByRole('cell')
          .allInnerTexts(),
      )
      .toEqual([
        '1',
        'iPhone15,2\niPhone 14 Pro · Ana’s iPhone',
        IPHONE.UDID,
        inAYear.toLocaleDateString('en-US', { dateStyle: 'medium', timeZone: 'UTC' }),
        'Registered\nInstalls work on it.',
      ]);
    expect(
      await s.page
        .getByRole('row', { name: /iPhone15,2/ })
        .getByRole('button', { name: 'Registered' })
        .isDisabled(),
    ).toBe(true);
    await s.context.close();
  });

  it('shows a sign request Enqueued..., then Processing..., then Install without a reload, and installs', async () => {
    const cookie = await sessionCookie(server, 'signer');
    await registeredDevice(server, cookie, IPHONE);
    const s = await signedIn('signer', undefined, { onIphone: true });
    await openVersions(s);
    const button = normalButton(s.page);
    expect(await button.innerText()).toBe('Sign');
    const recording = await recordLabels(s.page, button);

    await button.click();
    // The question, then what signing loses of the sample app's capabilities (push, iCloud ...).
    const firstLines = () => s.dialogs.map((d) => d.split('\n')[0]);
    await expect.poll(firstLines).toEqual([`Really want request sign ${READY.name}`]);
    await expect.poll(() => button.innerText(), { timeout: 120_000 }).toBe('Install');
    expect(await recording.labels()).toEqual(['Sign', 'Enqueued...', 'Processing...', 'Install']);
    expect(await recording.isSamePage()).toBe(true);

    // Install: check-sign answers 200, then the page goes to the itms-services URL of the manifest.
    const requested = await watchNavigation(s);
    const installAnswer = s.page.waitForResponse((r) => r.url().includes('/api/install/'));
    await button.click();
    const { url } = (await (await installAnswer).json()) as { url: string };
    expect(url).toMatch(/^itms-services:\/\/\?action=download-manifest&url=/);
    await expect.poll(() => requested).toEqual([url]);
    expect(firstLines()).toEqual([`Really want request sign ${READY.name}`]);
    // The manifest needs no cookie (iOS fetches it without one) and names the app.
    const manifest = await fetch(new URL(url).searchParams.get('url')!);
    expect(manifest.status).toBe(200);
    expect(await manifest.text()).toContain(`<string>${READY.bundleId}</string>`);
    await s.context.close();
  });

  it('asks to sign again when a device was registered after the sign, and signs again', async () => {
    const cookie = await sessionCookie(server, 'resigner');
    await registeredDevice(server, cookie, IPHONE);
    await caller(server, cookie).json('PUT', `/api/sign/${READY.id}/${READY.appVerId}`, { type: 0 });
    await waitForSigned(cookie, 0);
    await enrollDevice(server, cookie, IPAD);
    await payForDevice(server, cookie, 1);
    await waitForDevices(server, cookie, ['Registered', 'Registered']);

    const s = await signedIn('resigner', undefined, { onIphone: true });
    await openVersions(s);
    const button = normalButton(s.page);
    expect(await button.innerText()).toBe('Install');
    const recording = await recordLabels(s.page, button);
    const requested = await watchNavigation(s);
    await button.click();
    await expectDialog(s, RESIGN_QUESTION);
    await expect
      .poll(() => recording.labels(), { timeout: 120_000 })
      .toEqual(['Install', 'Enqueued...', 'Processing...', 'Install']);
    expect(requested).toEqual([]);

    // Signed for both devices now: Install goes to the install URL without asking.
    await button.click();
    await expect.poll(() => requested.length).toBe(1);
    expect(requested[0]).toMatch(/^itms-services:/);
    expect(s.dialogs).toEqual([RESIGN_QUESTION]);
    const check = await caller(server, cookie).json<{ udids: string[] }>(
      'GET',
      `/api/check/sign/${READY.id}/${READY.appVerId}/0`,
    );
    expect(check.udids.sort()).toEqual([IPHONE.UDID, IPAD.UDID].sort());
    await s.context.close();
  });

  it("goes to Feather's install URL on Feather Install, once it is signed for the person's devices", async () => {
    const cookie = await sessionCookie(server, 'featherinstaller');
    await registeredDevice(server, cookie, IPHONE);
    const s = await signedIn('featherinstaller', undefined, { onIphone: true });
    await s.page.goto('/my');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    const requested = await watchNavigation(s);
    const button = s.page.getByRole('button', { name: 'Feather Install' });
    await button.click();
    await expect.poll(() => requested.length, { timeout: 120_000 }).toBe(1);
    expect(requested[0]).toMatch(/^itms-services:\/\/\?action=download-manifest&url=/);
    const manifest = await fetch(new URL(requested[0]!).searchParams.get('url')!);
    expect(await manifest.text()).toContain('<string>com.example.feather</string>');
    expect(s.dialogs).toEqual([]);
    await expect.poll(() => button.isEnabled()).toBe(true);
    await s.context.close();
  });

  it('shows the cert password with its notice on Feather Cert, beside the certificate', async () => {
    const cookie = await sessionCookie(server, 'featherer');
    await registeredDevice(server, cookie, IPHONE);
    const s = await signedIn('featherer');
    await s.page.goto('/my');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    await s.page.getByRole('button', { name: 'Feather Cert' }).click();
    const dialog = s.page.getByRole('dialog', { name: 'Feather Cert' });
    const password = await dialog.getByLabel('Cert password').innerText();
    expect(password).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(await dialog.getByTestId('cert-password-notice').innerText()).toBe(
      `The cert password is ${password}. Enter it when Feather imports the certificate; it is shown only this once.`,
    );
    // The zip is on a signed URL that needs no cookie.
    const href = await dialog.getByRole('button', { name: 'Download the certificate' }).getAttribute('href');
    const zip = await fetch(href!);
    expect([zip.status, zip.headers.get('content-type')]).toEqual([200, 'application/zip']);
    expect(
      Buffer.from(await zip.arrayBuffer())
        .subarray(0, 2)
        .toString(),
    ).toBe('PK');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    await s.context.close();
  });
});

describe('the admin console', () => {
  it('shows the dev identity as such, and confirms a Mac waiting after payment', async () => {
    const cookie = await sessionCookie(server, 'macowner');
    await enrollDevice(server, cookie, { PRODUCT: 'Mac14,2', UDID: '78897E40-F532-5DE0-A7DC-56BAC5CEEB9D' });
    await payForDevice(server, cookie, 0);
    await waitForDevices(server, cookie, ['Process']);

    const s = await signedIn(ADMIN.id, ADMIN.password);
    await s.page.getByRole('link', { name: 'Admin' }).click();
    await s.page.getByRole('tab', { name: 'Devices' }).click();
    const identity = s.page.getByTestId('signing-identity');
    await expect
      .poll(() => identity.innerText())
      .toContain('Dev identity: real devices will not install its apps');
    expect(await identity.innerText()).toContain(
      'It runs the whole pipeline; real devices will not install what it signs.',
    );
    // The chain every signature carries: the dev certificate, then the dev CA (its root).
    expect(await identity.getByTestId('certificate-chain').innerText()).toMatch(
      /^Chain carried in each signature: Sideport Dev \(not Apple\): Sideport \([A-Z0-9]{10}\) \(until .+\) → Sideport Dev \(not Apple\) CA \(until .+\)$/,
    );

    const row = s.page.getByTestId('device-row').filter({ hasText: 'macowner' });
    await expect
      .poll(() => row.getByRole('cell').nth(2).innerText())
      .toBe('Process\nMac: waits for confirmation');
    await row.getByRole('button', { name: 'Confirm Mac14,2 of macowner' }).click();
    // Confirmed, registration follows: the Mac no longer waits for anyone, and is soon Registered.
    await expect.poll(() => row.getByRole('button', { name: /^Confirm/ }).count()).toBe(0);
    await waitForDevices(server, cookie, ['Registered']);
    await s.context.close();
  });
});
