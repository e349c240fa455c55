import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  type Session,
} from './harness.js';

let server: RunningServer;
let browser: Browser;
let seq = 0;
const freshId = () => `person${++seq}`;

// An empty local store: searches answer [] instead of a store error whose alert could race page loads.
let store: ItunesServer;
beforeAll(async () => {
  store = await startItunesServer();
  server = await startServer(newDataDir(), { ITUNES_BASE_URL: store.url });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const navLinks = (s: Session) => s.page.locator('#main-menu .nav-link').allInnerTexts();

describe('accounts in the browser', () => {
  it('signs up and lands on the page that asked for sign-in', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/my');
    await s.page.waitForURL('**/sign-in');
    expect(await storedState(s.page)).toMatchObject({ isLogin: false, grade: -1, last_page: '/my' });
    await s.page.getByRole('button', { name: 'Sign up' }).click();
    await s.page.waitForURL('**/sign-up');
    const id = freshId();
    await s.page.getByLabel('Id', { exact: true }).fill(id);
    await s.page.getByLabel('Password', { exact: true }).fill('long enough password');
    await s.page.getByLabel('Password confirm').fill('long enough password');
    await s.page.getByLabel('Password confirm').press('Enter');
    await s.page.waitForURL('**/my');
    await expect.poll(() => s.page.getByTestId('my-title').innerText()).toBe(id);
    expect(await storedState(s.page)).toMatchObject({ isLogin: true, grade: 0 });
    await s.context.close();
  });

  it('goes to / after sign-in when last_page was the sign-in page itself', async () => {
    const s = await openSession(browser, server.url);
    const id = freshId();
    await submitSignUp(s, id);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.context.close();
  });

  it('sends a signed-in person away from /sign-in and /sign-up to /', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/my');
    await s.page.waitForURL('**/sign-in');
    await submitSignUp(s, freshId());
    await s.page.waitForURL('**/my');
    for (const form of ['/sign-in', '/sign-up']) {
      await s.page.goto(form);
      await s.page.waitForURL((u) => u.pathname === '/');
      await expect
        .poll(() => s.page.getByRole('heading', { name: 'Latest decrypted' }).isVisible())
        .toBe(true);
    }
    await s.context.close();
  });

  it('shows each validation message and sends nothing until the form is right', async () => {
    const s = await openSession(browser, server.url);
    const requests: string[] = [];
    s.page.on('request', (r) => r.url().includes('/api/sign') && requests.push(r.url()));
    await s.page.goto('/sign-in');
    await s.page.getByLabel('Id', { exact: true }).fill('abc');
    await s.page.getByLabel('Password').fill('long enough password');
    await s.page.getByRole('button', { name: 'Sign in' }).click();
    // Each broken rule in an alert region a screen reader reads out (role=alert), not a dialog.
    await expect
      .poll(() => s.page.getByRole('alert').allInnerTexts())
      .toEqual(['Please enter at least 4 characters for ID']);
    await s.page.getByLabel('Id', { exact: true }).fill('abcd');
    await s.page.getByLabel('Password').fill('short');
    await s.page.getByLabel('Password').press('Enter');
    await expect
      .poll(() => s.page.getByRole('alert').allInnerTexts())
      .toEqual(['Please enter at least 8 characters for Password']);
    // Sign-up says its rules before anything is submitted, and a broken one inline, not in a dialog.
    await s.page.goto('/sign-up');
    for (const [field, rule] of [
      ['Id', 'At least 4 characters.'],
      ['Password', 'At least 8 characters.'],
      ['Password confirm', 'The same password again.'],
    ] as const) {
      const description = await s.page.getByLabel(field, { exact: true }).getAttribute('aria-describedby');
      expect(await s.page.locator(`#${description}`).innerText()).toBe(rule);
    }
    await s.page.getByLabel('Id', { exact: true }).fill('abc');
    await s.page.getByRole('button', { name: 'Sign up' }).click();
    await expect
      .poll(() => s.page.getByRole('alert').allInnerTexts())
      .toEqual(['Please enter at least 4 characters for ID']);
    await s.page.getByLabel('Id', { exact: true }).fill('abcd');
    await s.page.getByLabel('Password', { exact: true }).fill('long enough password');
    await s.page.getByLabel('Password confirm').fill('another password');
    await s.page.getByRole('button', { name: 'Sign up' }).click();
    await expect.poll(() => s.page.getByRole('alert').allInnerTexts()).toEqual(['Passwords do not match.']);
    expect(s.dialogs).toEqual([]);
    expect(requests).toEqual([]);
    await s.context.close();
  });

  it('shows the server sentence for a wrong password and sends only the MD5', async () => {
    const s = await openSession(browser, server.url);
    const id = freshId();
    await submitSignUp(s, id);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.context.clearCookies();
    await s.page.evaluate(() => localStorage.clear());
    await s.page.goto('/sign-in');
    let body = '';
    s.page.on('request', (r) => r.url().endsWith('/api/sign-in') && (body = r.postData() ?? ''));
    await s.page.getByLabel('Id', { exact: true }).fill(id);
    await s.page.getByLabel('Password').fill('not the password');
    await s.page.getByLabel('Password').press('Enter');
    await expect
      .poll(() => s.page.getByRole('alert').allInnerTexts())
      .toEqual(['The id or password is not correct.']);
    expect(s.dialogs).toEqual([]);
    expect(JSON.parse(body)).toEqual({ id, pw: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(body).not.toContain('not the password');
    await s.context.close();
  });

  it('shows the navbar links of each auth state, with external links in a new tab', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/latest');
    await expect
      .poll(() => navLinks(s))
      .toEqual(['Latest', 'Queue', 'Sign In', 'Sign Up', 'Chat', 'Channel']);
    for (const name of ['Chat', 'Channel']) {
      const link = s.page.getByRole('link', { name });
      expect(await link.getAttribute('target')).toBe('_blank');
      expect(await link.getAttribute('rel')).toContain('noopener');
    }
    await expect
      .poll(() => s.page.getByRole('link', { name: 'Sideport home' }).getAttribute('href'))
      .toBe('/latest');
    await submitSignUp(s, freshId());
    await s.page.waitForURL((u) => u.pathname === '/');
    await expect
      .poll(() => navLinks(s))
      .toEqual(['Latest', 'Queue', 'Mypage', 'Sign Out', 'Chat', 'Channel']);
    await s.context.close();
  });

  it('collapses the navbar into a side menu below 768 px only', async () => {
    const narrow = await openSession(browser, server.url, { width: 767, height: 800 });
    await narrow.page.goto('/latest');
    const toggle = narrow.page.getByRole('button', { name: 'Open menu' });
    await expect.poll(() => toggle.isVisible()).toBe(true);
    expect(await narrow.page.getByRole('link', { name: 'Queue' }).isVisible()).toBe(false);
    await toggle.click();
    await expect.poll(() => narrow.page.getByRole('link', { name: 'Queue' }).isVisible()).toBe(true);
    await narrow.page.getByRole('link', { name: 'Queue' }).click();
    await narrow.page.waitForURL('**/queue');
    await narrow.context.close();

    const wide = await openSession(browser, server.url, { width: 768, height: 800 });
    await wide.page.goto('/latest');
    await expect.poll(() => wide.page.getByRole('link', { name: 'Queue' }).isVisible()).toBe(true);
    expect(await wide.page.getByRole('button', { name: 'Open menu' }).isVisible()).toBe(false);
    await wide.context.close();
  });

  it('asks before signing out, and signs out only when confirmed', async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, freshId());
    await s.page.waitForURL((u) => u.pathname === '/');
    s.answers.push(false);
    await s.page.getByRole('button', { name: 'Sign Out' }).click();
    await expectDialog(s, 'Really want sign out?');
    expect(await storedState(s.page)).toMatchObject({ isLogin: true });
    s.answers.push(true);
    await s.page.getByRole('button', { name: 'Sign Out' }).click();
    await expect.poll(() => storedState(s.page)).toMatchObject({ isLogin: false, grade: -1 });
    await expect.poll(() => navLinks(s)).toContain('Sign In');
    expect(await s.context.cookies()).toEqual([]);
    await s.context.close();
  });

  it('forgets the last page on sign-out: the next person to sign in lands on /', async () => {
    const other = await openSession(browser, server.url);
    const nextPerson = freshId();
    await submitSignUp(other, nextPerson);
    await other.page.waitForURL((u) => u.pathname === '/');
    await other.context.close();

    const s = await openSession(browser, server.url);
    await s.page.goto('/my');
    await s.page.waitForURL('**/sign-in');
    await submitSignUp(s, freshId());
    await s.page.waitForURL('**/my');
    await s.page.getByRole('button', { name: 'Sign Out' }).click();
    await expect.poll(() => navLinks(s)).toContain('Sign In');
    await submitSignIn(s, nextPerson);
    await s.page.waitForURL((u) => u.pathname === '/');
    await expect.poll(() => navLinks(s)).toContain('Mypage');
    await s.context.close();
  });

  it('signs the client out when the server answers 401', async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, freshId());
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.context.clearCookies(); // the server no longer knows this browser
    // A background request (the bell's list) may meet the 401 first; opening a page that needs
    // the session meets it for sure.
    await s.page.goto('/my');
    await s.page.waitForURL('**/sign-in');
    expect(await storedState(s.page)).toMatchObject({ isLogin: false, grade: -1, last_page: '/my' });
    await expect.poll(() => navLinks(s)).toContain('Sign In');
    await s.context.close();
  });

  it('keeps the signed-in state and country across a reload', async () => {
    const s = await openSession(browser, server.url);
    const id = freshId();
    await submitSignUp(s, id);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.getByLabel('Store country').selectOption('DE');
    await s.page.goto('/my');
    await s.page.reload();
    await expect.poll(() => s.page.getByTestId('my-title').innerText()).toBe(id);
    expect(await s.page.getByLabel('Store country').inputValue()).toBe('DE');
    await s.context.close();
  });

  it('searches by the box: an empty keyword goes to /latest, others to /search/{country}/{keyword}', async () => {
    const s = await openSession(browser, server.url);
    await s.page.goto('/queue');
    const country = s.page.getByLabel('Store country');
    expect(await country.inputValue()).toBe('KR');
    expect(await country.locator('option').allInnerTexts()).toEqual([
      'US',
      'KR',
      'AU',
      'RU',
      'DE',
      'IN',
      'SE',
      'IL',
      'IT',
    ]);
    await s.page.getByRole('button', { name: 'Search' }).click();
    await s.page.waitForURL('**/latest');
    await s.page.getByLabel('Search keyword').fill('AC/DC live');
    await s.page.getByLabel('Search keyword').press('Enter');
    // Searching needs an account: the visitor signs up and comes back to the same search.
    const searchPath = `/search/KR/${encodeURIComponent('AC/DC live')}`;
    await expectDialog(s, 'Please Sign-in');
    await s.page.waitForURL('**/sign-in');
    expect(await storedState(s.page)).toMatchObject({ last_page: searchPath });
    await s.page.getByRole('button', { name: 'Sign up' }).click();
    await s.page.getByLabel('Id', { exact: true }).fill(freshId());
    await s.page.getByLabel('Password', { exact: true }).fill('long enough password');
    await s.page.getByLabel('Password confirm').fill('long enough password');
    await s.page.getByLabel('Password confirm').press('Enter');
    await s.page.waitForURL((u) => u.pathname === searchPath);
    await s.page.reload();
    expect(await s.page.getByLabel('Search keyword').inputValue()).toBe('AC/DC live');
    await s.context.close();
  });

  it('prefills the country and keyword from a search route, and follows a country change', async () => {
    const s = await openSession(browser, server.url);
    await submitSignUp(s, freshId());
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto(`/search/us/${encodeURIComponent('AC/DC')}`);
    const country = s.page.getByLabel('Store country');
    await expect.poll(() => country.inputValue()).toBe('US');
    expect(await s.page.getByLabel('Search keyword').inputValue()).toBe('AC/DC');
    await country.selectOption('DE');
    await s.page.waitForURL((u) => u.pathname === `/search/DE/${encodeURIComponent('AC/DC')}`);
    // In-app navigation: the search's store alerts (no store in this test) cannot block a page load.
    await s.page.getByRole('link', { name: 'Latest' }).click();
    await s.page.waitForURL('**/latest');
    await expect.poll(() => s.page.getByLabel('Store country').inputValue()).toBe('DE');
    await expect.poll(() => storedState(s.page)).toMatchObject({ country: 'DE' });
    await s.context.close();
  });
});

describe('external links without a configured address', () => {
  it('hides the chat link when the server has no CHAT_URL', async () => {
    const bare = await startServer(newDataDir(), { CHAT_URL: undefined });
    try {
      const s = await openSession(browser, bare.url);
      await s.page.goto('/latest');
      await expect.poll(() => navLinks(s)).toEqual(['Latest', 'Queue', 'Sign In', 'Sign Up', 'Channel']);
      await s.context.close();
    } finally {
      await bare.stop();
    }
  });
});
