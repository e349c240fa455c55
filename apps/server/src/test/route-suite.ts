import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import { startItunesServer, type ItunesServer } from '../dev/itunes-server.js';
import { randomUUID } from 'node:crypto';
import * as catalog from '../modules/catalog/queries.js';
import * as devices from '../modules/devices/queries.js';
import * as signs from '../modules/sign/queries.js';
import { createTestApp, fixturesDir, signedInUser, type DatabaseKind, type TestApp } from './harness.js';
import { ROUTE_ACCESS, routeKey, type Fixtures, type RouteAccess } from './route-access.js';

/**
 * The configurations whose routes differ: the test-mode billing provider with a built web app
 * (the dev checkout pages, the SPA), and Stripe without one (the webhook). Together they register
 * every route the server has.
 */
export type Configuration = 'dev' | 'stripe';
export const CONFIGURATIONS: Configuration[] = ['dev', 'stripe'];

/** Stripe configured, its API a closed local port: for tests that need the Stripe provider but never its answers. */
export const STRIPE_ENV = {
  STRIPE_SECRET_KEY: 'sk_test_routes',
  STRIPE_WEBHOOK_SECRET: 'whsec_routes',
  // Nothing listens there: the suites never need Stripe to answer.
  STRIPE_API_URL: 'http://127.0.0.1:9',
  STRIPE_PRICE_MONTHLY_20: 'price_m20',
  STRIPE_PRICE_YEARLY_20: 'price_y20',
  STRIPE_PRICE_MONTHLY_50: 'price_m50',
  STRIPE_PRICE_YEARLY_50: 'price_y50',
  STRIPE_PRICE_RESET: 'price_reset',
  STRIPE_PRICE_DEVICE: 'price_device',
};

/** The suites' bound on a silent request body (BODY_IDLE_TIMEOUT_MS); uploads get twice as long. */
export const SUITE_BODY_IDLE_TIMEOUT_MS = 400;

/** The suites' overall bound on a request body (BODY_TIMEOUT_MS): a few idle bounds long. */
export const SUITE_BODY_TIMEOUT_MS = SUITE_BODY_IDLE_TIMEOUT_MS * 3;

/** Sent by the site's own pages; the suites that are not about cross-site requests send it. */
export const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' } as const;

/** What a file outside the served folder holds: no answer may ever contain it. */
export const SECRET_OUTSIDE_WEB_ROOT = 'sideport-secret-beside-the-web-root';

export interface RouteSuite {
  t: TestApp;
  configuration: Configuration;
  users: Fixtures['users'];
  cookies: Record<'user' | 'other' | 'admin', string>;
  /** A decrypt agent's bearer token, for the agent routes. */
  agentToken: string;
  /** Fresh catalogue entries and a checkout of `user`, for one route's checks. */
  fixtures(): Promise<Fixtures>;
  close(): Promise<void>;
}

let seedCounter = 0;

