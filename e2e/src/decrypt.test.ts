import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import {
  agentClient,
  caller,
  createAgent,
  makePremium,
  sessionCookie,
  storeRecord,
  type AgentClient,
  type AgentJob,
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

const NOTE = 'When the decryption is complete, the normal version is visible.';
const ADMIN = { id: 'operator', password: 'operator password' };

let server: RunningServer;
let store: ItunesServer;
let browser: Browser;
let agent: AgentClient;

const READY = { id: 801, name: 'Ready App', bundleId: 'com.example.ready', appVerId: '8011' };
const LIVE = { id: 802, name: 'Live App', bundleId: 'com.example.live', appVerId: '8021' };
const OLD = { id: 803, name: 'Old App', bundleId: 'com.example.old' };
const SPARE = { id: 804, name: 'Spare App', bundleId: 'com.example.spare', appVerId: '8041' };

/** Claims until the job of this app comes; other jobs are failed out of the way. */
async function claimFor(appId: number, kinds: Array<AgentJob['kind']> = ['decrypt']) {
  for (let i = 0; i < 10; i++) {
    const job = await agent.claim(kinds);
    if (!job) break;
    if (job.app_id === String(appId)) return job;
    await agent.fail(job, 'not this test');
  }
  throw new Error(`no job for ${appId}`);
}

beforeAll(async () => {
  store = await startItunesServer({
    records: [
      storeRecord(READY.id, READY.name, READY.bundleId),
      storeRecord(LIVE.id, LIVE.name, LIVE.bundleId),
      storeRecord(OLD.id, OLD.name, OLD.bundleId, '2.0'),
      storeRecord(SPARE.id, SPARE.name, SPARE.bundleId),
    ],
  });
  server = await startServer(newDataDir(), {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
    VERSIONS_WAIT_SECONDS: '20',
  });
  browser = await launchBrowser();
  const admin = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  agent = agentClient(server, (await createAgent(server, admin, 'e2e agent')).token);

  // Ready App and Spare App are decrypted the real way: requested, claimed, uploaded and checked.
  const requester = caller(server, await sessionCookie(server, 'requester'));
  for (const app of [READY, SPARE]) {
    await requester.json('GET', `/api/decrypt/KR/${app.id}`);
    const job = await claimFor(app.id);
    await agent.upload(job, { bundleId: app.bundleId, version: '1.0', appVerId: app.appVerId });
  }
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await store?.close();
});

const cardOf = (page: Page, name: string) => page.getByTestId('app-card').filter({ hasText: name });
const modal = (page: Page) => page.getByRole('dialog');
const versionCards = (page: Page) => modal(page).getByTestId('version-card');
const buttonsOf = (locator: Locator) => locator.getByRole('button').allInnerTexts();

/** A person signed up over the API, then signed in through the form. */
async function signedInSession(id: string, options: { premium?: boolean; admin?: boolean } = {}) {
  const s = await openSession(browser, server.url);
  if (options.admin) {
    await submitSignIn(s, ADMIN.id, ADMIN.password);
  } else {
    const cookie = await sessionCookie(server, id);
    if (options.premium) await makePremium(server, cookie);
    await submitSignIn(s, id);
  }
  await s.page.waitForURL((u) => u.pathname === '/');
  return s;
}

async function search(s: Session, keyword: string) {
  await s.page.getByLabel('Search keyword').fill(keyword);
  await s.page.getByLabel('Search keyword').press('Enter');
  await expect.poll(() => cardOf(s.page, keyword).count()).toBe(1);
  return cardOf(s.page, keyword);
}

describe('the version modal', () => {
  it('is static, titled with the app and the note, and lists the versions with their buttons', async () => {
    const s = await signedInSession('viewer');
    await cardOf(s.page, READY.name).getByRole('button', { name: 'View' }).click();
    await expect.poll(() => versionCards(s.page).count()).toBe(1);
    const title = await modal(s.page).locator('.modal-title').innerText();
    expect(title.split('\n')).toEqual([READY.name, NOTE]);
    const card = versionCards(s.page).first();
    expect(await card.locator('.version-number').innerText()).toBe('1.0');
    expect(await buttonsOf(card)).toEqual(['Download', 'Close', 'Sign', 'Sign', 'Sign', 'Sign', 'Sign']);
    for (const mode of ['Normal', 'IAP', 'IGG', 'IAP+IGG', 'DUP']) {
      expect(await card.getByRole('group', { name: mode, exact: true }).getByRole('button').innerText()).toBe(
        'Sign',
      );
    }

    // Neither Escape nor a click beside the dialog closes it; Close does.
    await s.page.keyboard.press('Escape');
    await s.page.mouse.click(5, 450);
    await s.page.waitForTimeout(500);
    expect(await modal(s.page).isVisible()).toBe(true);
    await card.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => modal(s.page).count()).toBe(0);
    await s.context.close();
  });

  it("asks before each sign request, naming the mode and the app, and shows the server's sentence", async () => {
    const s = await signedInSession('signer');
    await cardOf(s.page, READY.name).getByRole('button', { name: 'View' }).click();
    const card = versionCards(s.page).first();
    // This server has no dylibs: the injection modes are disabled and say why, nobody confirms them.
    for (const [mode, why] of [
      ['IAP', 'Not offered on this server: it has no IAP dylibs.'],
      ['IGG', 'Not offered on this server: it has no IGG dylibs.'],
      ['IAP+IGG', 'Not offered on this server: it needs both the IAP and the IGG dylibs.'],
    ] as const) {
      const group = card.getByRole('group', { name: mode, exact: true });
      await expect.poll(() => group.getByRole('button').isDisabled()).toBe(true);
      expect(await group.innerText()).toContain(why);
    }
    s.answers.push(false);
    await card.getByRole('group', { name: 'DUP', exact: true }).getByRole('button').click();
    // The question, then what the copy loses of the app's capabilities (the sample app claims push and more).
    const firstLines = () => s.dialogs.map((d) => d.split('\n')[0]);
    await expect.poll(firstLines).toEqual([`Really want request sign (DUP) ${READY.name}`]);
    // Nothing to sign for without a Registered device: the server's sentence is shown as is, and
    // the button is back to Sign.
    const normal = card.getByRole('group', { name: 'Normal' }).getByRole('button');
    await normal.click();
    await expect.poll(() => firstLines().includes(`Really want request sign ${READY.name}`)).toBe(true);
    await expectDialog(s, 'Register a device first on My Page.');
    await expect.poll(() => normal.innerText()).toBe('Sign');
    await s.context.close();
  });

  it('downloads in a new tab, or on the same page after asking when the popup is blocked', async () => {
    const s = await signedInSession('downloader');
    await cardOf(s.page, READY.name).getByRole('button', { name: 'View' }).click();
    const download = versionCards(s.page).first().getByRole('button', { name: 'Download' });

    // The new tab is there before the URL is known: listen for its download as soon as it opens.
    const inTab = s.context
      .waitForEvent('page')
      .then((tab) => tab.waitForEvent('download').then((file) => ({ tab, file })));
    await download.click();
    const { tab, file } = await inTab;
    expect(file.suggestedFilename()).toBe(`${READY.name}_1.0.ipa`);
    await tab.close();

    await s.page.evaluate(() => {
      window.open = () => null;
    });
    const here = s.page.waitForEvent('download');
    await download.click();
    await expectDialog(s, 'Perhaps the popup is blocked. Open on current page?');
    expect((await here).suggestedFilename()).toBe(`${READY.name}_1.0.ipa`);
    expect(s.context.pages()).toHaveLength(1);
    expect(await modal(s.page).isVisible()).toBe(true);
    await s.context.close();
  });

  it('lets an admin delete a version after confirming; a failed delete says so and keeps it', async () => {
    const s = await signedInSession(ADMIN.id, { admin: true });
    await cardOf(s.page, SPARE.name).getByRole('button', { name: 'View' }).click();
    const card = versionCards(s.page).first();
    await expect
      .poll(() => buttonsOf(card))
      .toEqual(['Download', 'Delete', 'Close', 'Sign', 'Sign', 'Sign', 'Sign', 'Sign']);

    // The server failing once (a proxy's 503 with no sentence).
    await s.page.route('**/api/app/**', (route) => route.fulfill({ status: 503, body: '' }), { times: 1 });
    await card.getByRole('button', { name: 'Delete' }).click();
    await expectDialog(s, `Really want delete '${SPARE.name}'?`);
    await expectDialog(s, 'Please retry later.');
    expect(await versionCards(s.page).count()).toBe(1);

    await card.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => versionCards(s.page).count()).toBe(0);
    await modal(s.page).getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => cardOf(s.page, SPARE.name).count()).toBe(0);
    await s.context.close();
  });
});

