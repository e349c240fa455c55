/**
 * The declared access of every route the server registers: one line per route, keyed
 * 'METHOD /pattern' exactly as fastify registers it (HEAD routes stand with their GET).
 *
 * A route that is registered but missing here fails src/route-access.test.ts, which prints the
 * line to add. Each line says who may call the route and gives an example request that this
 * caller makes successfully; the suites build on it:
 *   - route-access.test.ts: signed out 401, users 403 on admin routes, other users never reach an
 *     owner's data, agent / signed-URL / webhook routes ignore session cookies;
 *   - cross-site.test.ts: every state-changing route (every method but GET and HEAD, and GETs
 *     marked `changesState`) refused cross-site, in raw and percent-encoded forms;
 *   - fuzz.test.ts: bad input, generated from the route's zod schemas around the example.
 */

/**
 * public      anyone, signed in or not
 * user        a signed-in user (401 signed out)
 * owner       a signed-in user, on their own data: another user's is refused and left unchanged
 * admin       grade above 0 (401 signed out, 403 'Do not have permission.' for users)
 * agent       a decrypt agent's bearer token; session cookies count for nothing
 * signed-url  a signed, expiring URL (OTA manifests, downloads); session cookies count for nothing
 * webhook     the payment provider's signature; session cookies count for nothing
 * enrollment  a device's signed answer to its one-time enrollment URL; session cookies count for nothing
 * page        the web app's files and pages (not the API)
 */
export type Access =
  'public' | 'user' | 'owner' | 'admin' | 'agent' | 'signed-url' | 'webhook' | 'enrollment' | 'page';

/** What the suites seed for each route: fresh catalogue entries and a checkout owned by `user`. */
export interface Fixtures {
  users: { user: string; other: string; admin: string };
  /** An id no account has yet. */
  freshId: string;
  /** A Done version (the latest list). */
  done: { appId: number; appVerId: number };
  /** A Pending version entry of the queue. */
  queued: { appId: number; appVerId: number };
  /** An app-level Pending entry: its version is not known yet (app_ver_id 0 in the API). */
  appLevel: { appId: number };
  /** A test-mode checkout id of `user` (dev billing only). */
  checkout: string;
  /** A signed artifact of `user` (mode `type` of a Done version), current for their one Registered device. */
  signed: { appId: number; appVerId: number; type: number; artifactId: string };
}

export type ExampleRequest = string | { url: string; payload?: unknown };

export interface RouteAccess {
  access: Access;
  /** A request the allowed caller makes successfully. */
  example: ExampleRequest | ((fx: Fixtures) => ExampleRequest);
  /**
   * A GET that changes state (docs/product.md, Calls: decrypt, pay, portal): cross-site checked as a
   * POST is. The route says so too (`config: { changesState: true }`); route-access.test.ts checks
   * that the two agree.
   */
  changesState?: true;
  /**
   * An answer that never ends (Server-Sent Events): refusals are checked as usual, but the allowed
   * caller's request is not, since it would stay open (src/modules/events/live.test.ts covers it).
   */
  stream?: true;
  /** A POST, PUT or PATCH that takes no body (sign-out, the premium-queue PATCH, the product's own calls). */
  bodyless?: true;
}

/** md5 of a password, as the web client sends it; every suite account has it. */
export const SUITE_PASSWORD_MD5 = 'a'.repeat(32);

export const routeKey = (method: string, url: string) => `${method} ${url}`;

