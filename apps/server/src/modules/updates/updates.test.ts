import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppUpdate, UpdatesOverview } from '@sideport/contracts';
import { parsePlist, type PlistObject } from '@sideport/ipa';
import { startItunesServer, type ItunesServer } from '../../dev/itunes-server.js';
import { buildAgentBundle, startAgentProcess, until, type AgentProcess } from '../../test/agent-process.js';
import { buildIpa, makeAgent, makePremium, signedInAdmin, storeApp } from '../../test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import { databaseKinds, signedInUser, WEB_CLIENT } from '../../test/harness.js';
import { startLiveServer, type LiveServer } from '../../test/live-server.js';

const APP_ID = 7300;
const BUNDLE_ID = 'com.example.updateme';
const V1 = { appVerId: 873000001, version: '1.0' };
const V2 = { appVerId: 873000002, version: '2.0' };

/**
 * Updates that come to the user (modules/updates): the store double's record of an installed app
 * changes version; one store call finds it for every user; 'Update' asks a real agent for the new
 * version, signs it in the same mode with the same bundle id and team, and offers Install; the
 * automatic updates of premium users do the same unasked, under the operator's daily cap.
 */
describe.each(databaseKinds)('updates of installed apps on %s', (kind) => {
  let store: ItunesServer;
  let live: LiveServer;
  let work: string;
  let agent: AgentProcess | undefined;
  const record = storeApp(APP_ID, BUNDLE_ID, { version: V1.version });
  const users: Record<string, string> = {};
  let admin: string;
  let seq = 0;

  const get = (url: string, cookie: string) => live.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const send = (method: 'POST' | 'PUT', url: string, cookie: string, payload?: object) =>
    live.app.inject({ method, url, headers: { cookie, ...WEB_CLIENT }, ...(payload ? { payload } : {}) });
  const updatesOf = async (cookie: string) => {
    const res = await get('/api/updates', cookie);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as AppUpdate[];
  };
  const lookups = () => store.requests.filter((u) => u.pathname === '/lookup');

  /** A user with one Registered device and v1 signed in mode 0 for it. */
  async function installer(name: string) {
    const id = `${name}_${kind}`;
    const cookie = await signedInUser(live, id);
    const udid = `00008110-00000000ABCD${String(++seq).padStart(4, '0')}`;
    await enrollDevice(live, cookie, { UDID: udid, PRODUCT: 'iPhone15,2' });
    await payForDevice(live, cookie, 0);
    await until(`${name}'s device to be Registered`, async () =>
      (await deviceInfo(live, cookie))[0]?.status === 'Registered' ? true : undefined,
    );
    const signed = await send('PUT', `/api/sign/${APP_ID}/${V1.appVerId}`, cookie, { type: 0 });
    expect(signed.statusCode, signed.body).toBe(200);
    await until(`${name}'s sign of v1`, async () => {
      const res = await get(`/api/check/sign/${APP_ID}/${V1.appVerId}/0`, cookie);
      return res.statusCode === 200 ? true : undefined;
    });
    users[name] = cookie;
    return { id, cookie, udid };
  }

  /** The bundle id the OTA manifest of the caller's artifact names (what iOS matches an installed app by). */
  async function manifestBundleId(cookie: string, appVerId: number) {
    const install = await get(`/api/install/${APP_ID}/${appVerId}/0`, cookie);
    expect(install.statusCode, install.body).toBe(200);
    const link = (install.json() as { url: string }).url;
    const manifestUrl = new URL(decodeURIComponent(link.split('&url=')[1]!));
    const manifest = await live.app.inject({ url: `${manifestUrl.pathname}${manifestUrl.search}` });
    const item = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items[0]!;
    return (item.metadata as PlistObject)['bundle-identifier'];
  }
  const udidsOf = async (cookie: string, appVerId: number) =>
    ((await get(`/api/check/sign/${APP_ID}/${appVerId}/0`, cookie)).json() as { udids: string[] }).udids;

  beforeAll(async () => {
    store = await startItunesServer({ records: [record] });
    work = mkdtempSync(path.join(tmpdir(), 'sideport-updates-'));
    live = await startLiveServer(kind, {
      ITUNES_BASE_URL: store.url,
      SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      UPDATE_CHECK_MINUTES: '60',
      AUTO_UPDATE_DAILY_CAP: '1',
      LIST_CACHE_MS: '0',
    });
    admin = await signedInAdmin(live, `updates_admin_${kind}`);
    const v1 = await buildIpa({ bundleId: BUNDLE_ID, version: V1.version, appVerId: String(V1.appVerId) });
    await live.services.jobs.importIpa(v1, { country: 'KR', appId: APP_ID });
    await Promise.all(['alice', 'bob', 'carol', 'dave'].map((name) => installer(name)));
  });
  afterAll(async () => {
    await agent?.stop('SIGKILL');
    await live?.close();
    await store?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('finds a new store version with one store call for all its users, and lists it on each My page', async () => {
    expect(await updatesOf(users.alice!)).toEqual([]);
    record.version = V2.version;
    const before = lookups().length;
    const pass = await live.services.updates.runPass();
    expect(pass).toMatchObject({
      asked: 1,
      calls: 1,
      changed: [{ country: 'KR', appId: APP_ID }],
      automatic: 0,
    });
    const calls = lookups().slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.searchParams.get('id')).toBe(String(APP_ID));
    expect(calls[0]!.searchParams.get('country')).toBe('kr');

    for (const name of ['alice', 'bob']) {
      const [entry, ...rest] = await updatesOf(users[name]!);
      expect(rest).toEqual([]);
      expect(entry).toMatchObject({
        app_id: String(APP_ID),
        country: 'KR',
        bundle_id: BUNDLE_ID,
        installed_version: '1.0',
        installed_app_ver_id: String(V1.appVerId),
        store_version: '2.0',
        sign_type: 0,
        state: 'Available',
        app_ver_id: null,
        automatic: false,
        in_place: true,
        reason: null,
      });
      expect(entry!.udids).toHaveLength(1);
    }
    // Within the interval, a second pass asks the store nothing.
    const again = await live.services.updates.runPass();
    expect(again).toMatchObject({ asked: 0, calls: 0 });
    expect(lookups().length).toBe(before + 1);
    // The app's pages show the store's new version at once.
    const versions = await get(`/api/version/KR/${APP_ID}`, users.alice!);
    expect(versions.statusCode, versions.body).toBe(200);

    const overview = await get('/api/admin/updates', admin);
    expect(overview.json()).toMatchObject({
      waiting: 4,
      running: 0,
      automatic_today: 0,
      automatic_daily_cap: 1,
      tracked_apps: 1,
    } satisfies Partial<UpdatesOverview>);
  });

  it("'Update' asks a real agent for the new version, signs it in the same mode with the same bundle id and team, and offers Install", async () => {
    const v2 = await buildIpa({ bundleId: BUNDLE_ID, version: V2.version, appVerId: String(V2.appVerId) });
    const token = (await makeAgent(live, admin)).token;
    const script = path.join(work, 'agent.sh');
    writeFileSync(
      script,
      [
        `echo "app_ver_id ${V2.appVerId}"`,
        `echo "version ${V2.version}"`,
        `cp "${v2}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    agent = startAgentProcess({
      bundle: buildAgentBundle(),
      server: live.url,
      token,
      command: `sh ${script}`,
      workDir: path.join(work, 'agent'),
    });

    const started = await send('POST', `/api/updates/${APP_ID}/0`, users.alice!);
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json()).toMatchObject({ state: 'Decrypting', store_version: '2.0' });
    // A second click joins the update under way.
    const twice = await send('POST', `/api/updates/${APP_ID}/0`, users.alice!);
    expect(twice.json()).toMatchObject({ state: expect.stringMatching(/^(Decrypting|Signing|Ready)$/) });

    const ready = await until(
      "alice's update to be Ready",
      async () => (await updatesOf(users.alice!)).find((e) => e.state === 'Ready'),
      120_000,
      () => agent!.output(),
    );
    expect(ready).toMatchObject({
      app_id: String(APP_ID),
      installed_version: '1.0',
      store_version: '2.0',
      app_ver_id: String(V2.appVerId),
      sign_type: 0,
      in_place: true,
      reason: null,
    });
    // Signed like the installed artifact: the same mode, bundle id and devices (in_place: the same team).
    expect(await udidsOf(users.alice!, V2.appVerId)).toEqual(await udidsOf(users.alice!, V1.appVerId));
    expect(await manifestBundleId(users.alice!, V1.appVerId)).toBe(BUNDLE_ID);
    // Install is offered; once its link was fetched the update leaves the list.
    expect(await manifestBundleId(users.alice!, V2.appVerId)).toBe(BUNDLE_ID);
    expect(await updatesOf(users.alice!)).toEqual([]);
    // Bob's update was found too, and waits for his click.
    expect(await updatesOf(users.bob!)).toMatchObject([{ state: 'Available', store_version: '2.0' }]);
    // An update asked again of the updated app answers that it is current.
    const current = await send('POST', `/api/updates/${APP_ID}/0`, users.alice!);
    expect(current.statusCode).toBe(409);
    expect(current.body).toBe("This app is already at the store's version.");
  });

  it('runs automatic updates of premium users unasked, up to the daily cap, and refuses them to free users', async () => {
    const free = await send('PUT', '/api/updates/auto', users.bob!, { app_id: null, enabled: true });
    expect(free.statusCode).toBe(403);
    expect(free.body).toBe('Need decrypt premium.');
    expect((await get('/api/updates/auto', users.bob!)).json()).toEqual({ all: false, app_ids: [] });

    await makePremium(live, users.carol!);
    await makePremium(live, users.dave!);
    const on = await send('PUT', '/api/updates/auto', users.carol!, {
      app_id: String(APP_ID),
      enabled: true,
    });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toEqual({ all: false, app_ids: [String(APP_ID)] });
    const carolReady = await until("carol's automatic update to be Ready", async () =>
      (await updatesOf(users.carol!)).find((e) => e.state === 'Ready'),
    );
    expect(carolReady).toMatchObject({ automatic: true, app_ver_id: String(V2.appVerId), in_place: true });

    // The cap (1 a day) is spent: dave's automatic update waits for tomorrow.
    const daveOn = await send('PUT', '/api/updates/auto', users.dave!, { app_id: null, enabled: true });
    expect(daveOn.json()).toEqual({ all: true, app_ids: [] });
    await live.services.updates.runPass();
    expect(await updatesOf(users.dave!)).toMatchObject([{ state: 'Available', automatic: true }]);
    expect((await get('/api/admin/updates', admin)).json()).toMatchObject({
      waiting: 2,
      automatic_today: 1,
      automatic_daily_cap: 1,
      automatic_daily_cap_default: 1,
      automatic_daily_cap_is_set: false,
    });

    // The operator raises the cap in the admin console: dave's update starts at once, unasked.
    const raised = await send('PUT', '/api/admin/updates/cap', admin, { cap: 2 });
    expect(raised.statusCode, raised.body).toBe(200);
    expect(raised.json()).toMatchObject({
      automatic_daily_cap: 2,
      automatic_daily_cap_default: 1,
      automatic_daily_cap_is_set: true,
    });
    const daveReady = await until("dave's automatic update to be Ready", async () =>
      (await updatesOf(users.dave!)).find((e) => e.state === 'Ready'),
    );
    expect(daveReady).toMatchObject({ automatic: true, app_ver_id: String(V2.appVerId) });
    expect((await get('/api/admin/updates', admin)).json()).toMatchObject({
      waiting: 1,
      automatic_today: 2,
      automatic_daily_cap: 2,
    });
  });

  it("keeps the operator's cap, refuses a bad one with a sentence, and null gives AUTO_UPDATE_DAILY_CAP back", async () => {
    const capOf = async () =>
      ((await get('/api/admin/updates', admin)).json() as UpdatesOverview).automatic_daily_cap;
    const before = await capOf();
    for (const [cap, sentence] of [
      [-1, 'cap must be 0 (no automatic updates) or more.'],
      [100_001, 'cap must be at most 100000.'],
      [1.5, 'cap must be a whole number, or null for the configured default.'],
      ['ten', 'cap must be a whole number, or null for the configured default.'],
    ] as const) {
      const res = await send('PUT', '/api/admin/updates/cap', admin, { cap });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.body).toContain(sentence);
    }
    expect(await capOf()).toBe(before);

    // 0: no automatic update starts, and none is counted as started.
    const none = await send('PUT', '/api/admin/updates/cap', admin, { cap: 0 });
    expect(none.json()).toMatchObject({ automatic_daily_cap: 0, automatic_daily_cap_is_set: true });
    const today = (none.json() as UpdatesOverview).automatic_today;
    await live.services.updates.runPass();
    expect(((await get('/api/admin/updates', admin)).json() as UpdatesOverview).automatic_today).toBe(today);

    const reset = await send('PUT', '/api/admin/updates/cap', admin, { cap: null });
    expect(reset.json()).toMatchObject({ automatic_daily_cap: 1, automatic_daily_cap_is_set: false });
    const audit = (await get('/api/admin/audit/0', admin)).json() as Array<{ action: string }>;
    expect(audit.filter((e) => e.action === 'set-auto-update-cap')).toHaveLength(3);
  });

  it('refuses bad input and updates of what the caller did not install, changing nothing', async () => {
    const stranger = await signedInUser(live, `stranger_${kind}`);
    const none = await send('POST', `/api/updates/${APP_ID}/0`, stranger);
    expect(none.statusCode).toBe(404);
    expect(none.body).toBe('This installed app was not found.');
    const badType = await send('POST', `/api/updates/${APP_ID}/9`, users.bob!);
    expect(badType.statusCode).toBe(400);
    const badBody = await send('PUT', '/api/updates/auto', users.dave!, { app_id: 'x', enabled: 'yes' });
    expect(badBody.statusCode).toBe(400);
    expect((await get('/api/updates/auto', users.dave!)).json()).toEqual({ all: true, app_ids: [] });
  });
});
