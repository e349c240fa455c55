import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignUp,
  type RunningServer,
} from './harness.js';
import { fixturesDir } from './paths.js';
import { seedDataDir, storeApp } from './seed.js';

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;

beforeAll(async () => {
  const dataDir = newDataDir();
  await seedDataDir(dataDir, [
    { app: storeApp(300), status: 'Done' },
    { app: storeApp(301, { name: 'Waiting App' }), status: 'Pending', appVerId: null },
  ]);
  // A real store record; its 2014 icon host is gone, today's answers point at Apple's artwork CDN.
  const recorded = JSON.parse(
    readFileSync(path.join(fixturesDir, 'itunes/fastlane_itunesLookup-284882215.json'), 'utf8'),
  );
  store = await startItunesServer({
    records: [
      {
        ...recorded.results[0],
        artworkUrl512: 'https://is1-ssl.mzstatic.com/image/thumb/facebook/512x512bb.jpg',
      },
    ],
  });
  server = await startServer(dataDir, { ITUNES_BASE_URL: store.url });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

/** Every Content-Security-Policy violation the page reports, from the document's own event. */
async function recordViolations(page: Page): Promise<() => Promise<string[]>> {
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (e) => {
      seen.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const console: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) console.push(m.text());
  });
  return async () => [
    ...(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)),
    ...console,
  ];
}

describe('the Content-Security-Policy in a real browser', () => {
  it('lets every page of the built app, its flags and its icons load without a violation', async () => {
    const s = await openSession(browser, server.url);
    const images: string[] = [];
    s.page.on('request', (r) => {
      if (r.resourceType() === 'image') images.push(r.url());
    });
    const violations = await recordViolations(s.page);
    const found: Record<string, string[]> = {};
    const visit = async (path: string, ready: () => Promise<unknown>) => {
      await s.page.goto(path);
      await ready();
      found[path] = await violations();
    };

    await visit('/latest', () => s.page.getByTestId('app-card').first().waitFor());
    await visit('/queue', () => s.page.getByText('Waiting App').waitFor());
    await visit('/sign-in', () => s.page.getByLabel('Password').waitFor());
    await submitSignUp(s, 'csp_reader');
    await s.page.waitForURL((url) => !url.pathname.startsWith('/sign-up'));
    found['/sign-up'] = await violations();
    await visit('/search/KR/facebook', () => s.page.getByText('Facebook', { exact: true }).waitFor());
    await visit('/my', () => s.page.getByRole('tab', { name: 'Device' }).waitFor());
    await s.page.getByRole('tab', { name: 'Device' }).click();
    found['/my (Device)'] = await violations();

    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
    // The policy let the browser ask for the flags and the store's icons (the test answers them itself).
    expect(images).toContain('https://flagcdn.com/w40/kr.png');
    expect(images.some((url) => url.startsWith('https://is1-ssl.mzstatic.com/'))).toBe(true);
    await s.context.close();
  });

  it('does report what it forbids: a script from another host', async () => {
    const s = await openSession(browser, server.url);
    const violations = await recordViolations(s.page);
    await s.page.goto('/latest');
    await s.page.evaluate(() => {
      const script = document.createElement('script');
      script.src = 'https://cdn.example.org/evil.js';
      document.head.append(script);
    });
    await expect
      .poll(violations)
      .toEqual(
        expect.arrayContaining([expect.stringMatching(/^script-src(-elem)? https:\/\/cdn\.example\.org/)]),
      );
    await s.context.close();
  });
});
