import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  agentClient,
  caller,
  createAgent,
  sessionCookie,
  storeRecord,
  type AgentClient,
  type AgentJob,
} from './api-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

/**
 * The queue page left open while entries finish (docs/product.md, States): every entry it shows
 * follows its live events to the end, whatever moment it finishes at. The server runs with its
 * default LIST_CACHE_MS, as a newcomer's does: a list answer reused for a second is one way a
 * refetch used to take a finished entry back to 'Processing...'.
 */
const ADMIN = { id: 'operator', password: 'operator password' };
const COUNT = 20;
const APPS = Array.from({ length: COUNT }, (_, i) => ({
  id: 950 + i,
  name: `Queue App ${String(i).padStart(2, '0')}`,
  bundleId: `com.example.queue${i}`,
}));
/** How long a finished entry may still show as working: its event, not a reload, must end it. */
const FOLLOW_MS = 10_000;

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let agent: AgentClient;

beforeAll(async () => {
  store = await startItunesServer({ records: APPS.map((a) => storeRecord(a.id, a.name, a.bundleId)) });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
    LIST_CACHE_MS: undefined,
    FREE_DAILY_LIMIT: String(COUNT * 2),
  });
  browser = await launchBrowser();
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  agent = agentClient(server, (await createAgent(server, admin, 'queue agent')).token);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const randomMs = (max: number) => Math.floor(Math.random() * max);

/** The queue cards' names with their button texts, as the page shows them now. */
const shownCards = (page: Page) =>
  page
    .getByTestId('app-card')
    .evaluateAll((cards) => cards.map((c) => (c as HTMLElement).innerText.replace(/\s+/g, ' ')));

async function queueSession(id: string, phone: boolean): Promise<Session> {
  const s = phone
    ? await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, { userAgent: IPHONE_USER_AGENT })
    : await openSession(browser, server.url);
  await sessionCookie(server, id);
  await submitSignIn(s, id);
  await s.page.waitForURL((u) => u.pathname === '/');
  await s.page.goto('/queue');
  return s;
}

/** One job: claimed, reported working with progress at random moments, then finished. */
async function work(job: AgentJob, finished: Map<string, number>) {
  const app = APPS.find((a) => String(a.id) === job.app_id)!;
  await pause(randomMs(1500));
  await agent.heartbeat(job, { status: 'Process', progress: 0 });
  for (let step = 0; step < 1 + randomMs(3); step++) {
    await pause(randomMs(700));
    await agent.heartbeat(job, { progress: 20 * (step + 1) });
  }
  await pause(randomMs(900));
  await agent.upload(job, { bundleId: app.bundleId, version: '1.0', appVerId: `${app.id}1` });
  finished.set(app.name, Date.now());
}

describe('the queue page, open while entries finish', () => {
  it('never shows a finished entry as working once its Done has had time to arrive (375 and 1280 px)', async () => {
    const pages = [await queueSession('watcher-phone', true), await queueSession('watcher-desk', false)];
    const requester = caller(server, await sessionCookie(server, 'requester'));
    for (const app of APPS) await requester.json('GET', `/api/decrypt/KR/${app.id}`);
    for (const s of pages) await expect.poll(async () => (await shownCards(s.page)).length).toBe(COUNT);

    const finished = new Map<string, number>();
    const stale: string[] = [];
    let watching = true;
    // Looks at both pages all along: an entry Done for FOLLOW_MS must be gone from the queue.
    const watcher = (async () => {
      while (watching) {
        for (const [i, s] of pages.entries()) {
          const cards = await shownCards(s.page);
          for (const [name, at] of finished) {
            const card = cards.find((c) => c.includes(name));
            if (card && Date.now() - at > FOLLOW_MS) stale.push(`${i ? 1280 : 375} px: ${card}`);
          }
        }
        await pause(250);
      }
    })();

    // Two agents' worth of jobs at once, each finishing at a random moment.
    const running: Array<Promise<void>> = [];
    for (let claimed = 0; claimed < COUNT;) {
      const job = await agent.claim(['decrypt']);
      if (!job) continue;
      claimed++;
      running.push(work(job, finished));
      if (running.length % 2 === 0) await pause(randomMs(400));
    }
    await Promise.all(running);
    expect(finished.size).toBe(COUNT);

    // Every page empties: the last entries' events, not a reload, take them off.
    for (const s of pages) {
      await expect.poll(() => shownCards(s.page), { timeout: FOLLOW_MS + 5000 }).toEqual([]);
      expect(await s.page.getByText('No list now.').isVisible()).toBe(true);
    }
    watching = false;
    await watcher;
    expect(stale).toEqual([]);
    for (const s of pages) await s.context.close();
  }, 300_000);
});
