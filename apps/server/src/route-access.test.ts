import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CROSS_SITE_EXEMPT } from './app.js';
import { changedTables, snapshotDatabase } from './test/db-snapshot.js';
import { oneDatabase } from './test/harness.js';
import { ROUTE_ACCESS, SELF_AUTHENTICATED, type RouteAccess } from './test/route-access.js';
import {
  CONFIGURATIONS,
  exampleRequest,
  identityHeaders,
  openRouteSuite,
  registeredRoutes,
  withCookie,
  type RouteSuite,
} from './test/route-suite.js';

/** Host headers no site has: a space, a path, a bad port, an unclosed or bad IPv6 literal, markup. */
const MALFORMED_HOSTS = [
  'bad host',
  'evil.example/path',
  'evil.example@good.example',
  'sideport.example:99999',
  'sideport.example:http',
  '[::1',
  '[not:an:address]',
  'a..b',
  '"><script>',
  'a,b',
];

const isTextSentence = (res: LightMyRequestResponse) =>
  /^text\/plain/.test(String(res.headers['content-type'])) && res.body.length > 0;

/** Refused for want of a session: 401 and the sentence the client acts on. */
function expectSignInAsked(res: LightMyRequestResponse, what: string) {
  expect(res.statusCode, `${what}: ${res.body}`).toBe(401);
  expect(res.body).toBe('Please sign in.');
}

/** Went through: not refused for identity, grade or origin, and no server error. */
function expectAllowed(res: LightMyRequestResponse, what: string) {
  expect(res.statusCode, `${what}: ${res.statusCode} ${res.body}`).not.toBe(401);
  expect(res.body, what).not.toBe('Do not have permission.');
  expect(res.body, what).not.toBe('Cross-site requests are not allowed.');
  expect(res.statusCode, `${what}: ${res.body}`).toBeLessThan(500);
}

async function checkAccess(suite: RouteSuite, method: string, entry: RouteAccess) {
  const { t, cookies } = suite;
  const request = exampleRequest(method, entry, await suite.fixtures());
  const send = (cookie?: string, override: Partial<InjectOptions> = {}) =>
    t.app.inject({ ...withCookie(request, cookie), ...override });
  const heads = method === 'GET' ? ['GET', 'HEAD'] : [method];

  const before = await snapshotDatabase(t.database.db);
  switch (entry.access) {
    case 'user':
    case 'owner':
    case 'admin':
      for (const m of heads) {
        const res = await send(undefined, { method: m as InjectOptions['method'] });
        expect(res.statusCode, `${m} signed out`).toBe(401);
        if (m === 'GET') expectSignInAsked(res, `${m} signed out`);
      }
      break;
    case 'agent':
    case 'signed-url':
    case 'webhook':
    case 'enrollment': {
      // Their own credential or nothing: a session cookie, even an admin's, changes no answer.
      const anonymous = await send();
      expect(anonymous.statusCode).toBeGreaterThanOrEqual(400);
      expect(anonymous.statusCode).toBeLessThan(500);
      expect(isTextSentence(anonymous)).toBe(true);
      for (const cookie of [cookies.user, cookies.admin]) {
        const res = await send(cookie);
        expect(res.statusCode).toBe(anonymous.statusCode);
        expect(res.body).toBe(anonymous.body);
      }
      break;
    }
    default:
      break;
  }
  if (entry.access === 'admin') {
    const res = await send(cookies.user);
    expect(res.statusCode, 'a user on an admin route').toBe(403);
    expect(res.body).toBe('Do not have permission.');
  }
  if (entry.access === 'owner') {
    // Another user's data: not found for them, whatever the method, and untouched.
    const res = await send(cookies.other);
    expect(res.statusCode, `another user: ${res.body}`).toBe(404);
    expect(isTextSentence(res)).toBe(true);
  }
  expect(
    changedTables(before, await snapshotDatabase(t.database.db)),
    'refused calls changed the database',
  ).toEqual({});

  // Then the caller the table names goes through (the control: the refusals above were not chance).
  if (entry.stream) return;
  if (entry.access === 'public' || entry.access === 'page') expectAllowed(await send(), 'signed out');
  if (entry.access === 'user') expectAllowed(await send(cookies.user), 'a user');
  if (entry.access === 'owner') expectAllowed(await send(cookies.user), 'the owner');
  if (entry.access === 'admin') expectAllowed(await send(cookies.admin), 'an admin');
  if (entry.access === 'agent') {
    const res = await send(undefined, {
      headers: { ...request.headers, authorization: `Bearer ${suite.agentToken}` },
    });
    expectAllowed(res, 'an agent');
  }
}

