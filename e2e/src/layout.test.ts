import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  launchBrowser,
  lineCount,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  TEST_PASSWORD,
  type RunningServer,
} from './harness.js';
import { seedUserDevice } from './seed.js';

/**
 * How the pages lay out at a phone's, a small tablet's and a laptop's width (375, 800, 1280 px),
 * measured from the boxes Chromium draws. Set E2E_SCREENSHOT_DIR to also keep a screenshot of each
 * page and width there, to look at.
 */
const WIDTHS = [375, 800, 1280] as const;
const screenshotDir = process.env.E2E_SCREENSHOT_DIR;

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let signedIn: Awaited<ReturnType<BrowserContext['storageState']>>;

beforeAll(async () => {
  const dataDir = newDataDir();
  await seedUserDevice(
    dataDir,
    { id: 'looker', passwordMd5: createHash('md5').update(TEST_PASSWORD).digest('hex') },
    {
      product: 'iPhone15,2',
      udid: '00008110-000A1B2C3D4E5F60',
      status: 'Registered',
      expiresAt: new Date('2027-12-23T00:00:00Z'),
    },
  );
  store = await startItunesServer({
    records: [
      {
        wrapperType: 'software',
        kind: 'software',
        trackId: 900,
        trackName: 'Talon for Twitter',
        artistName: 'Klinker Apps',
        version: '3.0',
        artworkUrl512: 'https://is1-ssl.mzstatic.com/a.jpg',
        trackViewUrl: 'https://apps.apple.com/app/id900',
        averageUserRating: 3.5,
        userRatingCount: 812,
        bundleId: 'com.klinker.talon',
        minimumOsVersion: '15.0',
        fileSizeBytes: '104857600',
        price: 0,
      },
    ],
  });
  server = await startServer(dataDir, { ITUNES_BASE_URL: store.url });
  browser = await launchBrowser();
  // A subscriber, so My page and the portal show dates.
  const s = await openSession(browser, server.url);
  await submitSignIn(s, 'looker');
  await s.page.waitForURL((u) => u.pathname === '/');
  await s.page.goto('/my');
  await s.page.getByRole('button', { name: '$39.99 / year · 20 App/day' }).click();
  await s.page.waitForURL('**/billing/dev-checkout/**');
  await s.page.getByRole('button', { name: 'Pay' }).click();
  await s.page.waitForURL('**/my?checkout=success');
  signedIn = await s.context.storageState();
  await s.context.close();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

/** The subscriber's browser at this width. */
const openAt = (width: number) => openSession(browser, server.url, { width, height: 800 }, signedIn);

async function keepScreenshot(page: Page, name: string, width: number) {
  if (!screenshotDir) return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}-${width}.png`), fullPage: true });
}

/** The page scrolls sideways: something is wider than the window. */
const overflowsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

/** WCAG contrast ratio between an element's text and what is behind it (its own or an ancestor's fill). */
async function textContrast(locator: Locator) {
  const [fg, bg] = await locator.evaluate((el) => {
    const rgba = (css: string) => (css.match(/[\d.]+/g) ?? []).map(Number);
    let behind: Element | null = el;
    let fill = rgba(getComputedStyle(el).backgroundColor);
    while (behind && (fill.length < 3 || fill[3] === 0)) {
      behind = behind.parentElement;
      fill = behind ? rgba(getComputedStyle(behind).backgroundColor) : [255, 255, 255, 1];
    }
    return [rgba(getComputedStyle(el).color), fill];
  });
  const luminance = (c: number[]) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  const [hi, lo] = [luminance(fg!), luminance(bg!)].sort((a, b) => b - a);
  return (hi! + 0.05) / (lo! + 0.05);
}

/** The search box is wide enough to show its whole placeholder. */
const showsWholePlaceholder = (input: Locator) =>
  input.evaluate((el) => {
    const box = el as HTMLInputElement;
    const style = getComputedStyle(box);
    const context = document.createElement('canvas').getContext('2d')!;
    context.font = style.font;
    const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return inner >= context.measureText(box.placeholder).width;
  });

describe.each(WIDTHS)('at %i px', (width) => {
  it('the bar keeps Sign Out on one line, the whole search box, and a Search button that shows', async () => {
    const s = await openAt(width);
    await s.page.goto('/latest');
    if (width < 768) {
      await s.page.getByRole('button', { name: 'Open menu' }).click();
      await expect.poll(() => s.page.locator('#main-menu.show').count()).toBe(1);
    }
    const signOut = s.page.getByRole('button', { name: 'Sign Out' });
    await expect.poll(() => signOut.isVisible()).toBe(true);
    // The external links come with the config: wait for the full bar before measuring it.
    await expect.poll(() => s.page.getByRole('link', { name: 'Channel' }).isVisible()).toBe(true);
    expect(await lineCount(signOut)).toBe(1);
    const keyword = s.page.getByLabel('Search keyword');
    expect(await showsWholePlaceholder(keyword)).toBe(true);
    const search = s.page.getByRole('button', { name: 'Search', exact: true });
    // Polled: the side menu slides in.
    await expect
      .poll(async () => {
        const box = (await search.boundingBox())!;
        return box.x + box.width;
      })
      .toBeLessThanOrEqual(width);
    expect(await lineCount(search)).toBe(1);
    expect(await textContrast(search)).toBeGreaterThanOrEqual(4.5);
    expect(await overflowsSideways(s.page)).toBe(false);
    await keepScreenshot(s.page, 'bar', width);
    await s.context.close();
  });

  it('draws the rating stars, the half one too, as drawings of their own, with no font to fetch', async () => {
    const s = await openAt(width);
    const fonts: string[] = [];
    s.page.on('response', (r) => /\.woff2?(\?|$)/.test(r.url()) && fonts.push(r.url()));
    await s.page.goto('/search/KR/talon');
    const card = s.page.getByTestId('app-card').first();
    await expect.poll(() => card.getByRole('img', { name: /^Rated 3\.5 out of 5/ }).count()).toBe(1);
    const stars = card.locator('.star svg');
    expect(
      await stars.evaluateAll((els) =>
        els.map((e) => [
          /bi-star(-fill|-half)?/.exec(e.getAttribute('class') ?? '')?.[0],
          e.getBoundingClientRect().width > 0,
        ]),
      ),
    ).toEqual([
      ['bi-star-fill', true],
      ['bi-star-fill', true],
      ['bi-star-fill', true],
      ['bi-star-half', true],
      ['bi-star', true],
    ]);
    expect(fonts).toEqual([]);
    expect(await card.innerText()).not.toContain('\u2bea');
    expect(await overflowsSideways(s.page)).toBe(false);
    await keepScreenshot(s.page, 'search', width);
    await s.context.close();
  });

  it('My page keeps each plan button and each date on one line', async () => {
    const s = await openAt(width);
    await s.page.goto('/my');
    const until = s.page.getByTestId('premium-until');
    await expect.poll(() => until.innerText()).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{4}$/);
    expect(await lineCount(until)).toBe(1);
    expect(await lineCount(s.page.getByTestId('daily-limit'))).toBe(1);
    const offers = s.page.getByRole('button', { name: /App\/day|Reset today's limit/ });
    expect(await offers.count()).toBe(5);
    for (const offer of await offers.all()) expect(await lineCount(offer)).toBe(1);
    const table = s.page.locator('.table-responsive').first();
    expect(await table.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    await keepScreenshot(s.page, 'my-product', width);

    await s.page.getByRole('tab', { name: 'Device' }).click();
    // The spec's table from 768 px; below it each device is a card of labelled rows.
    const device =
      width < 768
        ? s.page.getByTestId('device-card').filter({ hasText: 'iPhone15,2' })
        : s.page.getByRole('row', { name: /iPhone15,2/ });
    await expect.poll(() => device.innerText()).toContain('Dec 23, 2027');
    expect(await lineCount(device.getByText('Dec 23, 2027', { exact: true }))).toBe(1);
    // The UDID on one line: beside its label its last character used to wrap at 375 px.
    expect(await lineCount(device.locator('code.udid'))).toBe(1);
    expect(await overflowsSideways(s.page)).toBe(false);
    await keepScreenshot(s.page, 'my-device', width);
    await s.context.close();
  });

  it('the test-mode portal keeps its dates on one line', async () => {
    const s = await openAt(width);
    await s.page.goto('/billing/dev-portal');
    const dates = s.page.getByRole('cell', { name: /^\d{4}-\d{2}-\d{2}$/ });
    expect(await dates.count()).toBe(2);
    for (const date of await dates.all()) expect(await lineCount(date)).toBe(1);
    expect(await overflowsSideways(s.page)).toBe(false);
    await keepScreenshot(s.page, 'portal', width);
    await s.context.close();
  });
});
