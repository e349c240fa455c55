/**
 * What signing keeps of an app's capabilities (issue 30), on an iPhone's screen: the line before
 * the sign buttons, its detail one tap away, and the sign confirmation that says what is lost. The
 * version is the Xcode-built sample app, which claims push, iCloud, associated domains and more.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { agentClient, caller, createAgent, sessionCookie, storeRecord } from './api-client.js';
import { registeredDevice } from './device-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
} from './harness.js';

const ADMIN = { id: 'operator', password: 'operator password' };
const READY = { id: 852, name: 'Capable App', bundleId: 'com.example.capable', appVerId: '8521' };
const IPHONE = { PRODUCT: 'iPhone15,2', UDID: '00008120-001A2B3C4D5E6F81' };

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;

beforeAll(async () => {
  store = await startItunesServer({ records: [storeRecord(READY.id, READY.name, READY.bundleId)] });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
  });
  browser = await launchBrowser();
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

const QUESTION = `Really want request sign ${READY.name}`;

describe('what an app keeps, on an iPhone', () => {
  it('shows the line before the sign buttons, the detail one tap away, and the losses in the confirmation', async () => {
    const cookie = await sessionCookie(server, 'keeper');
    await registeredDevice(server, cookie, IPHONE);
    const s = await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, {
      userAgent: IPHONE_USER_AGENT,
    });
    await submitSignIn(s, 'keeper');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page
      .getByTestId('app-card')
      .filter({ hasText: READY.name })
      .getByRole('button', { name: 'View' })
      .click();
    const card = s.page.getByTestId('version-card').first();
    const note = card.getByTestId('capability-note');
    const line = note.locator('summary');
    // Read once when the version became Done: the line is there on the first look.
    await expect.poll(() => line.innerText(), { timeout: 60_000 }).toMatch(/^Loses push notifications, /);
    expect(await note.getByText('Push notifications will not arrive.', { exact: false }).isVisible()).toBe(
      false,
    );
    // The line comes before the sign buttons, and fits the screen.
    const lineBox = (await line.boundingBox())!;
    const buttonsBox = (await card.locator('.sign-buttons').boundingBox())!;
    expect(lineBox.y + lineBox.height).toBeLessThanOrEqual(buttonsBox.y);
    expect(lineBox.x + lineBox.width).toBeLessThanOrEqual(IPHONE_VIEWPORT.width);

    await line.tap();
    const detail = note
      .locator('[data-status="lost"]')
      .filter({ hasText: 'Push notifications will not arrive.' });
    await expect.poll(() => detail.isVisible()).toBe(true);
    expect(await note.innerText()).toMatch(/DUP installs a copy as com\.example\.capable\.dup[0-9a-f]{10}: /);
    // No operator's advice for a person who is not the operator.
    expect(await note.innerText()).not.toMatch(/explicit App ID/);
    expect(await s.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    s.answers.push(false);
    await card.getByRole('group', { name: 'Normal' }).getByRole('button').tap();
    await expect.poll(() => s.dialogs.length).toBe(1);
    const [asked] = s.dialogs;
    expect(asked!.startsWith(`${QUESTION}\n\nLoses push notifications, `)).toBe(true);
    expect(asked).toContain('\n- Push notifications will not arrive.');
    expect(asked).toContain('\n- iCloud sync will not work');
    // Refused: nothing was asked of the server.
    expect(await card.getByRole('group', { name: 'Normal' }).getByRole('button').innerText()).toBe('Sign');
    await s.context.close();
  });

  it("shows the admin what signing loses and what the operator could do, in the console's Capabilities tab", async () => {
    const s = await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, {
      userAgent: IPHONE_USER_AGENT,
    });
    await submitSignIn(s, ADMIN.id, ADMIN.password);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/admin/capabilities');
    const row = s.page.getByTestId('capabilities-row').filter({ hasText: READY.name });
    await expect.poll(() => row.count()).toBe(1);
    const text = await row.innerText();
    expect(text).toContain('Push notifications');
    expect(text).toContain('PUSH_NOTIFICATIONS');
    expect(text).toMatch(/It cannot create iCloud container identifiers/);
    // The setting that gives DUP copies explicit App IDs needs App Store Connect: off and disabled here.
    const setting = s.page.getByTestId('copy-app-ids');
    expect(await setting.getByRole('switch').isDisabled()).toBe(true);
    expect(await setting.innerText()).toMatch(
      /Needs App Store Connect keys.*The API cannot create App groups: app group identifiers \(group\.…\); iCloud: iCloud container identifiers/s,
    );
    expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
      IPHONE_VIEWPORT.width,
    );
    await s.context.close();
  });
});
