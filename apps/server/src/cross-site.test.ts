import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedTables, snapshotDatabase } from './test/db-snapshot.js';
import { createTestApp, oneDatabase, signedInUser, type TestApp } from './test/harness.js';
import { changesState, ROUTE_ACCESS, SELF_AUTHENTICATED, SUITE_PASSWORD_MD5 } from './test/route-access.js';
import {
  exampleRequest,
  identityCookie,
  openRouteSuite,
  SAME_ORIGIN,
  withCookie,
  type RouteSuite,
} from './test/route-suite.js';

const REFUSED = 'Cross-site requests are not allowed.';
const UNPROVEN = "This request did not show that it came from the site's own pages; open it from there.";
/** What the web app's API client sends on every call (apps/web/src/lib/api.ts). */
const WEB_CLIENT = { 'x-sideport-client': 'web' };

const hex = (c: string, lower = false) => {
  const code = `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  return lower ? code.toLowerCase() : code;
};

/** Rewrites the path of a URL (never its query) character by character. */
const mapPath = (url: string, f: (c: string, index: number, segmentStart: boolean) => string) => {
  const [pathPart, query] = url.split(/\?(.*)/s, 2) as [string, string | undefined];
  const mapped = [...pathPart].map((c, i) => f(c, i, pathPart[i - 1] === '/')).join('');
  return query === undefined ? mapped : `${mapped}?${query}`;
};

/** The forms one path takes that the router decodes to the same route. */
const ENCODINGS: Record<string, (url: string) => string> = {
  raw: (url) => url,
  'first letter of each segment': (url) =>
    mapPath(url, (c, _i, start) => (start && /[a-z]/i.test(c) ? hex(c) : c)),
  'every letter and digit': (url) => mapPath(url, (c) => (/[a-z0-9]/i.test(c) ? hex(c) : c)),
  'lower-case escapes of - . _': (url) => mapPath(url, (c) => (/[-._]/.test(c) ? hex(c, true) : c)),
};

/** How a request from another site, or a sandboxed one, presents itself. */
const SENDERS: Record<string, Record<string, string>> = {
  'Sec-Fetch-Site cross-site': { 'sec-fetch-site': 'cross-site' },
  'Sec-Fetch-Site same-site': { 'sec-fetch-site': 'same-site' },
  'a foreign Origin': { origin: 'https://evil.example' },
  'Origin null': { origin: 'null' },
  'cross-site with a foreign Origin': { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
};

/** Every route the table says changes state and that relies on the guard, with the methods to try. */
const guardedRoutes = Object.entries(ROUTE_ACCESS)
  .map(([key, entry]) => ({ key, method: key.split(' ')[0]!, url: key.split(' ')[1]!, entry }))
  .filter(({ method, entry }) => changesState(method, entry) && !SELF_AUTHENTICATED.has(entry.access));

describe('the routes the cross-site suite covers', () => {
  it('include the state-changing GETs of docs/product.md and every POST, PUT, PATCH and DELETE', () => {
    const keys = guardedRoutes.map((r) => r.key);
    expect(keys).toEqual(
      expect.arrayContaining(['GET /api/pay/service/:n', 'GET /api/pay/device/:index', 'GET /api/portal']),
    );
    for (const key of Object.keys(ROUTE_ACCESS)) {
      const entry = ROUTE_ACCESS[key]!;
      if (!/^(GET|HEAD) /.test(key) && !SELF_AUTHENTICATED.has(entry.access)) expect(keys).toContain(key);
    }
  });
});

describe.each([oneDatabase])('cross-site requests on %s', (kind) => {
  let suite: RouteSuite;
  beforeAll(async () => {
    suite = await openRouteSuite(kind, 'dev');
  });
  afterAll(() => suite.close());

  it.each(guardedRoutes.map((r) => [r.key, r] as const))(
    '%s is refused from another site in every form and changes nothing',
    async (_key, { method, url, entry }) => {
      if (!suite.t.routes.some((r) => r.method === method && r.url === url)) return;
      const { t } = suite;
      const cookie = identityCookie(suite, entry);
      const example = withCookie(exampleRequest(method, entry, await suite.fixtures()), cookie);
      // The example as another site would send it: the same cookie, none of the site's own headers.
      const fromElsewhere = (sender: Record<string, string>) => ({
        ...(cookie ? { cookie } : {}),
        ...sender,
      });
      const before = await snapshotDatabase(t.database.db);
      for (const m of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
        for (const [encodingName, encode] of Object.entries(ENCODINGS)) {
          for (const [senderName, sender] of Object.entries(SENDERS)) {
            const res = await t.app.inject({
              ...example,
              method: m as typeof example.method,
              url: encode(String(example.url)),
              headers: fromElsewhere(sender),
            });
            const what = `${m} ${encode(String(example.url))} (${encodingName}, ${senderName})`;
            expect(res.statusCode, what).toBe(403);
            if (m !== 'HEAD') expect(res.body, what).toBe(REFUSED);
          }
        }
        // A typed-in address (Sec-Fetch-Site: none) may read, never write.
        if (m !== 'GET' && m !== 'HEAD') {
          const typed = await t.app.inject({
            ...example,
            headers: fromElsewhere({ 'sec-fetch-site': 'none' }),
          });
          expect(typed.statusCode).toBe(403);
        }
      }
      // Encoded twice, the path is not the API's any more: refused, unknown or a page; nothing changes.
      const twice = await t.app.inject({
        ...example,
        url: String(example.url).replace(/^\/(.)/, (_m, c: string) => `/%25${c.charCodeAt(0).toString(16)}`),
        headers: fromElsewhere({ 'sec-fetch-site': 'cross-site' }),
      });
      // (A GET of such a path is a page of the web app.)
      if (method === 'GET') expect(twice.headers['content-type']).toMatch(/^text\/(html|plain)/);
      else expect([403, 404]).toContain(twice.statusCode);
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});

      // The same request from the site itself goes through: the refusals above were the guard's.
      // (It may still be refused for another reason, such as 'Need decrypt premium.'.)
      const fromSite = await t.app.inject(example);
      expect(fromSite.body).not.toBe(REFUSED);
      expect(fromSite.statusCode, fromSite.body).toBeLessThan(500);
    },
  );
});

/** The path a navigation token is asked for: the example's, decoded, without its query. */
const pathOf = (url: string) => decodeURIComponent(url.split('?', 1)[0]!);
const withToken = (url: string, token: string) =>
  `${url}${url.includes('?') ? '&' : '?'}nav_token=${encodeURIComponent(token)}`;

describe.each([oneDatabase])('browsers without Fetch Metadata (iOS Safari before 16.4) on %s', (kind) => {
  let suite: RouteSuite;
  let legacyAccounts = 0;
  beforeAll(async () => {
    suite = await openRouteSuite(kind, 'dev');
  });
  afterAll(() => suite.close());

  /** A navigation token of `cookie`'s user for `path`, asked for as the web app asks. */
  async function navigationToken(cookie: string, path: string): Promise<string> {
    const res = await suite.t.app.inject({
      method: 'POST',
      url: '/api/navigation-tokens',
      headers: { cookie, ...SAME_ORIGIN },
      payload: { path },
    });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { token: string }).token;
  }

  it.each(guardedRoutes.map((r) => [r.key, r] as const))(
    '%s refuses a cookie with neither Sec-Fetch-Site nor Origin, and takes it with the web client header',
    async (_key, { method, url, entry }) => {
      if (!suite.t.routes.some((r) => r.method === method && r.url === url)) return;
      const { t } = suite;
      // A public route is sent the cookie the browser holds all the same: a signed-in person's own,
      // for this test alone (sign-out ends it).
      const cookie =
        identityCookie(suite, entry) ??
        (await signedInUser(suite.t, `legacy_${++legacyAccounts}_${kind.slice(0, 2)}`));
      const example = withCookie(exampleRequest(method, entry, await suite.fixtures()), cookie);
      const before = await snapshotDatabase(t.database.db);
      // What a link or a form on another site sends from such a browser: the cookie, nothing else.
      for (const m of method === 'GET' ? ['GET', 'HEAD'] : [method]) {
        const res = await t.app.inject({
          ...example,
          method: m as typeof example.method,
          headers: { cookie },
        });
        expect(res.statusCode, `${m} ${String(example.url)}`).toBe(403);
        if (m !== 'HEAD') expect(res.body).toBe(UNPROVEN);
      }
      // A header of the web app's name with another value, or a token that is not one, proves nothing.
      const forged = await t.app.inject({ ...example, headers: { cookie, 'x-sideport-client': 'other' } });
      expect(forged.statusCode).toBe(403);
      const guessed = await t.app.inject({
        ...example,
        url: withToken(String(example.url), 'A'.repeat(43)),
        headers: { cookie },
      });
      expect(guessed.statusCode).toBe(403);
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});

      // The web app's API client sends its header: the same call goes through.
      const fromApp = await t.app.inject({ ...example, headers: { cookie, ...WEB_CLIENT } });
      expect(fromApp.body).not.toBe(UNPROVEN);
      expect(fromApp.statusCode, fromApp.body).toBeLessThan(500);
    },
  );

  it.each(guardedRoutes.filter((r) => r.method === 'GET').map((r) => [r.key, r] as const))(
    '%s opens once with a navigation token of its user, for its path',
    async (_key, { method, entry }) => {
      if (!suite.t.routes.some((r) => r.method === method && r.url === _key.split(' ')[1])) return;
      const { t, cookies } = suite;
      const example = exampleRequest(method, entry, await suite.fixtures());
      const url = String(example.url);
      const before = await snapshotDatabase(t.database.db);
      const token = await navigationToken(cookies.user, pathOf(url));
      const asked = await snapshotDatabase(t.database.db);
      // Another user's cookie, or another path, with the user's token: refused, and the token kept.
      const otherUser = await t.app.inject({
        ...example,
        url: withToken(url, token),
        headers: { cookie: cookies.other },
      });
      expect(otherUser.statusCode).toBe(403);
      expect(otherUser.body).toBe(UNPROVEN);
      const otherPath = await t.app.inject({
        url: withToken('/api/pay/service/9', token),
        headers: { cookie: cookies.user },
      });
      expect(otherPath.statusCode).toBe(403);
      expect(changedTables(asked, await snapshotDatabase(t.database.db))).toEqual({});

      const opened = await t.app.inject({
        ...example,
        url: withToken(url, token),
        headers: { cookie: cookies.user },
      });
      expect(opened.body).not.toBe(UNPROVEN);
      expect(opened.statusCode, opened.body).toBeLessThan(500);
      // Once only: the same token again is refused and changes nothing more.
      const afterOpened = await snapshotDatabase(t.database.db);
      const again = await t.app.inject({
        ...example,
        url: withToken(url, token),
        headers: { cookie: cookies.user },
      });
      expect(again.statusCode).toBe(403);
      expect(again.body).toBe(UNPROVEN);
      expect(changedTables(afterOpened, await snapshotDatabase(t.database.db))).toEqual({});
      expect(Object.keys(changedTables(before, asked))).toEqual(['navigation_tokens']);
    },
  );

  it('leaves safe calls open to such a browser, and callers without a cookie alone', async () => {
    const { t, cookies, users } = suite;
    const info = await t.app.inject({ url: '/api/info', headers: { cookie: cookies.user } });
    expect(info.statusCode).toBe(200);
    // A CLI or a health check sends no cookie and no browser header: not a browser's ambient authority.
    const signIn = await t.app.inject({
      method: 'POST',
      url: '/api/sign-in',
      payload: { id: users.user, pw: SUITE_PASSWORD_MD5 },
    });
    expect(signIn.statusCode, signIn.body).toBe(200);
    expect((await t.app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });

  it('grants no other site the preflight it would need to send the client header', async () => {
    const res = await suite.t.app.inject({
      method: 'OPTIONS',
      url: '/api/pay/service/0',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-sideport-client',
      },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('asks for a token only with the client header or from the site, for an API path', async () => {
    const { t, cookies } = suite;
    const ask = (headers: Record<string, string>, path = '/api/udid/profile') =>
      t.app.inject({
        method: 'POST',
        url: '/api/navigation-tokens',
        headers: { cookie: cookies.user, ...headers },
        payload: { path },
      });
    expect((await ask({})).statusCode).toBe(403);
    expect((await ask({ 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect((await ask(WEB_CLIENT)).statusCode).toBe(200);
    const notApi = await ask(WEB_CLIENT, '/billing/dev-portal');
    expect(notApi.statusCode).toBe(400);
    expect(notApi.body).toBe('The path must be an API path (/api/...) without spaces or a query.');
  });
});

describe.each([oneDatabase])('navigation tokens on %s', (kind) => {
  let t: TestApp;
  let now = new Date('2026-11-27T10:00:00Z');
  beforeAll(async () => {
    t = await createTestApp(kind, { clock: () => now });
  });
  afterAll(() => t.close());

  it('stop working after a minute, and the profile is not issued', async () => {
    const cookie = await signedInUser(t, `expiring_${kind}`);
    const asked = await t.app.inject({
      method: 'POST',
      url: '/api/navigation-tokens',
      headers: { cookie, ...WEB_CLIENT },
      payload: { path: '/api/udid/profile' },
    });
    const { token, expires_at } = asked.json() as { token: string; expires_at: string };
    expect(expires_at).toBe('2026-11-27T10:01:00.000Z');
    now = new Date('2026-11-27T10:01:00.001Z');
    const before = await snapshotDatabase(t.database.db);
    const late = await t.app.inject({ url: withToken('/api/udid/profile', token), headers: { cookie } });
    expect(late.statusCode).toBe(403);
    expect(late.body).toBe(UNPROVEN);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });
});

describe.each([oneDatabase])('the cross-site guard on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(kind, { web: true });
  });
  afterAll(() => t.close());

  it('refuses POST /%61pi/sign-up from another site and makes no account', async () => {
    const before = await snapshotDatabase(t.database.db);
    const res = await t.app.inject({
      method: 'POST',
      url: '/%61pi/sign-up',
      payload: { id: 'encoded_path', pw: SUITE_PASSWORD_MD5 },
      headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe(REFUSED);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('answers an unknown API address reached by an encoded form 404 in text, not with the web app', async () => {
    const res = await t.app.inject({
      url: '/%61pi/no-such-call',
      headers: { 'sec-fetch-site': 'same-origin' },
    });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe('There is no GET /api/no-such-call here.');
  });

  it('still serves the web app for unknown pages', async () => {
    const res = await t.app.inject({ url: '/search/KR/a%20b' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<div id="root">');
  });
});

describe.each([oneDatabase])('behind a proxy (TRUST_PROXY) on %s', (kind) => {
  let t: TestApp;
  let cookie: string;
  beforeAll(async () => {
    t = await createTestApp(kind, { env: { TRUST_PROXY: 'true', PUBLIC_URL: 'https://sideport.example' } });
    cookie = await signedInUser(t, 'proxied_user');
  });
  afterAll(() => t.close());

  const signOut = (headers: Record<string, string>) =>
    t.app.inject({ method: 'POST', url: '/api/sign-out', headers: { cookie, ...headers } });

  it('compares an Origin with PUBLIC_URL, not with the X-Forwarded-Host a client wrote', async () => {
    const forged = await signOut({
      origin: 'https://evil.example',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.body).toBe(REFUSED);
    expect((await t.app.inject({ url: '/api/info', headers: { cookie } })).statusCode).toBe(200);
  });

  it('accepts the public site as Origin', async () => {
    const res = await signOut({
      origin: 'https://sideport.example',
      'x-forwarded-host': 'sideport.example',
      'x-forwarded-proto': 'https',
    });
    expect(res.statusCode).toBe(204);
  });
});