export const ROUTE_ACCESS: Record<string, RouteAccess> = {
  // Accounts (docs/product.md, Calls)
  'POST /api/sign-up': {
    access: 'public',
    example: (fx) => ({ url: '/api/sign-up', payload: { id: fx.freshId, pw: SUITE_PASSWORD_MD5 } }),
  },
  'POST /api/sign-in': {
    access: 'public',
    example: (fx) => ({ url: '/api/sign-in', payload: { id: fx.users.user, pw: SUITE_PASSWORD_MD5 } }),
  },
  // The first admin's one-time setup link (the suites have an admin already: the link is closed)
  'GET /api/setup/:token': { access: 'public', example: `/api/setup/${'A'.repeat(43)}` },
  'POST /api/setup/:token': {
    access: 'public',
    example: (fx) => ({
      url: `/api/setup/${'A'.repeat(43)}`,
      payload: { id: fx.freshId, pw: SUITE_PASSWORD_MD5 },
    }),
  },
  'POST /api/sign-out': { access: 'public', bodyless: true, example: '/api/sign-out' },
  // A one-time token for a navigation that changes state (docs/security.md, Cross-site requests)
  'POST /api/navigation-tokens': {
    access: 'user',
    example: { url: '/api/navigation-tokens', payload: { path: '/api/udid/profile' } },
  },
  'GET /api/info': { access: 'user', example: '/api/info' },

  // Catalogue
  'GET /api/latest/:page': { access: 'public', example: '/api/latest/0?anchor=1' },
  'GET /api/queue/:page': { access: 'public', example: '/api/queue/0' },
  'GET /api/queue-status': { access: 'public', example: '/api/queue-status' },
  'GET /api/search/:country/*': { access: 'user', example: '/api/search/kr/facebook' },
  'DELETE /api/app/:app_id/:app_ver_id': {
    access: 'admin',
    example: (fx) => `/api/app/${fx.done.appId}/${fx.done.appVerId}`,
  },
  'DELETE /api/queue/:app_id/:app_ver_id': {
    access: 'admin',
    example: (fx) => `/api/queue/${fx.queued.appId}/${fx.queued.appVerId}`,
  },
  'DELETE /api/queue/black/:app_id/:app_ver_id': {
    access: 'admin',
    example: (fx) => `/api/queue/black/${fx.appLevel.appId}/0`,
  },

  // Billing
  'GET /api/pay/service/:n': { access: 'user', changesState: true, example: '/api/pay/service/0' },
  'GET /api/pay/device/:index': { access: 'user', changesState: true, example: '/api/pay/device/0' },
  'GET /api/portal': { access: 'user', changesState: true, example: '/api/portal' },
  'GET /api/premium': { access: 'user', example: '/api/premium' },
  'POST /api/webhooks/stripe': { access: 'webhook', example: { url: '/api/webhooks/stripe', payload: {} } },
  'GET /billing/dev-checkout/:id': {
    access: 'owner',
    example: (fx) => `/billing/dev-checkout/${fx.checkout}`,
  },
  'POST /billing/dev-checkout/:id/pay': {
    access: 'owner',
    example: (fx) => `/billing/dev-checkout/${fx.checkout}/pay`,
  },
  'POST /billing/dev-checkout/:id/cancel': {
    access: 'owner',
    example: (fx) => `/billing/dev-checkout/${fx.checkout}/cancel`,
  },
  'GET /billing/dev-portal': { access: 'user', example: '/billing/dev-portal' },

  // Decrypt requests, versions and downloads (docs/product.md, Calls)
  'GET /api/decrypt/:country/:app_id': {
    access: 'user',
    changesState: true,
    example: (fx) => `/api/decrypt/kr/${fx.done.appId}`,
  },
  'GET /api/decrypt/:country/:app_id/:app_ver_id': {
    access: 'user',
    changesState: true,
    example: (fx) => `/api/decrypt/kr/${fx.done.appId}/${fx.done.appVerId}`,
  },
  'PATCH /api/decrypt/:country/:app_id': {
    access: 'user',
    bodyless: true,
    example: (fx) => `/api/decrypt/kr/${fx.appLevel.appId}`,
  },
  'PATCH /api/decrypt/:country/:app_id/:app_ver_id': {
    access: 'user',
    bodyless: true,
    example: (fx) => `/api/decrypt/kr/${fx.queued.appId}/${fx.queued.appVerId}`,
  },
  'GET /api/version/:country/:app_id': {
    access: 'user',
    example: (fx) => `/api/version/kr/${fx.done.appId}`,
  },
  'POST /api/version/:country/:app_id': {
    access: 'user',
    bodyless: true,
    example: (fx) => `/api/version/kr/${fx.done.appId}`,
  },
  'GET /api/download/:app_id/:app_ver_id': {
    access: 'user',
    example: (fx) => `/api/download/${fx.done.appId}/${fx.done.appVerId}`,
  },
  'GET /files/ipa/:app_id/:app_ver_id': {
    access: 'signed-url',
    example: (fx) =>
      `/files/ipa/${fx.done.appId}/${fx.done.appVerId}?expires=9999999999&sig=${'0'.repeat(64)}`,
  },
  'GET /api/events': { access: 'user', stream: true, example: '/api/events' },

  // The sign service (docs/product.md, Calls; docs/sign-service.md)
  'PUT /api/sign/:app_id/:app_ver_id': {
    access: 'user',
    example: (fx) => ({ url: `/api/sign/${fx.done.appId}/${fx.done.appVerId}`, payload: { type: 0 } }),
  },
  'GET /api/check/sign/:app_id/:app_ver_id/:type': {
    access: 'owner',
    example: (fx) => `/api/check/sign/${fx.signed.appId}/${fx.signed.appVerId}/${fx.signed.type}`,
  },
  'GET /api/install/:app_id/:app_ver_id/:type': {
    access: 'owner',
    example: (fx) => `/api/install/${fx.signed.appId}/${fx.signed.appVerId}/${fx.signed.type}`,
  },
  'GET /api/admin/capabilities': { access: 'admin', example: '/api/admin/capabilities' },
  'GET /api/admin/capabilities/copy-app-ids': {
    access: 'admin',
    example: '/api/admin/capabilities/copy-app-ids',
  },
  'PUT /api/admin/capabilities/copy-app-ids': {
    access: 'admin',
    example: { url: '/api/admin/capabilities/copy-app-ids', payload: { enabled: false } },
  },
  // After the install's 409 TEAM_MOVED (issue 30): the caller read what a move of team means.
  'POST /api/team-move/acknowledge': {
    access: 'user',
    bodyless: true,
    example: '/api/team-move/acknowledge',
  },
  // Updates of installed apps (modules/updates)
  'GET /api/updates': { access: 'user', example: '/api/updates' },
  'POST /api/updates/:app_id/:type': {
    access: 'owner',
    bodyless: true,
    example: (fx) => `/api/updates/${fx.signed.appId}/${fx.signed.type}`,
  },
  'GET /api/updates/auto': { access: 'user', example: '/api/updates/auto' },
  'PUT /api/updates/auto': {
    access: 'user',
    example: { url: '/api/updates/auto', payload: { app_id: null, enabled: false } },
  },
  'GET /api/admin/updates': { access: 'admin', example: '/api/admin/updates' },
  'POST /api/admin/updates/check': { access: 'admin', bodyless: true, example: '/api/admin/updates/check' },
  'PUT /api/admin/updates/cap': {
    access: 'admin',
    example: { url: '/api/admin/updates/cap', payload: { cap: null } },
  },
  // Notifications (modules/notifications)
  'GET /api/notifications': { access: 'user', example: '/api/notifications' },
  'POST /api/notifications/read': { access: 'user', bodyless: true, example: '/api/notifications/read' },
  'GET /api/notifications/choices': { access: 'user', example: '/api/notifications/choices' },
  'PUT /api/notifications/choices': {
    access: 'user',
    example: { url: '/api/notifications/choices', payload: { 'plan-ending': false } },
  },
  'GET /api/notifications/vapid-key': { access: 'user', example: '/api/notifications/vapid-key' },
  'POST /api/notifications/subscriptions': {
    access: 'user',
    example: {
      url: '/api/notifications/subscriptions',
      payload: {
        endpoint: 'https://push.example/subscription/1',
        keys: {
          p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM',
          auth: 'tBHItJI5svbpez7KI4CCXg',
        },
      },
    },
  },
  'DELETE /api/notifications/subscriptions': {
    access: 'user',
    example: {
      url: '/api/notifications/subscriptions',
      payload: { endpoint: 'https://push.example/subscription/1' },
    },
  },

  // Both sign or export for the caller's devices: refused cross-site like a POST.
  'GET /api/feather/install': { access: 'user', changesState: true, example: '/api/feather/install' },
  'GET /api/feather/cert': { access: 'user', changesState: true, example: '/api/feather/cert' },
  'GET /files/sign/:artifact_id/manifest.plist': {
    access: 'signed-url',
    example: (fx) =>
      `/files/sign/${fx.signed.artifactId}/manifest.plist?expires=9999999999&sig=${'0'.repeat(64)}`,
  },
  'GET /files/sign/:artifact_id/app.ipa': {
    access: 'signed-url',
    example: (fx) => `/files/sign/${fx.signed.artifactId}/app.ipa?expires=9999999999&sig=${'0'.repeat(64)}`,
  },
  'GET /files/feather/cert/:token': {
    access: 'signed-url',
    example: `/files/feather/cert/v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA?expires=9999999999&sig=${'0'.repeat(64)}`,
  },

  // The decrypt agents' protocol (bearer token)
  'POST /api/agent/claim': { access: 'agent', example: { url: '/api/agent/claim', payload: {} } },
  'POST /api/agent/jobs/:id/heartbeat': {
    access: 'agent',
    example: { url: '/api/agent/jobs/1-1/heartbeat', payload: { progress: 1 } },
  },
  'POST /api/agent/jobs/:id/fail': {
    access: 'agent',
    example: { url: '/api/agent/jobs/1-1/fail', payload: { reason: 'No.' } },
  },
  'POST /api/agent/jobs/:id/versions': {
    access: 'agent',
    example: { url: '/api/agent/jobs/1-1/versions', payload: { versions: [] } },
  },
  'PUT /api/agent/jobs/:id/ipa': {
    access: 'agent',
    example: { url: '/api/agent/jobs/1-1/ipa', payload: { not: 'an ipa' } },
  },

  // The admin console
  'POST /api/admin/agents': {
    access: 'admin',
    example: { url: '/api/admin/agents', payload: { name: 'route agent' } },
  },
  'GET /api/admin/agents': { access: 'admin', example: '/api/admin/agents' },
  'DELETE /api/admin/agents/:id': { access: 'admin', example: '/api/admin/agents/999999' },
  'GET /api/admin/queue/:page': { access: 'admin', example: '/api/admin/queue/0' },
  'POST /api/admin/queue/:id/retry': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/queue/999999/retry',
  },
  'GET /api/admin/audit/:page': { access: 'admin', example: '/api/admin/audit/0' },
  'GET /api/admin/setup': { access: 'admin', example: '/api/admin/setup' },

  // Devices: enrollment (docs/sign-service.md) and the admin console
  'GET /api/udid/profile': { access: 'user', changesState: true, example: '/api/udid/profile' },
  'POST /api/udid/enroll/:token': { access: 'enrollment', example: `/api/udid/enroll/${'A'.repeat(43)}` },
  'GET /api/admin/devices': { access: 'admin', example: '/api/admin/devices' },
  'POST /api/admin/devices/:id/confirm': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/devices/999999/confirm',
  },
  'POST /api/admin/devices/:id/retry': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/devices/999999/retry',
  },
  'GET /api/admin/identity': { access: 'admin', example: '/api/admin/identity' },
  'GET /api/admin/identity/ca.pem': { access: 'admin', example: '/api/admin/identity/ca.pem' },
  // A new Feather certificate after a leak (docs/sign-service.md, Feather); audited
  'POST /api/admin/identity/feather-cert/rotate': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/identity/feather-cert/rotate',
  },
  // The pool of developer accounts (docs/sign-service.md); the suites sign with the dev identity, which has none
  'GET /api/admin/accounts': { access: 'admin', example: '/api/admin/accounts' },
  'POST /api/admin/accounts': {
    access: 'admin',
    example: {
      url: '/api/admin/accounts',
      payload: {
        key_id: 'KEY7654321',
        issuer_id: '69a6de70-0000-47e3-e053-5b8c7c11a4d2',
        private_key: 'not a key',
      },
    },
  },
  'PATCH /api/admin/accounts/:id': {
    access: 'admin',
    example: { url: '/api/admin/accounts/999999', payload: { membership_renews_at: null } },
  },
  'POST /api/admin/accounts/:id/disable': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/accounts/999999/disable',
  },
  'POST /api/admin/accounts/:id/enable': {
    access: 'admin',
    bodyless: true,
    example: '/api/admin/accounts/999999/enable',
  },

  // Service
  'GET /api/openapi.json': { access: 'public', example: '/api/openapi.json' },
  'GET /api/config': { access: 'public', example: '/api/config' },

  'GET /healthz': { access: 'public', example: '/healthz' },
  'GET /readyz': { access: 'public', example: '/readyz' },
  // Loopback callers only, or every caller with METRICS_TOKEN (src/modules/metrics/metrics.test.ts); inject is loopback.
  'GET /metrics': { access: 'public', example: '/metrics' },

  // The web app
  'GET /': { access: 'page', example: '/' },
  'GET /*': { access: 'page', example: '/assets/app-1234.js' },
};

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Whether the cross-site guard must refuse this route from another site. */
export const changesState = (method: string, entry: RouteAccess) =>
  !SAFE_METHODS.has(method) || entry.changesState === true;

/** Kinds that authenticate on their own and are exempt from the cross-site guard. */
export const SELF_AUTHENTICATED: ReadonlySet<Access> = new Set([
  'agent',
  'signed-url',
  'webhook',
  'enrollment',
]);
