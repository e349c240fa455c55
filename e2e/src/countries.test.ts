import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { agentClient, caller, createAgent, sessionCookie, type AgentClient } from './api-client.js';
import {
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
} from './harness.js';
import { fixturesDir } from './paths.js';

/**
 * One store version in every country (docs/architecture.md, Data), as a person sees it: a version
 * Done in KR shows Done to a US user, with the US store's name, without a second decrypt.
 */

const ADMIN = { id: 'operator', password: 'operator password' };
/** Talon as the US store recorded it (fixtures/itunes), and the same app in the Korean storefront. */
const talonUs = (
  JSON.parse(
    readFileSync(path.join(fixturesDir, 'itunes/mas_search_slack_mixed_software_mac.json'), 'utf8'),
  ) as { results: Array<Record<string, unknown>> }
).results.find((r) => r.trackId === 1492913323)!;
const US_NAME = 'Talon – Webhooks & More';
const KR_NAME = '탈론 – 웹훅';
const talonKr = { ...talonUs, trackName: KR_NAME, trackCensoredName: KR_NAME };
const TALON = { id: '1492913323', bundleId: 'com.peroxaan.Talon', appVerId: '838383001' };

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let agent: AgentClient;

beforeAll(async () => {
  store = await startItunesServer({ storefronts: { kr: [talonKr], us: [talonUs] } });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
  });
  browser = await launchBrowser();
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  agent = agentClient(server, (await createAgent(server, admin, 'e2e agent')).token);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const cardOf = (page: Page, name: string) => page.getByTestId('app-card').filter({ hasText: name });

describe('a version Done in one country', () => {
  it('shows Done to a US user, with the US name, as soon as KR is done, and answers their Decrypt without a second job', async () => {
    const s = await openSession(browser, server.url);
    await sessionCookie(server, 'us-user');
    await submitSignIn(s, 'us-user');
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.goto('/search/US/talon');
    const card = cardOf(s.page, US_NAME);
    await expect.poll(() => card.getByRole('button', { name: 'Decrypt' }).count()).toBe(1);

    // A KR user asks and an agent decrypts it, while the US page stays open.
    const kr = caller(server, await sessionCookie(server, 'kr-user'));
    await kr.json('GET', `/api/decrypt/KR/${TALON.id}`);
    const job = await agent.claim();
    expect(job).toMatchObject({ app_id: TALON.id });
    await agent.upload(job!, { bundleId: TALON.bundleId, version: '1.2', appVerId: TALON.appVerId });

    // The open US page follows without a reload: Done (its Decrypt gone; View is always there),
    // with the US store's name.
    await expect.poll(() => card.getByRole('button', { name: 'Decrypt' }).count()).toBe(0);
    await card.getByRole('button', { name: 'View' }).click();
    const modal = s.page.getByTestId('version-modal');
    const version = modal.getByTestId('version-card');
    try {
      await expect.poll(() => version.count()).toBe(1);
    } catch (err) {
      // What the person saw instead: the modal's text (a spinner, 'No list now.') and any alert.
      const shown = await modal.innerText().catch(() => '(no modal)');
      throw new Error(`${(err as Error).message}\nmodal: ${shown}\nalerts: ${JSON.stringify(s.dialogs)}`);
    }
    expect(await version.getByRole('button', { name: 'Download' }).count()).toBe(1);
    expect(await s.page.getByRole('dialog').locator('.modal-title').innerText()).toContain(US_NAME);
    await version.getByRole('button', { name: 'Close' }).click();

    // After a reload it is still Done, and the latest list shows it with the US name.
    await s.page.reload();
    await expect.poll(() => cardOf(s.page, US_NAME).getByRole('button', { name: 'View' }).count()).toBe(1);
    expect(await cardOf(s.page, US_NAME).getByRole('button', { name: 'Decrypt' }).count()).toBe(0);
    await s.page.getByLabel('Store country').selectOption('US');
    await s.page.goto('/latest');
    await expect.poll(() => cardOf(s.page, US_NAME).count()).toBe(1);
    expect(await cardOf(s.page, KR_NAME).count()).toBe(0);

    // Asked from the US, it is answered Done at once: nothing waits for an agent.
    const us = caller(server, await sessionCookie(server, 'us-asker'));
    expect(await us.json('GET', `/api/decrypt/US/${TALON.id}`)).toMatchObject({ status: 'Done' });
    expect(await us.json('GET', '/api/queue/0')).toEqual([]);
    expect(await agent.claim(['decrypt'], 0)).toBeNull();
    await s.context.close();
  });
});
