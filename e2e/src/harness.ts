import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
  type Request,
  type Route,
} from 'playwright-core';
import { inject } from 'vitest';
import { findChromium } from './browser.js';
import { repoRoot } from './paths.js';

export interface RunningServer {
  url: string;
  dataDir: string;
  /** Everything the server printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * A fresh data folder, its embedded database already migrated and empty (a copy of the one
 * global-setup.ts made): what a first start makes, without its seconds of initdb. Seed it (through
 * the server's own modules) before starting the server.
 */
export function newDataDir() {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-e2e-'));
  cpSync(inject('databaseTemplate'), path.join(dir, 'db'), { recursive: true });
  return dir;
}

/** The real server process (`node apps/server/dist/main.js`) on a free port. */
/** `env` overrides the defaults below; an undefined value leaves that variable unset. */
export async function startServer(
  dataDir: string,
  env: Record<string, string | undefined> = {},
): Promise<RunningServer> {
  const child: ChildProcess = spawn(process.execPath, [path.join(repoRoot, 'apps/server/dist/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      LIST_CACHE_MS: '0',
      // Tests never reach the internet: a closed local port unless a test brings its store server.
      ITUNES_BASE_URL: 'http://127.0.0.1:9',
      CHAT_URL: 'https://chat.example.org/sideport',
      CHANNEL_URL: 'https://t.example.org/sideport',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Sideport listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
  await waitForHealthy(url, () => output);
  return {
    url,
    dataDir,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        child.removeAllListeners('exit');
        child.on('exit', () => {
          rmSync(dataDir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Listening is not ready: /healthz answers 200 once the database is open and migrated. */
async function waitForHealthy(url: string, output: () => string, timeoutMs = 120_000) {
  const started = Date.now();
  for (;;) {
    const status = await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() - started > timeoutMs) throw new Error(`server not healthy (${status}):\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Chromium (see browser.ts for which), headless, with the flags this machine needs. */
export async function launchBrowser(): Promise<Browser> {
  const { executablePath, env } = await findChromium();
  return chromium.launch({
    executablePath,
    ...(Object.keys(env).length ? { env: { ...process.env, ...env } } : {}),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/** Safari on an iPhone 15 (iOS 17.5), as the site sees it: installs and enrollment work only there. */
export const IPHONE_USER_AGENT =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
/** An iPhone's screen in CSS pixels. */
export const IPHONE_VIEWPORT = { width: 375, height: 812 };

/** A 1x1 PNG: what the tests answer for the flag and icon hosts, which they never reach. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

export interface Session {
  context: BrowserContext;
  page: Page;
  /** Every dialog message, in order; confirm() answers come from `answers` (default: accept). */
  dialogs: string[];
  answers: boolean[];
}

/**
 * A fresh browser context (its own storage and cookies, or a copy of `storageState`'s) that records
 * and answers dialogs.
 */
export async function openSession(
  browser: Browser,
  baseURL: string,
  viewport = { width: 1280, height: 900 },
  storageState?: Awaited<ReturnType<BrowserContext['storageState']>>,
  options: { userAgent?: string } = {},
): Promise<Session> {
  const context = await browser.newContext({
    baseURL,
    viewport,
    ...(storageState && { storageState }),
    ...(options.userAgent && { userAgent: options.userAgent, isMobile: true, hasTouch: true }),
  });
  // Flags and icons come from public hosts; keep the tests offline and fast (a tiny image).
  await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) =>
    route.fulfill({ status: 200, contentType: 'image/png', body: TINY_PNG }),
  );
  const page = await context.newPage();
  trackRequests(page);
  const session: Session = { context, page, dialogs: [], answers: [] };
  page.on('dialog', (dialog) => {
    session.dialogs.push(dialog.message());
    const accept = dialog.type() === 'confirm' ? (session.answers.shift() ?? true) : true;
    void (accept ? dialog.accept() : dialog.dismiss());
  });
  return session;
}

/**
 * Makes a session's calls to the server look as iOS Safari before 16.4 sends them: no
 * Sec-Fetch-* headers at all, and an Origin only on methods other than GET and HEAD. Chromium
 * would add them back to a request it sends itself, so each call to the API or the test-mode
 * checkout is sent from here, with the page's other headers and its cookie. The live stream (a
 * safe GET that never ends) is left to Chromium. Returns the calls answered, as 'METHOD path status'.
 */
export async function sendAsBrowserWithoutFetchMetadata(s: Session, serverUrl: string): Promise<string[]> {
  const answered: string[] = [];
  const handler = async (route: Route) => {
    const request = route.request();
    const { pathname } = new URL(request.url());
    if (pathname === '/api/events') return route.continue();
    const keepsOrigin = request.method() !== 'GET' && request.method() !== 'HEAD';
    const headers = Object.fromEntries(
      Object.entries(request.headers()).filter(
        ([name]) => !name.startsWith('sec-fetch-') && (keepsOrigin || name !== 'origin'),
      ),
    );
    const response = await route.fetch({ headers, maxRedirects: 0 });
    answered.push(`${request.method()} ${pathname} ${response.status()}`);
    await route.fulfill({ response });
  };
  await s.context.route(`${serverUrl}/api/**`, handler);
  await s.context.route(`${serverUrl}/billing/**`, handler);
  return answered;
}

/** The requests each page has in flight, its live event stream aside, and when the last one ended. */
const inFlight = new WeakMap<Page, { requests: Set<Request>; quietSince: number }>();

function trackRequests(page: Page) {
  const state = { requests: new Set<Request>(), quietSince: Date.now() };
  inFlight.set(page, state);
  const done = (request: Request) => {
    if (state.requests.delete(request) && state.requests.size === 0) state.quietSince = Date.now();
  };
  page.on('request', (request) => {
    // An EventSource never finishes: it would keep the page busy for ever.
    if (request.resourceType() !== 'eventsource') state.requests.add(request);
  });
  page.on('requestfinished', done);
  page.on('requestfailed', done);
}

/**
 * Waits until the page has had no request in flight for `quietMs` (its live event stream aside),
 * so what a call brings is on screen. Playwright's 'networkidle' is not used: it waits on the
 * EventSource in some versions and can miss its moment for good (microsoft/playwright#42598).
 */
export async function settled(page: Page, quietMs = 500, timeoutMs = 30_000) {
  const state = inFlight.get(page);
  if (state === undefined) throw new Error('settled() needs a page opened with openSession()');
  const started = Date.now();
  while (state.requests.size > 0 || Date.now() - state.quietSince < quietMs) {
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `the page still has requests in flight after ${timeoutMs} ms: ${[...state.requests].map((r) => `${r.method()} ${r.url()}`).join(', ')}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until a dialog with this message has been shown. */
export async function expectDialog(session: Session, message: string, timeoutMs = 30_000) {
  const started = Date.now();
  while (!session.dialogs.includes(message)) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`no dialog "${message}"; saw ${JSON.stringify(session.dialogs)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const storedState = (page: Page) =>
  page.evaluate(
    () =>
      JSON.parse(localStorage.getItem('sideport') ?? 'null')?.state as Record<string, unknown> | undefined,
  );

export const TEST_PASSWORD = 'long enough password';

/** Fills and submits the sign-up form (Enter in the last field), as a person would. */
export async function submitSignUp(s: Session, id: string, password = TEST_PASSWORD) {
  await s.page.goto('/sign-up');
  await s.page.getByLabel('Id', { exact: true }).fill(id);
  await s.page.getByLabel('Password', { exact: true }).fill(password);
  await s.page.getByLabel('Password confirm').fill(password);
  await s.page.getByLabel('Password confirm').press('Enter');
}

/** Signs in through the form and waits for the landing page (/ when nothing asked for sign-in). */
export async function submitSignIn(s: Session, id: string, password = TEST_PASSWORD) {
  await s.page.goto('/sign-in');
  await s.page.getByLabel('Id', { exact: true }).fill(id);
  await s.page.getByLabel('Password').fill(password);
  await s.page.getByLabel('Password').press('Enter');
}

/** How many lines an element's text takes: the distinct tops of its line boxes. */
export const lineCount = (locator: Locator) =>
  locator.evaluate((el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
  });

/**
 * Records every label the button shows, as the page renders it: a sign of the small sample app
 * takes well under a second, too short to catch each step by polling.
 */
export async function recordLabels(page: Page, button: Locator) {
  await button.evaluate((el) => {
    const w = window as unknown as { signLabels: string[]; loadedOnce: boolean };
    w.signLabels = [el.textContent ?? ''];
    w.loadedOnce = true;
    const group = el.closest('[role="group"]')!;
    new MutationObserver(() => {
      const label = group.querySelector('button')?.textContent ?? '';
      if (w.signLabels.at(-1) !== label) w.signLabels.push(label);
    }).observe(group, { subtree: true, childList: true, characterData: true });
  });
  return {
    labels: () => page.evaluate(() => (window as unknown as { signLabels: string[] }).signLabels),
    /** Still the page the recording began in: nothing reloaded it. */
    isSamePage: () =>
      page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce === true),
  };
}
