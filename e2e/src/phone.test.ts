import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../apps/server/src/db/client.js';
import { versions } from '../../apps/server/src/db/schema/index.js';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { createAuthService } from '../../apps/server/src/modules/auth/service.js';
import * as catalog from '../../apps/server/src/modules/catalog/queries.js';
import { insertDevice } from '../../apps/server/src/modules/devices/queries.js';
import { sessionCookie, storeRecord } from './api-client.js';
import { enrollDevice } from './device-client.js';
import {
  expectDialog,
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  TEST_PASSWORD,
  type RunningServer,
} from './harness.js';
import { storeApp } from './seed.js';

/**
 * The web app on the phone it is for (Safari on an iPhone, 375 x 812) and on a laptop (1280 px):
 * every check runs in both, on one server and one browser. axe-core runs inside the pages.
 */
const PHONE = { name: 'iPhone', viewport: IPHONE_VIEWPORT, userAgent: IPHONE_USER_AGENT } as const;
const DESKTOP = { name: 'desktop', viewport: { width: 1280, height: 900 }, userAgent: undefined } as const;
const SCREENS = [PHONE, DESKTOP] as const;
type Screen = (typeof SCREENS)[number];

const USER = 'phoneuser';
const UDID = '00008110-000A1B2C3D4E5F60';
const NOT_REASON = 'This app needs iOS 17 on the decrypting device.';
const APPS = {
  done: storeApp(700, { name: 'Done Phone App', version: '3.10' }),
  free: storeApp(701, { name: 'Free Waiting App' }),
  premium: storeApp(702, { name: 'Premium Waiting App' }),
  refused: storeApp(703, { name: 'Refused Phone App' }),
};

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let signedIn: Awaited<ReturnType<BrowserContext['storageState']>>;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The user, a Registered device with its enrollment name, and entries in every state. */
async function seed(dataDir: string) {
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  try {
    await database.migrate();
    const { db } = database;
    const auth = createAuthService({
      db,
      clock: () => new Date(),
      limits: { sessionTtlDays: 1, signInPerId: 10, signInPerAddress: 10, signInWindowMinutes: 1 },
    });
    await auth.ensureUser(USER, createHash('md5').update(TEST_PASSWORD).digest('hex'), 0);
    await insertDevice(db, {
      userId: USER,
      product: 'iPhone15,2',
      udid: UDID,
      status: 'Registered',
      expiresAt: new Date('2027-12-23T00:00:00Z'),
      deviceName: 'Ana’s iPhone',
    });
    for (const app of Object.values(APPS)) await catalog.upsertApps(db, 'KR', [app], new Date());
    // Store ids out of release order: the modal still lists 3.10, 3.1, 3.0.
    for (const [appVerId, version] of [
      [7003, '3.1'],
      [7001, '3.10'],
      [7009, '3.0'],
    ] as const) {
      const row = await catalog.insertVersion(db, {
        country: 'KR',
        appId: 700,
        appVerId,
        version,
        status: 'Done',
      });
      await db
        .update(versions)
        .set({ sizeBytes: 31_457, minimumOs: '15.0' })
        .where(eq(versions.seq, row.seq));
    }
    await catalog.insertVersion(db, {
      country: 'KR',
      appId: 701,
      appVerId: null,
      version: null,
      status: 'Pending',
    });
    await catalog.insertVersion(db, {
      country: 'KR',
      appId: 702,
      appVerId: null,
      version: null,
      status: 'Pending',
      premium: true,
    });
    const refused = await catalog.insertVersion(db, {
      country: 'KR',
      appId: 703,
      appVerId: 7031,
      version: '2.1',
      status: 'Not',
      requestedBy: USER,
    });
    await db.update(versions).set({ reason: NOT_REASON }).where(eq(versions.seq, refused.seq));
  } finally {
    await database.close();
  }
}

