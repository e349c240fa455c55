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
} from './api-client.js';
import {
  expectDialog,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

const ADMIN = { id: 'operator', password: 'operator password' };
const STUCK = { id: 901, name: 'Stuck App' };
const INTERRUPTED = { id: 902, name: 'Interrupted App' };

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let worker: AgentClient;

beforeAll(async () => {
  store = await startItunesServer({
    records: [
      storeRecord(STUCK.id, STUCK.name, 'com.example.stuck'),
      storeRecord(INTERRUPTED.id, INTERRUPTED.name, 'com.example.interrupted'),
    ],
  });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
  });
  browser = await launchBrowser();
  // A request whose first attempt failed, and one whose agent stopped and handed it back: the
  // queue shows their failed attempts, lost leases and reasons.
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  worker = agentClient(server, (await createAgent(server, admin, 'worker')).token);
  const requester = caller(server, await sessionCookie(server, 'requester'));
  await requester.json('GET', `/api/decrypt/KR/${STUCK.id}`);
  await requester.json('GET', `/api/decrypt/KR/${INTERRUPTED.id}`);
  const [stuck, interrupted] = [(await worker.claim())!, (await worker.claim())!];
  await worker.fail(stuck, 'The device went offline.');
  await worker.fail(interrupted, 'The agent was stopped before it finished the job.', { stopped: true });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

async function adminSession(viewport?: { width: number; height: number }) {
  const s = await openSession(browser, server.url, viewport);
  await submitSignIn(s, ADMIN.id, ADMIN.password);
  await s.page.waitForURL((u) => u.pathname === '/');
  return s;
}

const rows = (page: Page, testId: string) => page.getByTestId(testId);
const cellsOf = (page: Page, testId: string, name: string) =>
  rows(page, testId).filter({ hasText: name }).first().getByRole('cell').allInnerTexts();
const openTab = (s: Session, name: string) => s.page.getByRole('tab', { name }).click();

describe('the admin console', () => {
  it('creates an agent whose token is shown once, and revokes it', async () => {
    const s = await adminSession();
    await s.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await s.page.getByRole('link', { name: 'Admin' }).click();
    await s.page.waitForURL('**/admin');
    // The console opens on the setup checklist; the agents are the next tab.
    await openTab(s, 'Agents');
    await expect
      .poll(() => cellsOf(s.page, 'agent-row', 'worker'))
      .toEqual(expect.arrayContaining(['worker', '-', '0', '1']));

    await s.page.getByLabel('Agent name').fill('mac mini');
    await s.page.getByRole('button', { name: 'Create agent' }).click();
    const shown = s.page.getByTestId('new-agent-token');
    const token = await shown.locator('.agent-token').innerText();
    expect(token).toMatch(/^\S{40,}$/);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => shown.getByRole('status').innerText()).toBe('Copied.');
    expect(await s.page.evaluate(() => navigator.clipboard.readText())).toBe(token);

    // The token works for the agent protocol; the console never shows it again.
    const made = agentClient(server, token);
    expect(await made.claim(['versions'], 0)).toBeNull();
    await s.page.reload();
    await openTab(s, 'Agents');
    await expect
      .poll(() => cellsOf(s.page, 'agent-row', 'mac mini'))
      .toEqual(expect.arrayContaining(['mac mini', '-', '0', '0']));
    expect(await s.page.getByTestId('new-agent-token').count()).toBe(0);
    expect(await s.page.locator('body').innerText()).not.toContain(token);

    await s.page.getByRole('button', { name: 'Revoke mac mini' }).click();
    await expectDialog(s, "Revoke agent 'mac mini'? Its token stops working at once.");
    await expect.poll(() => rows(s.page, 'agent-row').filter({ hasText: 'mac mini' }).count()).toBe(0);
    expect((await made.call('POST', '/api/agent/claim', {})).status).toBe(401);

    await openTab(s, 'Audit log');
    await expect
      .poll(() => rows(s.page, 'audit-row').allInnerTexts())
      .toEqual(
        expect.arrayContaining([
          expect.stringContaining('revoke-agent'),
          expect.stringContaining('create-agent'),
        ]),
      );
    await s.context.close();
  });

  it('fits a 375 px screen, its tables scrolling inside the page', async () => {
    const s = await adminSession({ width: 375, height: 800 });
    await s.page.goto('/admin');
    for (const tab of ['Setup', 'Agents', 'Queue', 'Devices', 'Audit log']) {
      await openTab(s, tab);
      await expect
        .poll(() => s.page.locator('.tab-pane.active table, .tab-pane.active p').count())
        .toBeGreaterThan(0);
      expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    }
    // The queue's actions are on screen, not at the far end of the scrolled table.
    await openTab(s, 'Queue');
    const retry = await s.page.getByRole('button', { name: `Retry ${STUCK.name}` }).boundingBox();
    expect(retry!.x + retry!.width).toBeLessThanOrEqual(375);
    await s.context.close();
  });

  it('shows the queue with attempts, lost leases and last reason, retries and deletes an entry', async () => {
    const s = await adminSession();
    await s.page.goto('/admin');
    await openTab(s, 'Queue');
    await expect
      .poll(() => cellsOf(s.page, 'queue-row', STUCK.name))
      .toEqual(expect.arrayContaining(['Pending', '1', 'The device went offline.']));
    // A lost lease is not a failed attempt, and is said as such.
    await expect
      .poll(() => cellsOf(s.page, 'queue-row', INTERRUPTED.name))
      .toEqual(
        expect.arrayContaining([
          'Pending',
          '0\n1 lost lease',
          'The agent was stopped before it finished the job (lost lease 1 of 10).',
        ]),
      );
    await s.page.getByRole('button', { name: `Retry ${STUCK.name}` }).click();
    await expect
      .poll(() => cellsOf(s.page, 'queue-row', STUCK.name))
      .toEqual(expect.arrayContaining(['Pending', '0', '-']));

    s.answers.push(true, false); // delete, but do not blacklist
    await s.page.getByRole('button', { name: `Delete ${STUCK.name}` }).click();
    await expectDialog(s, `Really want delete '${STUCK.name}' in queue?`);
    await expectDialog(s, `Add to black list '${STUCK.name}'?`);
    await expect.poll(() => rows(s.page, 'queue-row').filter({ hasText: STUCK.name }).count()).toBe(0);
    await openTab(s, 'Audit log');
    await expect.poll(() => rows(s.page, 'audit-row').first().innerText()).toContain('delete-queue');
    await s.context.close();
  });

  it('is for admins only: no link, and the page says so', async () => {
    const s = await openSession(browser, server.url);
    await sessionCookie(server, 'someone');
    await submitSignIn(s, 'someone');
    await s.page.waitForURL((u) => u.pathname === '/');
    expect(await s.page.locator('#main-menu .nav-link').allInnerTexts()).not.toContain('Admin');
    await s.page.goto('/admin');
    await expect.poll(() => s.page.getByText('Do not have permission.').count()).toBe(1);
    expect(await s.page.getByTestId('agents-table').count()).toBe(0);
    await s.context.close();
  });
});
