import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PAGE_SIZE, appList } from '@sideport/contracts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditLog } from '../../db/schema/index.js';
import { startItunesServer, type ItunesServer } from '../../dev/itunes-server.js';
import {
  createTestApp,
  databaseKinds,
  fixturesDir,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../test/harness.js';
import * as q from './queries.js';

const itunesFixture = (name: string) => readFileSync(path.join(fixturesDir, 'itunes', name), 'utf8');
const facebook = JSON.parse(itunesFixture('fastlane_itunesLookup-284882215.json')).results[0] as Record<
  string,
  unknown
>;

/** Store records shaped like Apple's, derived from a real one (names in other scripts, odd fields). */
const derived = (trackId: number, changes: Record<string, unknown>) => ({ ...facebook, trackId, ...changes });

/** The same answer with every result listed twice (as a store answer gathered from two pages can be). */
function twice(body: string) {
  const parsed = JSON.parse(body) as { results: unknown[] };
  return JSON.stringify({
    resultCount: parsed.results.length * 2,
    results: [...parsed.results, ...parsed.results],
  });
}

describe.each(databaseKinds)('catalogue on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let cookie: string;
  let adminCookie: string;
  let now = new Date('2026-11-01T00:00:00Z');

  beforeAll(async () => {
    store = await startItunesServer({
      answers: new Map([
        ['search:slack', itunesFixture('mas_search_slack_mixed_software_mac.json')],
        ['search:tweetbot', itunesFixture('mas_search_tweetbot.json')],
        ['search:nothing at all', itunesFixture('mas_search_nonexistent_resultCount0.json')],
        ['search:facebook', itunesFixture('fastlane_itunesLookup-284882215.json')],
        // The store sometimes lists one app twice in an answer (seen with several recorded answers served at once).
        [
          'search:listed twice',
          JSON.stringify({
            resultCount: 3,
            results: [facebook, derived(1003, { trackName: 'Rock Band' }), facebook],
          }),
        ],
        ['search:twice', twice(itunesFixture('fastlane_itunesLookup-284882215.json'))],
      ]),
      records: [
        derived(1001, {
          trackName: '카카오톡 KakaoTalk',
          bundleId: 'com.iwilab.KakaoTalk',
          averageUserRating: undefined,
          userRatingCount: undefined,
        }),
        derived(1002, { trackName: 'AC/DC Live 🎸', bundleId: 'com.example.acdc', fileSizeBytes: undefined }),
        derived(1003, { trackName: 'Rock Band', bundleId: 'com.example.rockband' }),
      ],
    });
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        ITUNES_TIMEOUT_MS: '400',
        CATALOG_CACHE_MINUTES: '60',
        LIST_CACHE_MS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      },
      clock: () => now,
    });
    cookie = await signedInUser(t, `reader_${kind}`);
    adminCookie = await signedInUser(t, `admin_${kind}`, 1);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });
  beforeEach(() => {
    store.fault = { kind: 'none' };
    now = new Date(now.getTime() + 24 * 3_600_000); // every test starts past the cache window
  });

  const search = (country: string, keyword: string, headers: Record<string, string> = { cookie }) =>
    t.app.inject({ url: `/api/search/${country}/${keyword}`, headers });
  const storeCalls = () => store.requests.length;

  describe('search', () => {
    it('maps the store fields of a real answer to the entry fields of docs/product.md', async () => {
      const res = await search('us', 'facebook');
      expect(res.statusCode).toBe(200);
      const [entry] = appList.parse(res.json());
      expect(entry).toEqual({
        app_id: '284882215',
        app_ver_id: null,
        country: 'US',
        name: 'Facebook',
        developer: 'Facebook, Inc.',
        version: '15.0',
        // The recorded http:// icon address, as https://.
        icon: String(facebook.artworkUrl512).replace(/^http:/, 'https:'),
        itunes: facebook.trackViewUrl,
        raiting: 3.5,
        raiting_count: 2840784,
        bundle_id: 'com.facebook.Facebook',
        require: '7.0',
        size: 64.49,
        premium: false,
        status: 'Available',
        normal_sign: 'No',
        iap_sign: 'No',
        igg_sign: 'No',
        both_sign: 'No',
        dup_sign: 'No',
        // Not decrypted: only the store's facts, nothing to set beside them.
        store_size: null,
        store_require: null,
        decrypted_at: null,
        reason: null,
        position: null,
      });
      const sent = store.requests.at(-1)!;
      expect(sent.pathname).toBe('/search');
      expect(Object.fromEntries(sent.searchParams)).toMatchObject({
        term: 'facebook',
        country: 'us',
        entity: 'software',
      });
    });

    it('drops Mac software from a mixed answer', async () => {
      const res = await search('kr', 'slack');
      expect(res.json().map((e: { name: string }) => e.name)).toEqual(['Talon – Webhooks & More', 'Veern']);
    });

    it('shows an app the store lists twice in one answer once', async () => {
      const res = await search('kr', 'twice');
      expect(res.statusCode).toBe(200);
      expect(res.json().map((e: { app_id: string }) => e.app_id)).toEqual(['284882215']);
    });

    it('answers an empty array when the store finds nothing', async () => {
      const res = await search('kr', 'nothing at all');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual([]);
    });

    it('keeps apps with no rating or no size, and non-Latin names', async () => {
      const korean = await search('kr', encodeURIComponent('카카오톡'));
      expect(korean.json()).toMatchObject([
        { name: '카카오톡 KakaoTalk', raiting: null, raiting_count: null },
      ]);
      expect(store.requests.at(-1)!.searchParams.get('term')).toBe('카카오톡');
    });

    it('passes keywords with slashes, spaces and emoji to the store unchanged', async () => {
      const slashed = await search('kr', 'AC/DC');
      expect(slashed.statusCode).toBe(200);
      expect(store.requests.at(-1)!.searchParams.get('term')).toBe('AC/DC');
      expect(slashed.json()).toMatchObject([{ name: 'AC/DC Live 🎸', size: null }]);
      const encoded = await search('kr', encodeURIComponent('AC/DC Live 🎸'));
      expect(store.requests.at(-1)!.searchParams.get('term')).toBe('AC/DC Live 🎸');
      expect(encoded.json()).toHaveLength(1);
      const spaced = await search('kr', 'rock%20band');
      expect(spaced.json()).toMatchObject([{ name: 'Rock Band' }]);
    });

    it('answers each app once when the store lists it twice, every time', async () => {
      for (let attempt = 0; attempt < 2; attempt++) {
        now = new Date(now.getTime() + 2 * 3_600_000); // past the cache: the store is asked again
        const res = await search('il', 'listed%20twice');
        expect(res.statusCode).toBe(200);
        expect(appList.parse(res.json()).map((e) => e.app_id)).toEqual(['284882215', '1003']);
      }
    });

    it('answers a repeated search from the cache until the freshness window ends', async () => {
      await search('de', 'tweetbot');
      const calls = storeCalls();
      await search('de', 'TweetBot%20');
      expect(storeCalls()).toBe(calls);
      now = new Date(now.getTime() + 61 * 60_000);
      await search('de', 'tweetbot');
      expect(storeCalls()).toBe(calls + 1);
    });

    it('answers 503 with a sentence and Retry-After when the store is down, 502 when its answer is malformed', async () => {
      store.fault = { kind: 'down' };
      const down = await search('it', 'rock');
      expect([down.statusCode, down.body, down.headers['retry-after']]).toEqual([
        503,
        'The App Store is having trouble right now. Please retry later.',
        '30',
      ]);
      store.fault = { kind: 'malformed' };
      const malformed = await search('it', 'rock');
      expect([malformed.statusCode, malformed.body]).toEqual([
        502,
        'The App Store answered with an error. Please retry later.',
      ]);
      // Back by itself: the next search is answered.
      store.fault = { kind: 'none' };
      expect((await search('it', 'facebook')).statusCode).toBe(200);
    });

    it('says how long to wait when the store throttles, and counts the fault in /metrics', async () => {
      store.fault = { kind: 'throttle', retryAfterS: 120 };
      const busy = await search('it', 'metal');
      expect([busy.statusCode, busy.body, busy.headers['retry-after']]).toEqual([
        503,
        'The App Store is busy right now. Please retry in a minute.',
        '120',
      ]);
      expect(await t.services.metrics.render()).toMatch(
        /sideport_dependency_faults_total\{part="store"\} [1-9]/,
      );
    });

    it('says the store could not be reached when it gives no answer, apart from an error it answered', async () => {
      store.fault = { kind: 'reset' };
      const unreachable = await search('it', 'rock');
      expect([unreachable.statusCode, unreachable.body]).toEqual([
        503,
        'The App Store could not be reached. Please retry later.',
      ]);
      store.fault = { kind: 'malformed' };
      const answered = await search('it', 'rock');
      expect([answered.statusCode, answered.body]).toEqual([
        502,
        'The App Store answered with an error. Please retry later.',
      ]);
    });

    it("answers the store's http icon addresses as https", async () => {
      const found = appList.parse((await search('kr', 'facebook')).json());
      // The recorded answer names http://a1988.phobos.apple.com/...
      expect(found[0]!.icon).toMatch(/^https:\/\/a1988\.phobos\.apple\.com\//);
    });

    it('answers 503 when the store is slow, without waiting past the timeout', async () => {
      store.fault = { kind: 'hang' };
      const started = Date.now();
      const res = await search('se', 'rock');
      expect(res.statusCode).toBe(503);
      expect(res.body).toBe('The App Store did not answer in time. Please retry later.');
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('answers a sentence with Retry-After while the store answers after the timeout, and searches again once it is quick', async () => {
      // Slower than ITUNES_TIMEOUT_MS (400 ms): the answer comes, but after the server stopped waiting.
      store.fault = { kind: 'slow', delayMs: 2000 };
      const late = await search('in', 'rock');
      expect([late.statusCode, late.headers['retry-after'], late.body]).toEqual([
        503,
        '30',
        'The App Store did not answer in time. Please retry later.',
      ]);
      expect(late.headers['content-type']).toMatch(/^text\/plain/);
      // An error page (5xx) from the store: a sentence too, and a search of another country meanwhile.
      store.fault = { kind: 'down' };
      const failing = await search('ru', 'rock');
      expect([failing.statusCode, failing.headers['retry-after'], failing.body]).toEqual([
        503,
        '30',
        'The App Store is having trouble right now. Please retry later.',
      ]);
      expect(await t.services.metrics.render()).toMatch(
        /sideport_dependency_faults_total\{part="store"\} [1-9]/,
      );
      store.fault = { kind: 'none' };
      const back = await search('in', 'rock');
      expect(back.statusCode, back.body).toBe(200);
      expect(appList.parse(back.json()).map((e) => e.app_id)).toEqual(['1003']);
    });

    it('backs off when the store throttles, then answers stale results from the cache', async () => {
      const fresh = await search('au', 'rock');
      expect(fresh.json()).toHaveLength(1);
      now = new Date(now.getTime() + 2 * 3_600_000);
      store.fault = { kind: 'throttle' };
      const stale = await search('au', 'rock');
      expect(stale.statusCode).toBe(200);
      expect(stale.json()).toEqual(fresh.json());
      const calls = storeCalls();
      const other = await search('au', 'kakaotalk');
      expect(other.statusCode).toBe(503);
      expect(other.body).toBe('The App Store is busy right now. Please retry in a minute.');
      expect(storeCalls()).toBe(calls); // backed off: the store was not asked again
      now = new Date(now.getTime() + 11 * 60_000);
      store.fault = { kind: 'none' };
      expect((await search('au', 'kakaotalk')).statusCode).toBe(200);
    });

    it('needs a session, a known country and a sane keyword', async () => {
      expect((await search('kr', 'rock', {})).statusCode).toBe(401);
      const country = await search('xx', 'rock');
      expect(country.statusCode).toBe(400);
      expect(country.body).toBe('Country must be one of US, KR, AU, RU, DE, IN, SE, IL, IT.');
      const long = await search('kr', 'x'.repeat(101));
      expect(long.statusCode).toBe(400);
      expect(long.body).toBe('Keywords are at most 100 characters.');
      expect((await search('kr', '%20')).body).toBe('Enter a keyword to search.');
    });

    it("shows each app's decrypt status from the database", async () => {
      await search('us', 'facebook');
      await q.insertVersion(t.database.db, {
        country: 'US',
        appId: 284882215,
        appVerId: null,
        version: null,
        status: 'Pending',
      });
      expect((await search('us', 'facebook')).json()[0].status).toBe('Pending');
      await q.deleteVersions(t.database.db, 284882215, null, ['Pending']);
    });
  });

  describe('latest and queue', () => {
    const seedApp = (appId: number) =>
      q.upsertApps(
        t.database.db,
        'KR',
        [
          {
            appId,
            name: `App ${appId}`,
            developer: 'Dev',
            version: '1.0',
            iconUrl: 'https://i/x.png',
            storeUrl: 'https://s/x',
            rating: 4.5,
            ratingCount: 10,
            bundleId: `com.example.a${appId}`,
            minimumOs: '14.0',
            sizeBytes: 10 * 1024 * 1024,
            price: 0,
          },
        ],
        now,
      );
    const getList = async (url: string) => {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(200);
      return {
        entries: appList.parse(res.json()),
        anchor: res.headers['x-list-anchor'] as string | undefined,
      };
    };

    it('pages Done versions newest first, 24 a page, ends with an empty page, and stays stable while entries are added', async () => {
      for (let i = 0; i < 30; i++) {
        await seedApp(5000 + i);
        await q.insertVersion(t.database.db, {
          country: 'KR',
          appId: 5000 + i,
          appVerId: 9000 + i,
          version: `1.${i}`,
          status: 'Done',
        });
      }
      const page0 = await getList('/api/latest/0');
      expect(page0.entries).toHaveLength(PAGE_SIZE);
      expect(page0.entries[0]).toMatchObject({
        app_id: '5029',
        app_ver_id: '9029',
        version: '1.29',
        status: 'Done',
      });
      // A version finished between two page loads must not push entries of page 0 onto page 1.
      await seedApp(6000);
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 6000,
        appVerId: 9999,
        version: '2.0',
        status: 'Done',
      });
      const page1 = await getList(`/api/latest/1?anchor=${page0.anchor}`);
      const seen = new Set(page0.entries.map((e) => e.app_ver_id));
      expect(page1.entries.some((e) => seen.has(e.app_ver_id))).toBe(false);
      expect(page1.entries.at(-1)).toMatchObject({ app_id: '5000' });
      expect((await getList(`/api/latest/5?anchor=${page0.anchor}`)).entries).toEqual([]);
      expect((await getList('/api/latest/0')).entries[0]!.app_id).toBe('6000');
    });

    it('lists waiting and working entries, premium first, then oldest', async () => {
      const ids = [7001, 7002, 7003, 7004];
      for (const id of ids) await seedApp(id);
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 7001,
        appVerId: null,
        version: null,
        status: 'Pending',
      });
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 7002,
        appVerId: 8002,
        version: '1.0',
        status: 'Process',
      });
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 7003,
        appVerId: null,
        version: null,
        status: 'Pending',
        premium: true,
      });
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 7004,
        appVerId: 8004,
        version: '1.0',
        status: 'Not',
      });
      const { entries } = await getList('/api/queue/0');
      expect(entries.map((e) => [e.app_id, e.status, e.premium])).toEqual([
        ['7003', 'Pending', true],
        ['7001', 'Pending', false],
        ['7002', 'Process', false],
      ]);
      expect((await getList('/api/queue/1')).entries).toEqual([]);
    });

    it('refuses a page that is not a whole number from 0', async () => {
      for (const page of ['-1', 'abc', '1.5']) {
        const res = await t.app.inject({ url: `/api/latest/${page}` });
        expect(res.statusCode).toBe(400);
        expect(res.body).toBe('Page must be a whole number from 0.');
      }
    });
  });

  describe('admin deletes', () => {
    it('lets only admins delete, removes the item from the list and audits it', async () => {
      await q.upsertApps(
        t.database.db,
        'KR',
        [
          {
            appId: 4242,
            name: 'Gone',
            developer: 'D',
            version: '1',
            iconUrl: '',
            storeUrl: '',
            rating: null,
            ratingCount: null,
            bundleId: 'b',
            minimumOs: '12.0',
            sizeBytes: null,
            price: null,
          },
        ],
        now,
      );
      await q.insertVersion(t.database.db, {
        country: 'KR',
        appId: 4242,
        appVerId: 4243,
        version: '1',
        status: 'Done',
      });
      const denied = await t.app.inject({
        method: 'DELETE',
        url: '/api/app/4242/4243',
        headers: { cookie, ...WEB_CLIENT },
      });
      expect(denied.statusCode).toBe(403);
      expect(denied.body).toBe('Do not have permission.');
      expect((await t.app.inject({ method: 'DELETE', url: '/api/app/4242/4243' })).statusCode).toBe(401);
      const done = await t.app.inject({
        method: 'DELETE',
        url: '/api/app/4242/4243',
        headers: { cookie: adminCookie, ...WEB_CLIENT },
      });
      expect(done.statusCode).toBe(204);
      const latest = (await t.app.inject({ url: '/api/latest/0' })).json() as Array<{ app_id: string }>;
      expect(latest.some((e) => e.app_id === '4242')).toBe(false);
      const again = await t.app.inject({
        method: 'DELETE',
        url: '/api/app/4242/4243',
        headers: { cookie: adminCookie, ...WEB_CLIENT },
      });
      expect(again.statusCode).toBe(404);
      const audit = await t.database.db.select().from(auditLog);
      expect(audit.some((a) => a.action === 'delete-version' && a.actor === `admin_${kind}`)).toBe(true);
    });

    it('deletes a queue entry with blacklist, after which the app shows Not in search', async () => {
      await search('us', 'facebook');
      await q.insertVersion(t.database.db, {
        country: 'US',
        appId: 284882215,
        appVerId: null,
        version: null,
        status: 'Pending',
      });
      const res = await t.app.inject({
        method: 'DELETE',
        url: '/api/queue/black/284882215/0',
        headers: { cookie: adminCookie, ...WEB_CLIENT },
      });
      expect(res.statusCode).toBe(204);
      const queue = (await t.app.inject({ url: '/api/queue/0' })).json() as Array<{ app_id: string }>;
      expect(queue.some((e) => e.app_id === '284882215')).toBe(false);
      expect((await search('us', 'facebook')).json()[0].status).toBe('Not');
    });
  });
});
