import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  expectDialog,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  storedState,
  submitSignIn,
  submitSignUp,
  type RunningServer,
} from './harness.js';
import { seedDataDir, storeApp } from './seed.js';

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;

const DONE = 30; // more than one page of 24
beforeAll(async () => {
  const dataDir = newDataDir();
  await seedDataDir(dataDir, [
    ...Array.from({ length: DONE }, (_, i) => ({ app: storeApp(100 + i), status: 'Done' })),
    { app: storeApp(500, { name: 'Waiting App' }), status: 'Pending', appVerId: null },
    { app: storeApp(501, { name: 'Working App' }), status: 'Process' },
    { app: storeApp(502, { name: 'Premium App' }), status: 'Pending', appVerId: null, premium: true },
  ]);
  store = await startItunesServer({
    records: [
      {
        wrapperType: 'software',
        kind: 'software',
        trackId: 900,
        trackName: 'Rock Band',
        artistName: 'Harmonix',
        version: '3.0',
        artworkUrl512: 'https://is1-ssl.mzstatic.com/a.jpg',
        trackViewUrl: 'https://apps.apple.com/app/id900',
        averageUserRating: 3.5,
        userRatingCount: 812,
        bundleId: 'com.harmonix.rockband',
        minimumOsVersion: '15.0',
        fileSizeBytes: '104857600',
        price: 0,
      },
      {
        wrapperType: 'software',
        kind: 'mac-software',
        trackId: 901,
        trackName: 'Rock Band for Mac',
        artistName: 'Harmonix',
        version: '1.0',
        bundleId: 'com.harmonix.mac',
      },
    ],
  });
  server = await startServer(dataDir, {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: 'operator',
    ADMIN_PASSWORD: 'operator password',
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const cards = (page: Page) => page.getByTestId('app-card');
const cardTexts = (page: Page) => cards(page).allInnerTexts();

describe('catalogue lists in the browser', () => {
  it('shows latest cards with version, bundle id, requirement and size, and no rating', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/latest');
    await expect.poll(() => cards(s.page).count()).toBe(24);
    const first = cards(s.page).first();
    const text = await first.innerText();
    expect(text).toContain(`App ${100 + DONE - 1}`);
    expect(text).toContain(`Developer ${100 + DONE - 1}`);
    expect(text).toContain('2.1');
    expect(text).toContain(`com.example.app${100 + DONE - 1}`);
    expect(text).toContain('Requires: iOS 14.0 or later');
    expect(text).toContain('50 MB');
    expect(await first.locator('.rating').count()).toBe(0);
    expect(await first.getByRole('img', { name: 'KR' }).getAttribute('src')).toBe(
      'https://flagcdn.com/w40/kr.png',
    );
    expect(await first.getByRole('link', { name: 'App Info' }).getAttribute('href')).toBe(
      `https://apps.apple.com/kr/app/id${100 + DONE - 1}`,
    );
    expect(await first.getByRole('button').allInnerTexts()).toEqual(['View', 'Downgrade']);
    await s.context.close();
  });

  it('loads the next page 250 px from the end and stops at the empty page', async () => {
    const s = await openSession(browser, server.url, { width: 1280, height: 700 });
    const pages: string[] = [];
    s.page.on('request', (r) => {
      const m = /\/api\/latest\/(\d+)/.exec(r.url());
      if (m) pages.push(m[1]!);
    });
    await s.page.goto('/');
    await expect.poll(() => cards(s.page).count()).toBe(24);
    expect(pages).toEqual(['0']);
    for (let i = 0; i < 4; i++) {
      await s.page.mouse.wheel(0, 20_000);
      await s.page.waitForTimeout(400);
    }
    await expect.poll(() => cards(s.page).count()).toBe(DONE);
    await expect.poll(() => pages).toEqual(['0', '1', '2']);
    await s.page.mouse.wheel(0, 20_000);
    await s.page.waitForTimeout(700);
    expect(pages).toEqual(['0', '1', '2']); // the empty page 2 ended the list
    await s.context.close();
  });

  it("alerts 'Please retry later.' when a page fails, and stops loading", async () => {
    const s = await openSession(browser, server.url, { width: 1280, height: 700 });
    let asked = 0;
    await s.context.route('**/api/latest/1*', (route) => {
      asked++;
      return route.fulfill({ status: 500, body: '' });
    });
    await s.page.goto('/latest');
    await expect.poll(() => cards(s.page).count()).toBe(24);
    await s.page.mouse.wheel(0, 20_000);
    await expectDialog(s, 'Please retry later.');
    await s.page.mouse.wheel(0, 20_000);
    await s.page.waitForTimeout(700);
    expect(asked).toBe(1);
    await s.context.close();
  });

  it('shows the queue premium first with progress buttons and no size or rating', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/queue');
    await expect.poll(() => cards(s.page).count()).toBe(3);
    const texts = await cardTexts(s.page);
    expect(texts.map((t) => t.split('\n').find((l) => l.endsWith('App')))).toEqual([
      'Premium App',
      'Waiting App',
      'Working App',
    ]);
    expect(texts.join('\n')).not.toContain('MB');
    expect(await cards(s.page).nth(0).getByRole('button').allInnerTexts()).toEqual(['Enqueued...']);
    expect(await cards(s.page).nth(2).getByRole('button', { name: 'Processing...' }).isDisabled()).toBe(true);
    await s.context.close();
  });

  it('lays the grid out in 1, 2 and 3 columns by width', async () => {
    for (const [width, columns] of [
      [375, 1],
      [800, 2],
      [1280, 3],
    ] as const) {
      const s = await openSession(browser, server.url, { width, height: 900 });
      await s.page.goto('/latest');
      await expect.poll(() => cards(s.page).count()).toBe(24);
      const lefts = await cards(s.page).evaluateAll((els) => [
        ...new Set(els.map((e) => Math.round(e.getBoundingClientRect().left))),
      ]);
      expect(lefts).toHaveLength(columns);
      await s.context.close();
    }
  });

  it('sends an anonymous visitor to sign in on any action, remembering the list', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/queue');
    // A free request (a premium one is not offered the premium queue).
    await cards(s.page)
      .filter({ hasText: 'Waiting App' })
      .getByRole('button', { name: 'Enqueued...' })
      .click();
    await expectDialog(s, 'Please Sign-in');
    await s.page.waitForURL('**/sign-in');
    expect(await storedState(s.page)).toMatchObject({ last_page: '/queue', isLogin: false });
    await s.context.close();
  });

  it('searches the store, shows ratings and Decrypt, and says when nothing is found', async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, 'searcher');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.getByLabel('Search keyword').fill('rock band');
    await s.page.getByLabel('Search keyword').press('Enter');
    await expect.poll(() => cards(s.page).count()).toBe(1); // the Mac app is filtered out
    const card = cards(s.page).first();
    expect(await card.getByRole('img', { name: /^Rated 3\.5 out of 5 by 812 people$/ }).count()).toBe(1);
    expect(await card.innerText()).toContain('Requires: iOS 15.0 or later');
    expect(await card.innerText()).toContain('100 MB');
    expect(await card.getByRole('button').allInnerTexts()).toEqual(['View', 'Downgrade', 'Decrypt']);
    expect(store.requests.at(-1)!.searchParams.get('country')).toBe('kr');

    // Downgrade is for premium users only.
    await card.getByRole('button', { name: 'Downgrade' }).click();
    await expectDialog(s, 'Need decrypt premium.');
    // Decrypt confirms twice for a free user, then asks the server for this app, which queues it.
    const asked = s.page.waitForRequest((r) => new URL(r.url()).pathname === '/api/decrypt/KR/900');
    await card.getByRole('button', { name: 'Decrypt' }).click();
    await expectDialog(s, 'Versions that are too old or certain apps may not work.');
    await expectDialog(
      s,
      'Free users take a long time to decrypt. Service subscription is available on My Page.',
    );
    await asked;
    await expect.poll(() => card.getByRole('button').allInnerTexts()).toEqual(['View', 'Enqueued...']);

    await s.page.getByLabel('Store country').selectOption('US');
    await s.page.waitForURL((u) => u.pathname.startsWith('/search/US/'));
    await s.page.getByLabel('Search keyword').fill('zzz none');
    await s.page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => s.page.locator('.empty-text').innerText()).toBe('zzz none not found.');
    await s.context.close();
  });

  it("says only the country error, once and inline, for a country that isn't supported, not also 'not found'", async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, 'traveller');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/search/XX/talon');
    await expect
      .poll(() => s.page.locator('.failed-text').innerText())
      .toBe('Country must be one of US, KR, AU, RU, DE, IN, SE, IL, IT.');
    expect(await s.page.getByRole('heading', { name: 'Search: talon' }).isVisible()).toBe(true);
    expect(await s.page.locator('.empty-text').count()).toBe(0);
    expect(s.dialogs).toEqual([]);
    await s.context.close();
  });

  it('lets an admin delete a done app, which leaves the list at once', async () => {
    const s = await openSession(browser, server.url);
    await submitSignIn(s, 'operator', 'operator password');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/latest');
    await expect.poll(() => cards(s.page).count()).toBe(24);
    const target = `App ${100 + DONE - 2}`;
    const card = cards(s.page).filter({ hasText: target });
    expect(await card.getByRole('button').allInnerTexts()).toEqual(['View', 'Delete', 'Downgrade']);
    await card.getByRole('button', { name: 'Delete' }).click();
    await expectDialog(s, `Really want delete '${target}'?`);
    await expect.poll(() => cards(s.page).filter({ hasText: target }).count()).toBe(0);
    await s.page.reload();
    await expect.poll(() => cards(s.page).count()).toBe(24);
    expect(await cards(s.page).filter({ hasText: target }).count()).toBe(0);
    await s.context.close();
  });
});

describe('empty lists', () => {
  it("says 'No list now.' when a list is empty", async () => {
    const empty = await startServer(newDataDir());
    try {
      const s = await openSession(browser, empty.url);
      await s.page.goto('/queue');
      await expect.poll(() => s.page.locator('.empty-text').innerText()).toBe('No list now.');
      await s.context.close();
    } finally {
      await empty.stop();
    }
  });
});
