import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AppEntry, DecryptAnswer, VersionEvent } from '@sideport/contracts';
import { startItunesServer, type ItunesServer } from '../../dev/itunes-server.js';
import { buildAgentBundle, startAgentProcess, until, type AgentProcess } from '../../test/agent-process.js';
import { buildIpa, makeAgent, makePremium, signedInAdmin } from '../../test/decrypt-support.js';
import { databaseKinds, fixturesDir, signedInUser, WEB_CLIENT } from '../../test/harness.js';
import { startLiveServer, type LiveServer } from '../../test/live-server.js';

/**
 * A store version id names one binary in every storefront (docs/architecture.md, Data): a version
 * Done for one country is Done for every country whose store lists the app, each listing with its
 * own store record, and is never decrypted twice. The store double answers each storefront from
 * its own records, as Apple's Lookup does (names and links differ; track and version ids do not).
 */

/** Talon as the US store recorded it (mas-cli's recorded search, fixtures/itunes). */
const talonUs = (
  JSON.parse(
    readFileSync(path.join(fixturesDir, 'itunes/mas_search_slack_mixed_software_mac.json'), 'utf8'),
  ) as { results: Array<Record<string, unknown>> }
).results.find((r) => r.trackId === 1492913323)!;
/** The same app in the Korean storefront: its own name, link and currency. */
const talonKr = {
  ...talonUs,
  trackName: '탈론 – 웹훅',
  trackCensoredName: '탈론 – 웹훅',
  trackViewUrl: 'https://apps.apple.com/kr/app/talon-webhooks-more/id1492913323?uo=4',
  currency: 'KRW',
};
const TALON = { appId: String(talonUs.trackId), bundleId: String(talonUs.bundleId), appVerId: '838383001' };
/** A second app in both storefronts, for the request that races the other country's. */
const race = (trackName: string) => ({
  ...talonUs,
  trackId: 1492913999,
  bundleId: 'com.example.race',
  trackName,
  trackCensoredName: trackName,
  version: '3.0',
});
const RACE = { appId: '1492913999', bundleId: 'com.example.race', appVerId: '838383002' };
/** A third, for the admin's refusal. */
const refusedApp = {
  ...talonUs,
  trackId: 1492913777,
  bundleId: 'com.example.refused',
  trackName: 'Refused Talon',
  version: '1.0',
};

/** A fourth, asked for in both countries, whose US request an admin deletes. */
const twiceAsked = {
  ...talonUs,
  trackId: 1492913555,
  bundleId: 'com.example.twice',
  trackName: 'Twice',
  version: '1.0',
};

/** A fifth, listed by the Korean store alone. */
const krOnly = {
  ...talonUs,
  trackId: 1492913444,
  bundleId: 'com.example.kronly',
  trackName: '한국 전용',
  version: '1.0',
};

/** A sixth, whose version a US premium user asks for while a KR request for the app is worked. */
const asked = {
  ...talonUs,
  trackId: 1492913333,
  bundleId: 'com.example.asked',
  trackName: 'Asked',
  version: '4.0',
};
const ASKED = { appId: '1492913333', appVerId: '838383006' };

