import { networkInterfaces } from 'node:os';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { caller, sessionCookie, storeRecord } from './api-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  settled,
  startServer,
  submitSignIn,
  TINY_PNG,
  type RunningServer,
  type Session,
} from './harness.js';

/**
 * What a newcomer meets at 375 px (an iPhone) and 1280 px: one dialog sequence per action, no
 * confirmation before a refusal the server would give, controls for what the server does not
 * offer disabled with the reason, Back closing the version modal, search errors said once inline,
 * and the desktop's QR code in view and labelled. The server listens on this machine's network
 * address (as a phone would reach it) when it has one: a loopback address gets no QR code.
 */
const DECRYPT_WARNING = 'Versions that are too old or certain apps may not work.';
const FREE_USER_WARNING =
  'Free users take a long time to decrypt. Service subscription is available on My Page.';
const PHONE = { name: '375 px iPhone', viewport: IPHONE_VIEWPORT, userAgent: IPHONE_USER_AGENT };
const DESKTOP = { name: '1280 px', viewport: { width: 1280, height: 900 }, userAgent: undefined };
const SCREENS = [PHONE, DESKTOP];
type Screen = (typeof SCREENS)[number];
const APPS = Array.from({ length: 8 }, (_, i) => ({ id: 700 + i, name: `Newcomer App ${i}` }));

/** An address of this machine other phones on its network reach; undefined on loopback only. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a?.family === 'IPv4' && !a.internal)?.address;

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let people = 0;

beforeAll(async () => {
  store = await startItunesServer({
    records: APPS.map((a) => storeRecord(a.id, a.name, `com.example.newcomer${a.id}`)),
  });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    FREE_DAILY_LIMIT: '1',
    ...(lanAddress && { HOST: lanAddress }),
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

/** A new free user, signed in on a fresh browser of this screen. */
async function signedIn(screen: Screen): Promise<Session & { id: string }> {
  const id = `newcomer${++people}`;
  await sessionCookie(server, id);
  const s = await openSession(
    browser,
    server.url,
    screen.viewport,
    undefined,
    screen.userAgent ? { userAgent: screen.userAgent } : {},
  );
  // The session keeps tests offline by answering every host but 127.0.0.1 with an image: this
  // server may be on the network address.
  await s.context.unrouteAll({ behavior: 'ignoreErrors' });
  await s.context.route(
    (url) => url.origin !== new URL(server.url).origin,
    (route) => route.fulfill({ status: 200, contentType: 'image/png', body: TINY_PNG }),
  );
  await submitSignIn(s, id);
  await s.page.waitForURL((u) => u.pathname === '/');
  return { ...s, id };
}

const cardOf = (page: Page, name: string) => page.getByTestId('app-card').filter({ hasText: name });
const overflowsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);

async function searchFor(s: Session, name: string) {
  await s.page.goto(`/search/KR/${encodeURIComponent(name)}`);
  await expect.poll(() => cardOf(s.page, name).count()).toBe(1);
  return cardOf(s.page, name);
}