describe.each([oneDatabase])('route access on %s', (kind) => {
  const registeredSomewhere = new Set<string>();
  const checkedInDev = new Set<string>();

  describe.each(CONFIGURATIONS)('with %s billing', (configuration) => {
    let suite: RouteSuite;
    beforeAll(async () => {
      suite = await openRouteSuite(kind, configuration);
    });
    afterAll(() => suite.close());

    it('declares every registered route in src/test/route-access.ts', () => {
      const routes = registeredRoutes(suite);
      const missing = routes.filter((r) => !r.entry).map((r) => `'${r.key}': { access: '…', example: '…' },`);
      expect(missing, 'registered routes missing from ROUTE_ACCESS (src/test/route-access.ts)').toEqual([]);
    });

    it('marks in the route itself exactly the GETs the table says change state', () => {
      for (const route of registeredRoutes(suite)) {
        if (route.method !== 'GET' || !route.entry) continue;
        const marked = (route.config as { changesState?: boolean } | undefined)?.changesState === true;
        expect(marked, `${route.key}: config.changesState in the route, changesState in the table`).toBe(
          route.entry.changesState === true,
        );
      }
    });

    it('validates the input of every route that takes any', () => {
      for (const route of registeredRoutes(suite)) {
        const schema = (route.schema ?? {}) as Record<string, unknown>;
        const hasParams = /[:*]/.test(route.url);
        const isPage = route.entry?.access === 'page';
        if (hasParams && !isPage)
          expect(schema.params, `${route.key} has path parameters but no params schema`).toBeDefined();
        const takesBody = ['POST', 'PUT', 'PATCH'].includes(route.method) && !route.entry?.bodyless;
        const signedBody = route.entry !== undefined && SELF_AUTHENTICATED.has(route.entry.access);
        const ownedForm = route.entry?.access === 'owner'; // the test-mode page's forms post no fields
        if (takesBody && !signedBody && !ownedForm) {
          expect(schema.body, `${route.key} takes a body but has no body schema`).toBeDefined();
        }
      }
    });

    it('keeps the cross-site exemption to the routes that authenticate on their own', () => {
      for (const route of registeredRoutes(suite)) {
        if (!route.entry) continue;
        const exempt = CROSS_SITE_EXEMPT.some((prefix) => route.url.startsWith(prefix));
        expect(exempt, `${route.key} is ${route.entry.access}`).toBe(
          SELF_AUTHENTICATED.has(route.entry.access),
        );
      }
    });

    it('documents every route but the web app and the document itself in GET /api/openapi.json', async () => {
      const doc = (await suite.t.app.inject({ url: '/api/openapi.json' })).json() as {
        paths: Record<string, object>;
      };
      const documented = new Set(
        Object.entries(doc.paths).flatMap(([url, methods]) =>
          Object.keys(methods).map((m) => `${m.toUpperCase()} ${url}`),
        ),
      );
      const missing = registeredRoutes(suite)
        .filter((r) => r.entry?.access !== 'page' && r.key !== 'GET /api/openapi.json')
        .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{*}')}`)
        .filter((key) => !documented.has(key));
      expect(missing, 'routes GET /api/openapi.json does not list').toEqual([]);
    });

    it.each(Object.keys(ROUTE_ACCESS))(
      '%s refuses a malformed Host with a 400 sentence and changes nothing',
      async (key) => {
        const [method, url] = key.split(' ') as [string, string];
        if (!suite.t.routes.some((r) => r.method === method && r.url === url)) return;
        const entry = ROUTE_ACCESS[key]!;
        const example = exampleRequest(method, entry, await suite.fixtures());
        const headers = { ...(example.headers as Record<string, string>), ...identityHeaders(suite, entry) };
        const before = await snapshotDatabase(suite.t.database.db);
        for (const host of MALFORMED_HOSTS) {
          const res = await suite.t.app.inject({ ...example, headers: { ...headers, host } });
          expect(res.statusCode, `Host: ${host}: ${res.body}`).toBe(400);
          expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
          expect(res.body).toBe('The Host header is not a valid host name.');
        }
        expect(changedTables(before, await snapshotDatabase(suite.t.database.db))).toEqual({});
      },
    );

    it.each(Object.keys(ROUTE_ACCESS))('%s answers each caller as declared', async (key) => {
      const [method, url] = key.split(' ') as [string, string];
      const registered = suite.t.routes.some((r) => r.method === method && r.url === url);
      if (!registered) return;
      registeredSomewhere.add(key);
      // A route both configurations register is checked once, where its example needs nothing outside.
      if (configuration === 'stripe' && checkedInDev.has(key)) return;
      if (configuration === 'dev') checkedInDev.add(key);
      await checkAccess(suite, method, ROUTE_ACCESS[key]!);
    });
  });

  it('has no line for a route that no configuration registers', () => {
    expect(Object.keys(ROUTE_ACCESS).filter((key) => !registeredSomewhere.has(key))).toEqual([]);
  });
});