describe('decrypt requests', () => {
  it('confirms twice for a free user, then follows the agent on screen without a reload', async () => {
    const s = await signedInSession('watcher');
    const card = await search(s, LIVE.name);
    await card.getByRole('button', { name: 'Decrypt' }).click();
    await expectDialog(s, 'Versions that are too old or certain apps may not work.');
    await expectDialog(
      s,
      'Free users take a long time to decrypt. Service subscription is available on My Page.',
    );
    await expect.poll(() => buttonsOf(card)).toEqual(['View', 'Enqueued...']);
    // The same page, never reloaded: a reload would drop this mark.
    await s.page.evaluate(() => Object.assign(window, { stayedOnPage: true }));

    // 'Enqueued...' offers the premium queue; a free user is told why not, and asked nothing.
    await card.getByRole('button', { name: 'Enqueued...' }).click();
    await expectDialog(s, 'Need decrypt premium.');
    expect(s.dialogs).not.toContain('Move to the premium queue?');

    await card.getByRole('button', { name: 'View' }).click();
    const version = versionCards(s.page).first();
    await expect.poll(() => buttonsOf(version)).toEqual(['Enqueued...', 'Close']);

    const job = await claimFor(LIVE.id);
    await expect.poll(() => buttonsOf(version)).toEqual(['Downloading...', 'Close']);
    await agent.heartbeat(job, { status: 'Process', progress: 60 });
    await expect.poll(() => buttonsOf(version)).toEqual(['Processing...', 'Close']);
    expect(await version.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('60');
    await agent.upload(job, { bundleId: LIVE.bundleId, version: '1.0', appVerId: LIVE.appVerId });
    await expect
      .poll(() => buttonsOf(version))
      .toEqual(['Download', 'Close', 'Sign', 'Sign', 'Sign', 'Sign', 'Sign']);

    await version.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => buttonsOf(card)).toEqual(['View', 'Downgrade']);
    await s.page.getByRole('link', { name: 'Latest' }).click();
    await expect.poll(() => cardOf(s.page, LIVE.name).count()).toBe(1);
    expect(await s.page.evaluate(() => (window as unknown as { stayedOnPage?: boolean }).stayedOnPage)).toBe(
      true,
    );
    await s.context.close();
  });

  it("downgrades for a premium user: the store's versions, each offered for decryption", async () => {
    const s = await signedInSession('premium', { premium: true });
    const card = await search(s, OLD.name);
    await card.getByRole('button', { name: 'Downgrade' }).click();
    await expect.poll(() => modal(s.page).getByRole('status', { name: 'Loading versions' }).count()).toBe(1);

    // The modal waits on an agent's answer for the store's version history.
    const job = await claimFor(OLD.id, ['versions']);
    await agent.versions(job, [
      { app_ver_id: 8032, version: '2.0' },
      { app_ver_id: 8031, version: '1.0' },
    ]);
    await expect
      .poll(() => versionCards(s.page).locator('.version-number').allInnerTexts())
      .toEqual(['2.0', '1.0']);
    expect(await modal(s.page).locator('.modal-title').innerText()).toBe(`${OLD.name}\n${NOTE}`);
    const older = versionCards(s.page).nth(1);
    expect(await buttonsOf(older)).toEqual(['Decrypt', 'Close']);

    await older.getByRole('button', { name: 'Decrypt' }).click();
    await expectDialog(s, 'Versions that are too old or certain apps may not work.');
    await expect.poll(() => buttonsOf(older)).toEqual(['Enqueued...', 'Close']);
    // A premium request is in the premium queue already: the move is not offered.
    expect(await older.getByRole('button', { name: 'Enqueued...' }).isDisabled()).toBe(true);
    // Premium needs no free-user warning.
    await s.page.waitForTimeout(300);
    expect(s.dialogs).toEqual(['Versions that are too old or certain apps may not work.']);
    const queued = await caller(server, '').json<Array<{ app_ver_id: string | null; premium: boolean }>>(
      'GET',
      '/api/queue/0',
    );
    expect(queued).toContainEqual(expect.objectContaining({ app_ver_id: '8031', premium: true }));
    await s.context.close();
  });
});