describe.each(SCREENS)('at $name', (screen) => {
  const app = (i: number) => APPS[SCREENS.indexOf(screen) * 4 + i]!;

  it('asks one confirmation sequence for a double-clicked Decrypt', async () => {
    const s = await signedIn(screen);
    const card = await searchFor(s, app(0).name);
    const requests: string[] = [];
    s.page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/decrypt/')) requests.push(r.url());
    });
    await card.getByRole('button', { name: 'Decrypt' }).dblclick();
    await expect.poll(() => card.getByRole('button').allInnerTexts()).toEqual(['View', 'Enqueued...']);
    await settled(s.page);
    expect(s.dialogs).toEqual([DECRYPT_WARNING, FREE_USER_WARNING]);
    expect(requests).toHaveLength(1);
    await s.context.close();
  });

  it("says 'Need decrypt premium.' before asking to move a free user's request to the premium queue", async () => {
    const s = await signedIn(screen);
    await caller(server, await sessionCookie(server, s.id, { signIn: true })).json(
      'GET',
      `/api/decrypt/KR/${app(1).id}`,
    );
    const card = await searchFor(s, app(1).name);
    await expect.poll(() => card.getByRole('button').allInnerTexts()).toEqual(['View', 'Enqueued...']);
    await card.getByRole('button', { name: 'Enqueued...' }).click();
    await expect.poll(() => s.dialogs).toEqual(['Need decrypt premium.']);
    await settled(s.page);
    expect(s.dialogs).toEqual(['Need decrypt premium.']);
    await s.context.close();
  });

  it("says 'Daily limit reached.' before asking when today's requests are used up", async () => {
    const s = await signedIn(screen);
    // The one request of the day (FREE_DAILY_LIMIT 1), made elsewhere.
    await caller(server, await sessionCookie(server, s.id, { signIn: true })).json(
      'GET',
      `/api/decrypt/KR/${app(2).id}`,
    );
    const card = await searchFor(s, app(3).name);
    const asked = { decrypt: false };
    s.page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/decrypt/')) asked.decrypt = true;
    });
    await card.getByRole('button', { name: 'Decrypt' }).click();
    await expect.poll(() => s.dialogs).toEqual(['Daily limit reached.']);
    await settled(s.page);
    expect(s.dialogs).toEqual(['Daily limit reached.']);
    expect(asked.decrypt).toBe(false);
    expect(await card.getByRole('button').allInnerTexts()).toEqual(['View', 'Downgrade', 'Decrypt']);
    await s.context.close();
  });

  it('closes the version modal with Back and stays on the page', async () => {
    const s = await signedIn(screen);
    const card = await searchFor(s, app(0).name);
    const here = s.page.url();
    await card.getByRole('button', { name: 'View' }).click();
    await expect.poll(() => s.page.getByRole('dialog').count()).toBe(1);
    await s.page.goBack();
    await expect.poll(() => s.page.getByRole('dialog').count()).toBe(0);
    expect(s.page.url()).toBe(here);
    expect(await cardOf(s.page, app(0).name).isVisible()).toBe(true);
    // Opened again, its Close leaves no entry behind: Back then leaves the page.
    await card.getByRole('button', { name: 'View' }).click();
    await expect.poll(() => s.page.getByRole('dialog').count()).toBe(1);
    await s.page.getByRole('dialog').getByRole('button', { name: 'Close' }).first().click();
    await expect.poll(() => s.page.getByRole('dialog').count()).toBe(0);
    expect(s.page.url()).toBe(here);
    await s.page.goBack();
    await s.page.waitForURL((u) => u.pathname === '/');
    expect(s.dialogs).toEqual([]);
    await s.context.close();
  });

  it('shows a search error once, inline, and never a bare heading', async () => {
    const s = await signedIn(screen);
    await s.page.goto('/search/KR');
    await expect.poll(() => s.page.getByRole('heading', { level: 1 }).innerText()).toBe('Search');
    expect(await s.page.getByTestId('search-empty').innerText()).toBe(
      'Type the name of an app in the search box.',
    );

    await s.page.goto('/search/XX/talon');
    await expect.poll(() => s.page.getByText(/^Country must be one of /).count()).toBe(1);

    const long = 'k'.repeat(300);
    await s.page.goto(`/search/KR/${long}`);
    await expect.poll(() => s.page.getByText('Keywords are at most').count()).toBe(1);
    expect(await overflowsSideways(s.page)).toBe(false);
    await settled(s.page);
    expect(s.dialogs).toEqual([]);
    await s.context.close();
  });

  it('disables Feather Install and Feather Cert with the reason on a server without Feather', async () => {
    const s = await signedIn(screen);
    await s.page.goto('/my?tab=device');
    for (const name of ['Feather Install', 'Feather Cert']) {
      const button = s.page.getByRole('button', { name });
      await expect.poll(() => button.isDisabled()).toBe(true);
      expect(await button.getAttribute('aria-describedby')).toBe('feather-not-offered');
    }
    expect(await s.page.locator('#feather-not-offered').innerText()).toBe(
      'Feather is not offered on this server.',
    );
    expect(s.dialogs).toEqual([]);
    await s.context.close();
  });
});

describe('Add Device on a desktop', () => {
  it.skipIf(!lanAddress)('goes straight to its QR code, labelled and scrolled into view', async () => {
    const s = await signedIn(DESKTOP);
    await s.page.setViewportSize({ width: 1280, height: 500 });
    await s.page.goto('/my?tab=device');
    await s.page.getByRole('button', { name: 'Add Device' }).click();
    const box = s.page.getByTestId('phone-qr');
    const qr = box.getByRole('img', { name: /QR code/ });
    await expect.poll(() => qr.count()).toBe(1);
    expect(await qr.getAttribute('data-url')).toBe(`${server.url}/udid`);
    expect(await box.getByTestId('phone-qr-title').innerText()).toBe('Add your iPhone to this account');
    expect(await box.innerText()).toContain('within 10 minutes');
    await expect
      .poll(() =>
        qr.evaluate((el) => {
          const r = el.getBoundingClientRect();
          return r.top >= 0 && r.bottom <= window.innerHeight;
        }),
      )
      .toBe(true);
    expect(s.dialogs).toEqual([]);
    await s.context.close();
  });
});
