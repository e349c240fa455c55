import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentClient, createAgent, sessionCookie } from './api-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  settled,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

/**
 * The admin console, the test-mode billing pages and the pages a newcomer starts on, at 375 px (an
 * iPhone) and 1280 px: no accessibility violation of any impact (axe-core, injected as the page's
 * CSP allows: through the DevTools protocol, not a script tag), nothing scrolling sideways, every
 * console tab at its own address.
 */
const ADMIN = { id: 'operator', password: 'operator password' };
const PHONE = { name: '375 px iPhone', viewport: IPHONE_VIEWPORT, userAgent: IPHONE_USER_AGENT };
const DESKTOP = { name: '1280 px', viewport: { width: 1280, height: 900 }, userAgent: undefined };
const SCREENS = [PHONE, DESKTOP];
type Screen = (typeof SCREENS)[number];
const TABS = [
  ['Setup', '/admin'],
  ['Agents', '/admin/agents'],
  ['Queue', '/admin/queue'],
  ['Updates', '/admin/updates'],
  ['Devices', '/admin/devices'],
  ['Accounts', '/admin/accounts'],
  ['Audit log', '/admin/audit'],
] as const;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let server: RunningServer;
let browser: Browser;
let people = 0;

beforeAll(async () => {
  server = await startServer(newDataDir(), { ADMIN_ID: ADMIN.id, ADMIN_PASSWORD: ADMIN.password });
  browser = await launchBrowser();
  // Agents (one seen, with every column filled) and the audit entries their creation left.
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  const agent = agentClient(server, (await createAgent(server, admin, 'A rather long agent name')).token);
  await agent.claim(['decrypt'], 1);
  await createAgent(server, admin, 'second agent');
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function open(screen: Screen, who: 'admin' | 'user'): Promise<Session> {
  const s = await openSession(
    browser,
    server.url,
    screen.viewport,
    undefined,
    screen.userAgent ? { userAgent: screen.userAgent } : {},
  );
  if (who === 'admin') await submitSignIn(s, ADMIN.id, ADMIN.password);
  else {
    const id = `axeuser${++people}`;
    await sessionCookie(server, id);
    await submitSignIn(s, id);
  }
  await s.page.waitForURL((u) => u.pathname === '/');
  return s;
}

async function axeViolations(page: Page): Promise<string[]> {
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

const overflowsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);

describe.each(SCREENS)('at $name', (screen) => {
  it('shows every console tab at its own address, fitted to the screen, with no axe violation', async () => {
    const s = await open(screen, 'admin');
    const found: Record<string, string[]> = {};
    await s.page.goto('/admin');
    for (const [tab, path] of TABS) {
      await s.page.getByRole('tab', { name: tab }).click();
      await s.page.waitForURL((u) => u.pathname === path);
      await expect.poll(() => s.page.getByRole('tab', { name: tab, selected: true }).count()).toBe(1);
      await settled(s.page);
      expect(await overflowsSideways(s.page), `${path} scrolls sideways`).toBe(false);
      found[path] = await axeViolations(s.page);
    }
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));

    // Back returns to the tab before; an address opens its tab.
    await s.page.goBack();
    await s.page.waitForURL((u) => u.pathname === '/admin/accounts');
    await s.page.goto('/admin/agents');
    await expect.poll(() => s.page.getByRole('tab', { name: 'Agents', selected: true }).count()).toBe(1);

    // Every column of the agents table is on screen: Done, Failed and Revoke included.
    const row = s.page.getByTestId('agent-row').filter({ hasText: 'A rather long agent name' });
    await expect.poll(() => row.count()).toBe(1);
    const width = screen.viewport.width;
    for (const cell of await row.locator('td').all()) {
      const box = (await cell.boundingBox())!;
      expect(box.x + box.width, await cell.innerText()).toBeLessThanOrEqual(width);
    }
    for (const column of ['Done', 'Failed'])
      expect(await row.locator(`td[data-label="${column}"]`).isVisible(), column).toBe(true);
    expect(await row.getByRole('button', { name: /^Revoke/ }).isVisible()).toBe(true);

    // The checklist shows no raw ISO timestamp; each date has its absolute time on hover.
    await s.page.goto('/admin');
    const checklist = s.page.getByTestId('setup-checklist');
    await expect.poll(() => checklist.count()).toBe(1);
    expect(await checklist.innerText()).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    for (const time of await checklist.locator('time').all())
      expect(await time.getAttribute('title')).toBeTruthy();
    await s.context.close();
  });

  it('heads /admin for a person who is not an admin', async () => {
    const s = await open(screen, 'user');
    await s.page.goto('/admin');
    await expect.poll(() => s.page.getByRole('heading', { name: 'Admin', level: 1 }).count()).toBe(1);
    expect(await s.page.getByText('Do not have permission.').isVisible()).toBe(true);
    expect(await axeViolations(s.page)).toEqual([]);
    await s.context.close();
  });

  it('has no axe violation on the test-mode checkout and billing portal', async () => {
    const s = await open(screen, 'user');
    await s.page.goto('/my');
    await s.page
      .getByRole('button', { name: /\$3\.99 \/ month/ })
      .first()
      .click();
    await s.page.waitForURL('**/billing/dev-checkout/**');
    expect(await s.page.getByRole('main').count()).toBe(1);
    expect(await axeViolations(s.page)).toEqual([]);
    expect(await overflowsSideways(s.page)).toBe(false);
    await s.page.getByRole('button', { name: 'Pay' }).click();
    await s.page.waitForURL('**/my?checkout=success');
    await s.page.getByRole('button', { name: 'Billing Portal' }).click();
    await s.page.waitForURL('**/billing/dev-portal**');
    expect(await s.page.getByRole('main').count()).toBe(1);
    expect(await axeViolations(s.page)).toEqual([]);
    expect(await overflowsSideways(s.page)).toBe(false);
    await s.context.close();
  });

  it('has no axe violation on the pages a newcomer starts on', async () => {
    const s = await open(screen, 'user');
    const found: Record<string, string[]> = {};
    for (const path of [
      '/latest',
      '/queue',
      '/search/KR',
      '/search/XX/app',
      '/my',
      '/my?tab=device',
      '/udid',
    ]) {
      await s.page.goto(path);
      await settled(s.page);
      expect(await overflowsSideways(s.page), `${path} scrolls sideways`).toBe(false);
      found[path] = await axeViolations(s.page);
    }
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
    await s.context.close();
  });
});
