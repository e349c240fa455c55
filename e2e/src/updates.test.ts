import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppUpdate, UpdateCheckResult, UpdatesOverview } from '@sideport/contracts';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  agentClient,
  caller,
  createAgent,
  sessionCookie,
  storeRecord,
  type AgentClient,
} from './api-client.js';
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
const APP = { id: 733, name: 'Updatable App', bundleId: 'com.example.updatable' };
const V1 = { appVerId: '7331', version: '1.0' };
const V2 = { appVerId: '7332', version: '2.0' };

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let agent: AgentClient;
let admin: string;
const record = storeRecord(APP.id, APP.name, APP.bundleId, V1.version);
const people: Record<string, string> = {};

/** A person with a Registered iPhone who signed v1 in the normal mode (what 'installed' means here). */
async function installer(id: string, udid: string) {
  const cookie = await sessionCookie(server, id);
  await registeredDevice(server, cookie, { PRODUCT: 'iPhone15,2', UDID: udid });
  const person = caller(server, cookie);
  await person.json('PUT', `/api/sign/${APP.id}/${V1.appVerId}`, { type: 0 });
  // Polled by hand: beforeAll has no expect.poll.
  const deadline = Date.now() + 120_000;
  while ((await person.call('GET', `/api/check/sign/${APP.id}/${V1.appVerId}/0`)).status !== 200) {
    if (Date.now() > deadline) throw new Error(`${id}'s sign of v1 did not finish`);
    await new Promise((r) => setTimeout(r, 100));
  }
  people[id] = cookie;
}

beforeAll(async () => {
  store = await startItunesServer({ records: [record] });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
  });
  browser = await launchBrowser();
  admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  agent = agentClient(server, (await createAgent(server, admin, 'e2e agent')).token);
  // v1 decrypted the real way: requested, claimed by the agent, uploaded and checked.
  await caller(server, await sessionCookie(server, 'requester')).json('GET', `/api/decrypt/KR/${APP.id}`);
  const job = await agent.claim();
  await agent.upload(job!, { bundleId: APP.bundleId, version: V1.version, appVerId: V1.appVerId });
  await installer('anabel', '00008120-001A2B3C4D5E7301');
  await installer('benjamin', '00008120-001A2B3C4D5E7302');
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

describe('updates of installed apps', () => {
  it("finds the store's new version once for all its users; Update decrypts, signs and offers Install on the iPhone", async () => {
    record.version = V2.version;
    const lookups = () =>
      store.requests.filter((u) => u.pathname === '/lookup' && u.searchParams.get('id') === String(APP.id))
        .length;
    const before = lookups();
    const check = await caller(server, admin).json<UpdateCheckResult>('POST', '/api/admin/updates/check');
    expect(check).toMatchObject({ asked: 1, store_calls: 1, changed: 1 });
    expect(lookups()).toBe(before + 1);
    for (const id of ['anabel', 'benjamin'])
      expect(await caller(server, people[id]!).json<AppUpdate[]>('GET', '/api/updates')).toMatchObject([
        { installed_version: '1.0', store_version: '2.0', state: 'Available' },
      ]);

    // Ana, in Safari on her iPhone: My page's Updates tab.
    const s = await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, {
      userAgent: IPHONE_USER_AGENT,
    });
    await submitSignIn(s, 'anabel');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/my?tab=updates');
    const row = s.page.locator('.update-row', { hasText: APP.name });
    await expect.poll(() => row.locator('.update-versions').innerText()).toBe('1.0 → 2.0');
    expect(await s.page.getByTestId('updates-count').innerText()).toBe('1');
    await row.getByRole('button', { name: 'Update' }).click();
    await expect.poll(() => row.locator('.update-state').innerText()).toBe('Decrypting the new version…');

    // The agent takes the new version's job (the store's current version, asked for Ana).
    const job = await agent.claim();
    expect(job).toMatchObject({ app_id: String(APP.id), app_ver_id: null });
    await agent.upload(job!, { bundleId: APP.bundleId, version: V2.version, appVerId: V2.appVerId });

    // Signed in the same mode for her iPhone, then Install, which goes to iOS's installer.
    const install = row.getByRole('button', { name: 'Install' });
    await install.waitFor({ timeout: 120_000 });
    const cdp = await s.context.newCDPSession(s.page);
    const requested: string[] = [];
    cdp.on('Page.frameRequestedNavigation', (event) => requested.push(event.url));
    await cdp.send('Page.enable');
    await install.click();
    await expect.poll(() => requested.find((u) => u.startsWith('itms-services://'))).toBeDefined();
    // Ben's update was found by the same check and waits for his own click.
    expect(await caller(server, people.benjamin!).json<AppUpdate[]>('GET', '/api/updates')).toMatchObject([
      { state: 'Available', store_version: '2.0' },
    ]);
    // The artifact Ana installs is the new version, signed for her iPhone like the one before.
    const ana = caller(server, people.anabel!);
    const [before1, after2] = await Promise.all([
      ana.json<{ udids: string[] }>('GET', `/api/check/sign/${APP.id}/${V1.appVerId}/0`),
      ana.json<{ udids: string[] }>('GET', `/api/check/sign/${APP.id}/${V2.appVerId}/0`),
    ]);
    expect(after2.udids).toEqual(before1.udids);
  });

  it('shows the operator how many updates wait and lets them set the daily cap of automatic ones, on an iPhone and a desktop', async () => {
    record.version = V2.version;
    await caller(server, admin).json('POST', '/api/admin/updates/check');
    const overview = () => caller(server, admin).json<UpdatesOverview>('GET', '/api/admin/updates');
    const { waiting, automatic_daily_cap_default: configured } = await overview();
    expect(waiting).toBeGreaterThan(0);

    for (const [viewport, cap] of [
      [IPHONE_VIEWPORT, '5'],
      [{ width: 1280, height: 800 }, '7'],
    ] as const) {
      const s = await openSession(browser, server.url, viewport, undefined, {
        ...(viewport === IPHONE_VIEWPORT ? { userAgent: IPHONE_USER_AGENT } : {}),
      });
      await submitSignIn(s, ADMIN.id, ADMIN.password);
      await s.page.waitForURL((u) => u.pathname === '/');
      await s.page.goto('/admin/updates');
      await expect.poll(() => s.page.getByTestId('updates-waiting').innerText()).toBe(String(waiting));
      expect(await s.page.getByTestId('updates-automatic').innerText()).toMatch(
        new RegExp(`^0 of ${configured} automatic updates started today \\(UTC\\)`),
      );
      expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        viewport.width,
      );

      // A bad cap is refused in the form; a good one is kept by the server.
      const field = s.page.getByLabel('Automatic updates a day');
      await field.fill('-3');
      await s.page.getByRole('button', { name: 'Save' }).click();
      await expect
        .poll(() => s.page.getByRole('alert').innerText())
        .toBe('Give a whole number of automatic updates a day (0: none).');
      await field.fill(cap);
      await s.page.getByRole('button', { name: 'Save' }).click();
      await expect.poll(async () => (await overview()).automatic_daily_cap).toBe(Number(cap));
      expect((await overview()).automatic_daily_cap_is_set).toBe(true);
      await expect
        .poll(() => s.page.getByTestId('updates-automatic').innerText())
        .toMatch(new RegExp(`^0 of ${cap} automatic`));

      // Back to the configured default.
      await s.page.getByRole('button', { name: `Use the default (${configured})` }).click();
      await expect.poll(async () => (await overview()).automatic_daily_cap_is_set).toBe(false);
      expect((await overview()).automatic_daily_cap).toBe(configured);
      await s.context.close();
    }
  });
});