beforeAll(async () => {
  const dataDir = newDataDir();
  await seed(dataDir);
  store = await startItunesServer({
    records: [
      { ...storeRecord(703, 'Refused Phone App', 'com.example.app703'), version: '2.1' },
      { ...storeRecord(704, 'Paid Phone App', 'com.example.paid704'), price: 1.99 },
      // Long-unchanged apps still name the store's old http icon hosts.
      {
        ...storeRecord(705, 'Old Icon App', 'com.example.oldicon'),
        artworkUrl512: 'http://a1988.phobos.apple.com/us/r30/Purple1/v4/icon.png',
      },
    ],
  });
  server = await startServer(dataDir, { ITUNES_BASE_URL: store.url });
  browser = await launchBrowser();
  const s = await openSession(browser, server.url);
  await submitSignIn(s, USER);
  await s.page.waitForURL((u) => u.pathname === '/');
  await s.page.goto('/my');
  await s.page.getByRole('button', { name: '$3.99 / month · 20 App/day' }).click();
  await s.page.waitForURL('**/billing/dev-checkout/**');
  await s.page.getByRole('button', { name: 'Pay' }).click();
  await s.page.waitForURL('**/my?checkout=success');
  signedIn = await s.context.storageState();
  await s.context.close();
  // Seeding, starting, signing in and paying: more than the default on a busy machine.
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

/** A browser on this screen: signed in as the user unless `signedOut`. */
const open = (screen: Screen, { signedOut = false } = {}) =>
  openSession(browser, server.url, screen.viewport, signedOut ? undefined : signedIn, {
    ...(screen.userAgent && { userAgent: screen.userAgent }),
  });

const overflowsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

/** axe-core's violations on the page as it stands, every impact, as 'rule: target' lines. */
async function axeViolations(page: Page): Promise<string[]> {
  // A tab pane or button still fading in is measured at part opacity: wait for every transition.
  await page.evaluate(() =>
    Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined))),
  );
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(): Promise<{ violations: Array<{ id: string; nodes: Array<{ target: string[] }> }> }> };
      }
    ).axe;
    return (await axe.run()).violations;
  });
  return violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
}

const cards = (page: Page) => page.getByTestId('app-card');

