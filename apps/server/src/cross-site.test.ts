import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedTables, snapshotDatabase } from './test/db-snapshot.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from './test/harness.js';
import { changesState, ROUTE_ACCESS, SELF_AUTHENTICATED, SUITE_PASSWORD_MD5 } from './test/route-access.js';
import { exampleRequest, identityCookie, openRouteSuite, withCookie, type RouteSuite } from './test/route-suite.js';

const REFUSED = 'Cross-site requests are not allowed.';

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
  'first letter of each segment': (url) => mapPath(url, (c, _i, start) => (start && /[a-z]/i.test(c) ? hex(c) : c)),
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
    expect(keys).toEqual(expect.arrayContaining(['GET /api/pay/service/:n', 'GET /api/pay/device/:index', 'GET /api/portal']));
    for (const key of Object.keys(ROUTE_ACCESS)) {
      const entry = ROUTE_ACCESS[key]!;
      if (!/^(GET|HEAD) /.test(key) && !SELF_AUTHENTICATED.has(entry.access)) expect(keys).toContain(key);
    }
  });
});

describe.each(databaseKinds)('cross-site requests on %s', (kind) => {
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
      const fromElsewhere = (sender: Record<string, string>) => ({ ...(cookie ? { cookie } : {}), ...sender });
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
          const typed = await t.app.inject({ ...example, headers: fromElsewhere({ 'sec-fetch-site': 'none' }) });
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

describe.each(databaseKinds)('the cross-site guard on %s', (kind) => {
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
    const res = await t.app.inject({ url: '/%61pi/no-such-call', headers: { 'sec-fetch-site': 'same-origin' } });
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

describe.each(databaseKinds)('behind a proxy (TRUST_PROXY) on %s', (kind) => {
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
    const forged = await signOut({ origin: 'https://evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
    expect(forged.statusCode).toBe(403);
    expect(forged.body).toBe(REFUSED);
    expect((await t.app.inject({ url: '/api/info', headers: { cookie } })).statusCode).toBe(200);
  });

  it('accepts the public site as Origin', async () => {
    const res = await signOut({ origin: 'https://sideport.example', 'x-forwarded-host': 'sideport.example', 'x-forwarded-proto': 'https' });
    expect(res.statusCode).toBe(204);
  });
});