describe.each(databaseKinds)('one store version in every country on %s', (kind) => {
  let store: ItunesServer;
  let live: LiveServer;
  let bundle: string;
  let work: string;
  let krUser: string;
  let usUser: string;
  let admin: string;
  let token: string;
  const running: AgentProcess[] = [];

  beforeAll(async () => {
    store = await startItunesServer({
      storefronts: {
        kr: [talonKr, race('레이스'), refusedApp, twiceAsked, krOnly, asked],
        us: [talonUs, race('Race'), refusedApp, twiceAsked, asked],
      },
    });
    bundle = buildAgentBundle();
    work = mkdtempSync(path.join(tmpdir(), 'sideport-global-versions-'));
    live = await startLiveServer(kind, {
      ITUNES_BASE_URL: store.url,
      LIST_CACHE_MS: '0',
      SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      FREE_DAILY_LIMIT: '5',
      DECRYPT_LEASE_SECONDS: '30',
    });
    admin = await signedInAdmin(live, `gv_admin_${kind}`);
    krUser = await signedInUser(live, `gv_kr_${kind}`);
    usUser = await signedInUser(live, `gv_us_${kind}`);
    token = (await makeAgent(live, admin)).token;
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((agent) => agent.stop('SIGKILL')));
  });
  afterAll(async () => {
    await live?.close();
    await store?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const get = (url: string, cookie: string) => live.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const ask = async (country: string, appId: string, cookie: string) => {
    const res = await get(`/api/decrypt/${country}/${appId}`, cookie);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as DecryptAnswer;
  };
  const versionsOf = async (country: string, appId: string, cookie: string) =>
    (await get(`/api/version/${country}/${appId}`, cookie)).json() as AppEntry[];
  const usedToday = async (id: string) => (await live.services.billing.dailyUsage(id)).used;

  /**
   * A real agent whose operator command hands over `ipa` as store version `appVerId`, and leaves
   * one line per run in `runs` (the number of times the agent worked this app).
   */
  function startAgent(name: string, ipa: string, appVerId: string, version: string) {
    const runs = path.join(work, `${name}.runs`);
    writeFileSync(runs, '');
    const script = path.join(work, `${name}.sh`);
    writeFileSync(
      script,
      [
        `echo "$SIDEPORT_COUNTRY" >> "${runs}"`,
        `echo "app_ver_id ${appVerId}"`,
        `echo "version ${version}"`,
        `cp "${ipa}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    const agent = startAgentProcess({
      bundle,
      server: live.url,
      token,
      command: `sh ${script}`,
      workDir: path.join(work, 'agent'),
    });
    running.push(agent);
    return { agent, runs: () => readFileSync(runs, 'utf8').split('\n').filter(Boolean) };
  }

  it('answers a US request for a version Done in KR at once, Done in every US listing with the US name, from the one stored IPA', async () => {
    const ipa = await buildIpa({ bundleId: TALON.bundleId, version: '1.2' });
    const { agent, runs } = startAgent('talon', ipa, TALON.appVerId, '1.2');
    expect(await ask('KR', TALON.appId, krUser)).toMatchObject({ status: 'Pending', app_ver_id: null });
    const krDone = await until(
      'Talon to be Done in KR',
      async () => (await versionsOf('KR', TALON.appId, krUser)).find((e) => e.status === 'Done'),
      25_000,
      () => agent.output(),
    );
    expect(krDone).toMatchObject({ app_ver_id: TALON.appVerId, country: 'KR', name: '탈론 – 웹훅' });

    const usBefore = await usedToday(`gv_us_${kind}`);
    const answer = await ask('US', TALON.appId, usUser);
    expect(answer).toMatchObject({
      status: 'Done',
      app_ver_id: TALON.appVerId,
      version: '1.2',
      message: 'This version is already decrypted.',
    });
    // Nothing was queued for it: the queue is empty and the agent worked the app once, for KR.
    expect((await get('/api/queue/0', usUser)).json()).toEqual([]);
    expect(runs()).toEqual(['kr']);
    // A request answered from a Done version did no work: it spends none of the daily limit.
    expect(await usedToday(`gv_us_${kind}`)).toBe(usBefore);

    // The US version list, card and latest list show it Done, with the US store's name.
    const usList = await versionsOf('US', TALON.appId, usUser);
    expect(usList).toEqual([
      expect.objectContaining({
        app_ver_id: TALON.appVerId,
        status: 'Done',
        country: 'US',
        name: 'Talon – Webhooks & More',
      }),
    ]);
    const cards = (await get('/api/search/us/talon', usUser)).json() as AppEntry[];
    expect(cards.find((e) => e.app_id === TALON.appId)).toMatchObject({
      status: 'Done',
      name: 'Talon – Webhooks & More',
    });
    const latestUs = (await get('/api/latest/0?country=US', usUser)).json() as AppEntry[];
    const latestKr = (await get('/api/latest/0?country=KR', usUser)).json() as AppEntry[];
    const talonIn = (list: AppEntry[]) => list.filter((e) => e.app_id === TALON.appId);
    expect(talonIn(latestUs)).toEqual([
      expect.objectContaining({ status: 'Done', country: 'US', name: 'Talon – Webhooks & More' }),
    ]);
    expect(talonIn(latestKr)).toEqual([
      expect.objectContaining({ status: 'Done', country: 'KR', name: '탈론 – 웹훅' }),
    ]);

    // The US user downloads the bytes the agent uploaded for KR.
    const link = await get(`/api/download/${TALON.appId}/${TALON.appVerId}`, usUser);
    expect(link.statusCode).toBe(200);
    const url = new URL((link.json() as { url: string }).url);
    const file = await fetch(`${live.url}${url.pathname}${url.search}`);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(readFileSync(ipa))).toBe(true);
    // One stored IPA for the version.
    const stored = readdirSync(path.join(live.dataDir, 'files', 'ipa', TALON.appId, TALON.appVerId));
    expect(stored).toHaveLength(1);
    expect(runs()).toEqual(['kr']);
  });

  it('ends a US request that the agent finds to be the version KR just finished Done for the US, and gives its count back', async () => {
    const ipa = await buildIpa({ bundleId: RACE.bundleId, version: '3.0' });
    const usEvents: VersionEvent[] = [];
    live.services.bus.subscribe((event) => {
      if (event.kind === 'live' && event.event.type === 'version' && event.event.country === 'US')
        usEvents.push(event.event);
    });
    // Both ask before any agent works: two app-level requests, one per country.
    expect(await ask('KR', RACE.appId, krUser)).toMatchObject({ status: 'Pending' });
    const usId = `gv_us_${kind}`;
    const before = await usedToday(usId);
    expect(await ask('US', RACE.appId, usUser)).toMatchObject({ status: 'Pending', joined: false });
    expect(await usedToday(usId)).toBe(before + 1);

    const { agent, runs } = startAgent('race', ipa, RACE.appVerId, '3.0');
    await until(
      'both requests to be worked',
      async () => (runs().length === 2 ? true : undefined),
      25_000,
      () => agent.output(),
    );
    // The US request ends as the one Done version (not beside it, and not gone).
    const usList = await until(
      'the US request to end Done',
      async () => {
        const list = await versionsOf('US', RACE.appId, usUser);
        return list.length === 1 && list[0]!.status === 'Done' ? list : undefined;
      },
      25_000,
      () => agent.output(),
    );
    expect(usList[0]).toMatchObject({ app_ver_id: RACE.appVerId, country: 'US', name: 'Race' });
    expect((await versionsOf('KR', RACE.appId, krUser))[0]).toMatchObject({ status: 'Done', name: '레이스' });
    // Open US pages heard it end Done (not vanish), and the count it spent came back.
    await until('the US event', async () =>
      usEvents.find((e) => e.app_id === RACE.appId && e.status === 'Done'),
    );
    expect(usEvents.find((e) => e.app_id === RACE.appId && e.status === 'Done')).toMatchObject({
      app_ver_id: RACE.appVerId,
      previous_app_ver_id: null,
    });
    expect(usEvents.some((e) => e.app_id === RACE.appId && e.status === 'Deleted')).toBe(false);
    expect(await usedToday(usId)).toBe(before);
    // The copy the US job uploaded is dropped: one stored IPA for the version.
    const storedDir = path.join(live.dataDir, 'files', 'ipa', RACE.appId, RACE.appVerId);
    await until('one stored IPA', async () => (readdirSync(storedDir).length === 1 ? true : undefined));
  });

  it("keeps an app an admin refused from one country's queue refused in every country", async () => {
    const id = String(refusedApp.trackId);
    expect(await ask('KR', id, krUser)).toMatchObject({ status: 'Pending' });
    await live.services.catalog.deleteQueued(`gv_admin_${kind}`, refusedApp.trackId, null, {
      blacklist: true,
    });
    const us = await get(`/api/decrypt/US/${id}`, usUser);
    expect(us.statusCode).toBe(403);
    expect(us.body).toBe('This app is on the black list and cannot be requested.');
    const card = (await get('/api/search/us/talon', usUser)).json() as AppEntry[];
    expect(card.find((e) => e.app_id === id)).toMatchObject({ status: 'Not' });
  });

  it("deletes one country's app-level request, and leaves the other country's waiting", async () => {
    const id = String(twiceAsked.trackId);
    expect(await ask('KR', id, krUser)).toMatchObject({ status: 'Pending' });
    expect(await ask('US', id, usUser)).toMatchObject({ status: 'Pending', joined: false });
    const deleted = await live.app.inject({
      method: 'DELETE',
      url: `/api/queue/${id}/0?country=us`,
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(deleted.statusCode, deleted.body).toBe(204);
    const queue = (await get('/api/queue/0', krUser)).json() as AppEntry[];
    expect(queue.filter((e) => e.app_id === id).map((e) => e.country)).toEqual(['KR']);
    expect((await versionsOf('US', id, usUser)).map((e) => e.status)).toEqual([]);
  });

  it('keeps a version Done in KR out of the US listings when the US store does not list the app', async () => {
    const id = String(krOnly.trackId);
    await live.services.jobs.importIpa(
      await buildIpa({ bundleId: krOnly.bundleId, version: '1.0', appVerId: '838383005' }),
      { country: 'KR', appId: krOnly.trackId },
    );
    expect((await versionsOf('KR', id, krUser))[0]).toMatchObject({ status: 'Done', name: '한국 전용' });
    for (const url of [`/api/version/US/${id}`, `/api/decrypt/US/${id}`]) {
      const res = await get(url, usUser);
      expect(res.statusCode).toBe(404);
      expect(res.body).toBe('This app was not found.');
    }
    // The latest list shows every Done version: this one with the record of the store that lists it.
    const latest = (await get('/api/latest/0?country=US', usUser)).json() as AppEntry[];
    expect(latest.find((e) => e.app_id === id)).toMatchObject({ country: 'KR', name: '한국 전용' });
  });

  it("answers a US premium user's request for a version with the KR result, and gives its count back", async () => {
    const agent = await makeAgent(live, admin, 'by hand');
    const premium = await signedInUser(live, `gv_premium_${kind}`);
    await makePremium(live, premium);
    // The KR request is taken by the agent before its version is known.
    expect(await ask('KR', ASKED.appId, krUser)).toMatchObject({ status: 'Pending', app_ver_id: null });
    // Requests earlier tests left waiting are failed out of the way.
    let job: { id: string; [k: string]: unknown } | null = null;
    for (let i = 0; i < 10 && job?.app_id !== ASKED.appId; i++) {
      if (job)
        await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, {
          reason: 'not this test',
          unsupported: true,
        });
      job = (await agent.claim({ kinds: ['decrypt'], wait_seconds: 10 })).job;
    }
    expect(job).toMatchObject({ app_id: ASKED.appId });
    // Meanwhile the US history lists the version, and the premium user asks for it.
    const history = live.app.inject({
      method: 'POST',
      url: `/api/version/US/${ASKED.appId}`,
      headers: { cookie: premium, ...WEB_CLIENT },
    });
    const { job: listing } = await agent.claim({ kinds: ['versions'], wait_seconds: 10 });
    expect(listing).toMatchObject({ kind: 'versions', country: 'us' });
    await agent.call('POST', `/api/agent/jobs/${listing!.id}/versions`, {
      versions: [{ app_ver_id: ASKED.appVerId, version: '4.0' }],
    });
    expect((await history).statusCode).toBe(200);
    const before = await usedToday(`gv_premium_${kind}`);
    expect(await ask('US', `${ASKED.appId}/${ASKED.appVerId}`, premium)).toMatchObject({
      status: 'Pending',
      app_ver_id: ASKED.appVerId,
      joined: false,
    });
    expect(await usedToday(`gv_premium_${kind}`)).toBe(before + 1);

    // The KR job turns out to be that version: it answers the US request, which did no work.
    const ipa = await buildIpa({ bundleId: asked.bundleId, version: '4.0' });
    const done = await agent.call(
      'PUT',
      `/api/agent/jobs/${job!.id}/ipa?app_ver_id=${ASKED.appVerId}`,
      readFileSync(ipa),
    );
    expect(done.statusCode, done.body).toBe(200);
    expect(await versionsOf('US', ASKED.appId, premium)).toEqual([
      expect.objectContaining({ app_ver_id: ASKED.appVerId, status: 'Done', name: 'Asked' }),
    ]);
    expect(await usedToday(`gv_premium_${kind}`)).toBe(before);
  });
});