describe.each(SCREENS)('on the $name', (screen) => {
  it('fits every page to the screen, with no accessibility violation', async () => {
    const s = await open(screen);
    const found: Record<string, string[]> = {};
    const check = async (name: string) => {
      expect(await overflowsSideways(s.page), `${name} scrolls sideways`).toBe(false);
      found[name] = await axeViolations(s.page);
    };
    await s.page.goto('/latest');
    await expect.poll(() => cards(s.page).count()).toBeGreaterThan(0);
    expect(await s.page.title()).toBe('Latest decrypted · Sideport');
    await check('latest');
    await s.page.goto('/queue');
    await expect.poll(() => cards(s.page).count()).toBe(2);
    expect(await s.page.title()).toBe('Decrypt Queue · Sideport');
    await check('queue');
    await s.page.goto('/search/KR/phone app');
    await expect.poll(() => cards(s.page).count()).toBeGreaterThan(0);
    await check('search');
    await cards(s.page)
      .filter({ hasText: 'Refused Phone App' })
      .getByRole('button', { name: 'View' })
      .click();
    await expect.poll(() => s.page.getByTestId('version-card').count()).toBe(1);
    await check('version modal');
    await s.page.goto('/my');
    await expect.poll(() => s.page.getByTestId('my-title').innerText()).toBe(USER);
    await check('My page, Product');
    await s.page.getByRole('tab', { name: 'Device' }).click();
    await expect.poll(() => s.page.getByText(UDID).filter({ visible: true }).count()).toBe(1);
    await check('My page, Device');
    await s.page.goto('/udid');
    await s.page.getByRole('heading', { name: 'Add Device' }).waitFor();
    await check('/udid');
    const out = await open(screen, { signedOut: true });
    await out.page.goto('/sign-in');
    await out.page.getByLabel('Password').waitFor();
    expect(await overflowsSideways(out.page)).toBe(false);
    found['sign-in'] = await axeViolations(out.page);
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
    await out.context.close();
    await s.context.close();
  });

  it('shows each device whole, with its names, a copyable UDID and its state, without scrolling sideways', async () => {
    const s = await open(screen);
    await s.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await s.page.goto('/my?tab=device');
    const device =
      screen === PHONE
        ? s.page.getByTestId('device-card').filter({ hasText: 'iPhone15,2' })
        : s.page.getByRole('row', { name: /iPhone15,2/ });
    await expect.poll(() => device.innerText()).toContain('Dec 23, 2027');
    const text = await device.innerText();
    for (const fact of [
      'iPhone15,2',
      'iPhone 14 Pro',
      'Ana’s iPhone',
      UDID,
      'Registered',
      'Installs work on it.',
    ])
      expect(text).toContain(fact);
    // Every part on screen, none cut off at the right.
    for (const part of [device.getByText(UDID), device.getByRole('button', { name: 'Registered' })]) {
      const box = (await part.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(screen.viewport.width);
    }
    expect(await overflowsSideways(s.page)).toBe(false);
    await device.getByRole('button', { name: `Copy UDID ${UDID}` }).click();
    await expect.poll(() => s.page.evaluate(() => navigator.clipboard.readText())).toBe(UDID);
    await s.context.close();
  });

  it('searches from the bar without opening the menu, and tells a paid app and a refusal apart', async () => {
    const s = await open(screen);
    await s.page.goto('/latest');
    const box = s.page.getByLabel('Search keyword');
    expect(await box.isVisible()).toBe(true);
    await box.fill('phone app');
    await box.press('Enter');
    await s.page.waitForURL('**/search/KR/phone%20app');
    // Paid apps are refused on this server: Not Support before anyone asks, and why.
    const paid = cards(s.page).filter({ hasText: 'Paid Phone App' });
    await expect.poll(() => paid.getByRole('button', { name: 'Not Support' }).isDisabled()).toBe(true);
    expect(await paid.innerText()).toContain('Paid apps are not decrypted on this server.');
    // The user asked for this one and an agent could not do it: the agent's reason.
    expect(await cards(s.page).filter({ hasText: 'Refused Phone App' }).innerText()).toContain(NOT_REASON);
    expect(await overflowsSideways(s.page)).toBe(false);
    await s.context.close();
  });

  it('shows a placeholder for an icon or a flag that cannot load, and asks for icons over https', async () => {
    const s = await open(screen);
    const asked: string[] = [];
    await s.context.route(/^https:\/\/(flagcdn\.com|[^/]*\.(mzstatic|phobos\.apple)\.com)\//, (route) => {
      asked.push(route.request().url());
      return route.fulfill({ status: 404, body: '' });
    });
    await s.page.goto('/search/KR/old icon');
    const card = cards(s.page).first();
    await expect.poll(() => card.locator('.app-icon-fallback').innerText()).toBe('OI');
    expect(await card.getByRole('img', { name: 'KR' }).innerText()).toBe('KR');
    expect(await card.locator('img').count()).toBe(0);
    expect(asked).toContain('https://a1988.phobos.apple.com/us/r30/Purple1/v4/icon.png');
    await s.context.close();
  });

  it('shows skeleton cards while a list loads, and a failed list says why with a Retry', async () => {
    const s = await open(screen);
    let answer: () => void = () => {};
    const held = new Promise<void>((resolve) => (answer = resolve));
    let fail = true;
    // The latest list's first page, whatever its query (the country it names).
    await s.context.route(
      (url) => url.pathname === '/api/latest/0',
      async (route) => {
        await held;
        return fail
          ? route.fulfill({ status: 503, contentType: 'text/plain', body: 'The database is unreachable.' })
          : route.continue();
      },
    );
    await s.page.goto('/latest');
    await expect.poll(() => s.page.getByTestId('skeleton').isVisible()).toBe(true);
    answer();
    await expectDialog(s, 'Please retry later.');
    await expect.poll(() => s.page.locator('.failed-text').innerText()).toBe('The database is unreachable.');
    fail = false;
    // Retry loads the list. The live stream's (re)connect may refetch it first, which takes the
    // button away mid-click: the list loaded either way is what the user sees.
    const retry = s.page.getByRole('button', { name: 'Retry' });
    await expect
      .poll(async () => {
        if (await retry.isVisible()) await retry.click({ timeout: 2_000 }).catch(() => {});
        return cards(s.page).count();
      })
      .toBeGreaterThan(0);
    await s.context.close();
  });

  it("shows the queue's places, lanes and that no agent works it; the premium queue only to those not in it", async () => {
    const s = await open(screen);
    await s.page.goto('/queue');
    await expect.poll(() => cards(s.page).count()).toBe(2);
    expect(await s.page.getByTestId('waiting-for-agent').innerText()).toContain(
      '2 requests are waiting for a decrypt agent',
    );
    const premium = cards(s.page).filter({ hasText: 'Premium Waiting App' });
    const free = cards(s.page).filter({ hasText: 'Free Waiting App' });
    expect(await premium.innerText()).toContain('No. 1 in line · premium lane');
    expect(await free.innerText()).toContain('No. 2 in line · free lane');
    expect(await premium.getByRole('button', { name: 'Enqueued...' }).isDisabled()).toBe(true);
    expect(await free.getByRole('button', { name: 'Enqueued...' }).isEnabled()).toBe(true);
    await s.context.close();
  });

  it('tells when each version was decrypted, lists versions newest first with the IPA size, never 0 MB', async () => {
    const s = await open(screen);
    await s.page.goto('/latest');
    const card = cards(s.page).first();
    await expect.poll(() => card.locator('.app-decrypted-at time').count()).toBe(1);
    expect(await card.locator('.app-decrypted-at').innerText()).toMatch(/^Decrypted \S/);
    expect(await card.innerText()).toContain('0.03 MB · decrypted IPA');
    expect(await card.innerText()).toContain('The store lists 50 MB and iOS 14.0.');
    await card.getByRole('button', { name: 'View' }).click();
    const numbers = s.page.getByTestId('version-card').locator('.version-number');
    await expect.poll(() => numbers.allInnerTexts()).toEqual(['3.10', '3.1', '3.0']);
    expect(await s.page.getByTestId('version-card').first().innerText()).not.toContain(' 0 MB');
    await s.context.close();
  });

  it('signs out from a search to /latest without asking to sign in', async () => {
    // A session of its own: signing out ends it on the server, and the other checks share theirs.
    const s = await open(screen, { signedOut: true });
    await submitSignIn(s, USER);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/search/KR/phone app');
    await expect.poll(() => cards(s.page).count()).toBeGreaterThan(0);
    if (screen === PHONE) await s.page.getByRole('button', { name: 'Open menu' }).click();
    await s.page.getByRole('button', { name: 'Sign Out' }).click();
    await s.page.waitForURL('**/latest');
    await s.page.waitForTimeout(300);
    expect(s.dialogs).toEqual(['Really want sign out?']);
    await s.context.close();
  });

  it("marks the current plan with its renewal and today's use", async () => {
    const s = await open(screen);
    await s.page.goto('/my');
    await expect.poll(() => s.page.getByTestId('used-today').innerText()).toBe('0 of 20 used today');
    expect(await s.page.getByTestId('current-plan').innerText()).toMatch(
      /^Current plan\s*\$3\.99 \/ month · 20 App\/day, renews [A-Z][a-z]{2} \d{1,2}, \d{4}$/,
    );
    const current = s.page
      .getByRole('button', { name: /\$3\.99 \/ month · 20 App\/day/ })
      .filter({ visible: true });
    expect(await current.getAttribute('aria-current')).toBe('true');
    expect(await current.getAttribute('class')).toContain('btn-success');
    // It cannot be chosen again: disabled, it says so.
    expect(await current.isDisabled()).toBe(true);
    expect(await current.innerText()).toBe('$3.99 / month · 20 App/day · current');
    await s.context.close();
  });
});