export async function openRouteSuite(kind: DatabaseKind, configuration: Configuration): Promise<RouteSuite> {
  const store: ItunesServer = await startItunesServer({
    answers: new Map([
      [
        'search:facebook',
        readFileSync(path.join(fixturesDir, 'itunes/fastlane_itunesLookup-284882215.json'), 'utf8'),
      ],
    ]),
  });
  const env: Record<string, string> = {
    ITUNES_BASE_URL: store.url,
    ITUNES_TIMEOUT_MS: '1000',
    LIST_CACHE_MS: '0',
    SIGN_IN_LIMIT_PER_ADDRESS: '1000000',
    SIGN_IN_LIMIT_PER_ID: '1000000',
    // A body that stops arriving is given up on soon (src/fuzz.test.ts stalls one on every route).
    BODY_IDLE_TIMEOUT_MS: String(SUITE_BODY_IDLE_TIMEOUT_MS),
    AGENT_UPLOAD_IDLE_TIMEOUT_MS: String(SUITE_BODY_IDLE_TIMEOUT_MS * 2),
    // A body trickled a byte at a time is given up on soon too (src/fuzz.test.ts trickles one on every route).
    BODY_TIMEOUT_MS: String(SUITE_BODY_TIMEOUT_MS),
    // Signs an accepted request queued stay queued: no sign worker changes the database while the
    // suites compare it around a refused request.
    SIGN_WORKERS: '0',
    ...(configuration === 'stripe' ? STRIPE_ENV : {}),
  };
  const t = await createTestApp(kind, { env, ...(configuration === 'dev' ? { web: true } : {}) });
  if (configuration === 'dev') {
    // The web root is a folder inside the test's data folder; a secret sits beside it.
    writeFileSync(path.join(t.dataDir, 'secret.txt'), SECRET_OUTSIDE_WEB_ROOT);
  }
  const tag = `${kind.slice(0, 2)}${configuration.slice(0, 2)}`;
  const users = { user: `user_${tag}`, other: `other_${tag}`, admin: `admin_${tag}` };
  const cookies = {
    user: await signedInUser(t, users.user),
    other: await signedInUser(t, users.other),
    admin: await signedInUser(t, users.admin, 1),
  };

  // `user` has a Registered device, so the sign routes have something to sign for.
  const udid = '00008110-000A1B2C3D4E5F60';
  await devices.insertDevice(t.database.db, {
    userId: users.user,
    product: 'iPhone15,2',
    udid,
    status: 'Registered',
  });

  const madeAgent = await t.app.inject({
    method: 'POST',
    url: '/api/admin/agents',
    headers: { cookie: cookies.admin, ...SAME_ORIGIN },
    payload: { name: 'route suite' },
  });
  const agentToken = (madeAgent.json() as { token: string }).token;

  async function fixtures(): Promise<Fixtures> {
    const n = ++seedCounter;
    const base = 7_000_000 + n * 10;
    const now = new Date();
    const app = (appId: number) => ({
      appId,
      name: `Route App ${appId}`,
      developer: 'Route Tests',
      version: '1.0',
      iconUrl: 'https://is1-ssl.mzstatic.com/image/route.png',
      storeUrl: `https://apps.apple.com/kr/app/id${appId}`,
      rating: null,
      ratingCount: null,
      bundleId: `com.example.route${appId}`,
      minimumOs: '15.0',
      sizeBytes: null,
      price: 0,
    });
    await catalog.upsertApps(t.database.db, 'KR', [app(base), app(base + 1), app(base + 2)], now);
    const entry = (appId: number, appVerId: number | null, status: string) =>
      catalog.insertVersion(t.database.db, { country: 'KR', appId, appVerId, version: '1.0', status });
    await entry(base, base + 100, 'Done');
    await entry(base + 1, base + 101, 'Pending');
    await entry(base + 2, null, 'Pending');
    let checkout = 'no-checkout-in-this-configuration';
    if (configuration === 'dev') {
      // The reset (service 5): a plan the user already has is refused, and earlier routes may have paid one.
      const res = await t.app.inject({
        url: '/api/pay/service/5',
        headers: { cookie: cookies.user, ...SAME_ORIGIN },
      });
      checkout = new URL((res.json() as { url: string }).url).pathname.split('/').at(-1)!;
    }
    // A current artifact of `user` for the Done version, mode 0 (its file need not exist for these suites).
    const artifactId = randomUUID();
    await signs.insertSign(t.database.db, {
      userId: users.user,
      source: 'version',
      appId: base,
      appVerId: base + 100,
      signType: 0,
      status: 'Done',
      state: 'idle',
      title: `Route App ${base}`,
      requestedAt: now,
      updatedAt: now,
      artifactId,
      fileKey: `signed/route/${artifactId}.ipa`,
      signedAt: now,
      udids: [udid],
      bundleId: `com.example.route${base}`,
      bundleVersion: '1.0',
    });
    return {
      users,
      freshId: `fresh_${tag}_${n}`,
      signed: { appId: base, appVerId: base + 100, type: 0, artifactId },
      done: { appId: base, appVerId: base + 100 },
      queued: { appId: base + 1, appVerId: base + 101 },
      appLevel: { appId: base + 2 },
      checkout,
    };
  }

  return {
    t,
    configuration,
    users,
    cookies,
    agentToken,
    fixtures,
    async close() {
      await t.close();
      await store.close();
    },
  };
}

/** The registered routes of a suite, each with its table entry; HEAD routes stand with their GET. */
export function registeredRoutes(suite: RouteSuite) {
  const routes = suite.t.routes.filter(
    (r) => !(r.method === 'HEAD' && suite.t.routes.some((g) => g.method === 'GET' && g.url === r.url)),
  );
  return routes.map((r) => ({
    ...r,
    key: routeKey(r.method, r.url),
    entry: ROUTE_ACCESS[routeKey(r.method, r.url)],
  }));
}

/** The example request of a table entry, as inject options (same-origin; no identity). */
export function exampleRequest(method: string, entry: RouteAccess, fx: Fixtures): InjectOptions {
  const example = typeof entry.example === 'function' ? entry.example(fx) : entry.example;
  const { url, payload } = typeof example === 'string' ? { url: example, payload: undefined } : example;
  return {
    method: method as InjectOptions['method'],
    url,
    headers: { ...SAME_ORIGIN },
    ...(payload === undefined ? {} : { payload: payload as InjectOptions['payload'] }),
  };
}

/** The cookie of the identity a table entry's example is made with. */
export function identityCookie(suite: RouteSuite, entry: RouteAccess): string | undefined {
  if (entry.access === 'admin') return suite.cookies.admin;
  if (entry.access === 'user' || entry.access === 'owner') return suite.cookies.user;
  return undefined;
}

/** The headers of the identity a table entry's example is made with: its cookie, or an agent's token. */
export function identityHeaders(suite: RouteSuite, entry: RouteAccess): Record<string, string> {
  if (entry.access === 'agent') return { authorization: `Bearer ${suite.agentToken}` };
  const cookie = identityCookie(suite, entry);
  return cookie ? { cookie } : {};
}

export function withCookie(request: InjectOptions, cookie: string | undefined): InjectOptions {
  return cookie ? { ...request, headers: { ...request.headers, cookie } } : request;
}