describe('from a computer to the phone', () => {
  it('shows Add Device as a box for the iPhone, which refuses a loopback address no phone reaches', async () => {
    // The QR code itself, on an address a phone reaches: newcomer.test.ts.
    const s = await open(DESKTOP);
    await s.page.goto('/my?tab=device');
    await s.page.getByRole('button', { name: 'Add Device' }).click();
    await expect.poll(() => s.page.getByTestId('phone-qr').count()).toBe(1);
    expect(await s.page.getByTestId('phone-qr-title').innerText()).toBe('Add your iPhone to this account');
    expect(await s.page.getByTestId('phone-qr-unreachable').innerText()).toContain('set PUBLIC_URL');
    expect(await s.page.getByRole('img', { name: /QR code/ }).count()).toBe(0);
    expect(new URL(s.page.url()).pathname).toBe('/my');
    expect(await axeViolations(s.page)).toEqual([]);
    await s.context.close();
  });

  it('gives the steps on /udid and changes as soon as the device answers', async () => {
    const s = await open(PHONE);
    await s.page.goto('/udid');
    const steps = await s.page.locator('.udid-steps').innerText();
    for (const step of ['Settings', 'Profile Downloaded', 'Install', 'Come back'])
      expect(steps).toContain(step);
    expect(await s.page.getByTestId('device-added').count()).toBe(0);
    await enrollDevice(server, await sessionCookie(server, USER, { signIn: true }), {
      UDID: '00008030-001122334455667E',
      PRODUCT: 'iPhone12,8',
      DEVICE_NAME: 'Work iPhone',
    });
    await expect
      .poll(() => s.page.getByTestId('device-added').innerText(), { timeout: 120_000 })
      .toContain('Work iPhone is on your list (iPhone SE (2nd generation))');
    await s.context.close();
  });
});

describe('the first load', () => {
  it('serves compressed, long-cached scripts and no source map; names the icons and the manifest', async () => {
    const html = await (await fetch(`${server.url}/latest`)).text();
    const scripts = [...html.matchAll(/src="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) {
      const res = await fetch(`${server.url}${script}`, { headers: { 'accept-encoding': 'br' } });
      expect(res.headers.get('content-encoding'), script).toBe('br');
      expect(res.headers.get('cache-control'), script).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('vary'), script).toContain('accept-encoding');
      expect((await fetch(`${server.url}${script}.map`)).status, `${script}.map`).toBe(404);
    }
    for (const [rel, type] of [
      ['icon', 'image/svg+xml'],
      ['apple-touch-icon', 'image/png'],
      ['manifest', 'application/manifest+json'],
    ] as const) {
      const href = new RegExp(`<link rel="${rel}" href="([^"]+)"`).exec(html)![1]!;
      const res = await fetch(`${server.url}${href}`);
      expect([res.status, res.headers.get('content-type')?.split(';')[0]], rel).toEqual([200, type]);
    }
    const manifest = (await (await fetch(`${server.url}/manifest.webmanifest`)).json()) as {
      display: string;
      icons: Array<{ sizes: string }>;
    };
    expect(manifest.display).toBe('standalone');
    expect(manifest.icons.map((i) => i.sizes)).toEqual(expect.arrayContaining(['192x192', '512x512']));
  });
});
