import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NotificationKind, PushPayload } from '@sideport/contracts';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { devices, signRequests } from '../../db/schema/index.js';
import { until } from '../../test/agent-process.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { startPushService, type BrowserSubscription, type PushService } from '../../test/push-service.js';
import { reminderFor } from './reminders.js';

const APP_ID = 7500;
const APP_VER_ID = 875000001;
const APP_VER_ID_2 = 875000002;
const BUNDLE_ID = 'com.example.remindme';
const DAY_MS = 86_400_000;

/**
 * The notifications time brings (reminders.ts), on the real server with a clock the test moves:
 * apps signed for real devices, a year of it passed in two steps, and the pass run as the periodic
 * task runs it. Recovery does not run (RECOVERY_CHECK_MINUTES 0), as in a deployment where it cannot.
 */
describe.each(databaseKinds)('reminders on %s', (kind) => {
  let t: TestApp;
  let push: PushService;
  let store: ItunesServer;
  let now = Math.floor(Date.now() / 1000) * 1000;
  let seq = 0;

  const send = (method: 'GET' | 'POST' | 'PUT', url: string, cookie: string, payload?: object) =>
    t.app.inject({ method, url, headers: { cookie, ...WEB_CLIENT }, ...(payload ? { payload } : {}) });
  async function newUser(name: string) {
    const id = `${name}_${kind}`;
    return { id, cookie: await signedInUser(t, id) };
  }
  async function subscribe(cookie: string): Promise<BrowserSubscription> {
    const browser = push.subscribe();
    const res = await send('POST', '/api/notifications/subscriptions', cookie, {
      endpoint: browser.endpoint,
      keys: browser.keys,
    });
    expect(res.statusCode, res.body).toBe(204);
    return browser;
  }
  // The bell's list as GET /api/notifications answers it (read from the service: a year on, sessions have ended).
  const listOf = async (user: { id: string }, k: NotificationKind) =>
    (await t.services.notifications.list(user.id)).notifications.filter((n) => n.kind === k);
  async function registeredDevice(user: { id: string; cookie: string }) {
    const udid = `00008110-00000000ABC${String(++seq).padStart(5, '0')}`;
    await enrollDevice(t, user.cookie, { UDID: udid, PRODUCT: 'iPhone15,2' });
    await payForDevice(t, user.cookie, 0);
    await until(`${user.id}'s device to be Registered`, async () =>
      (await deviceInfo(t, user.cookie))[0]?.status === 'Registered' ? true : undefined,
    );
  }
  /** A Done sign of the app for the user's Registered device: the artifact's row. */
  async function installedApp(user: { id: string; cookie: string }, appVerId = APP_VER_ID) {
    const res = await send('PUT', `/api/sign/${APP_ID}/${appVerId}`, user.cookie, { type: 0 });
    expect(res.statusCode, res.body).toBe(200);
    return until(`${user.id}'s sign to be Done`, async () => {
      const [row] = await t.database.db
        .select()
        .from(signRequests)
        .where(
          and(
            eq(signRequests.userId, user.id),
            eq(signRequests.appVerId, appVerId),
            eq(signRequests.status, 'Done'),
          ),
        );
      return row?.profileExpiresAt ? row : undefined;
    });
  }
  const planOf = (userId: string, endsAt: Date, endsAtPeriodEnd: boolean | undefined) =>
    t.services.billing.applyEvent({
      kind: 'subscription',
      eventId: `evt_${userId}`,
      type: 'customer.subscription.updated',
      at: new Date(now),
      subscriptionId: `sub_${userId}`,
      userId,
      plan: 0,
      status: 'active',
      periodEnd: endsAt,
      endsAtPeriodEnd,
    });

  beforeAll(async () => {
    push = await startPushService();
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    t = await createTestApp(kind, {
      env: {
        PUSH_ALLOW_HTTP: 'true',
        ITUNES_BASE_URL: store.url,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        PUBLIC_URL: 'https://sideport.example',
        RECOVERY_CHECK_MINUTES: '0',
      },
      clock: () => new Date(now),
    });
    for (const [version, appVerId] of [
      ['1.0', APP_VER_ID],
      ['1.1', APP_VER_ID_2],
    ] as const) {
      const ipa = await buildIpa({ bundleId: BUNDLE_ID, version, appVerId: String(appVerId) });
      await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    }
  });
  afterAll(async () => {
    await t?.close();
    await push?.close();
    await store?.close();
  });

  it('tells of an app needing a new sign, an end nothing renews and a plan ending, each once and only to whom wants it', async () => {
    const ana = await newUser('ana'); // needs-sign: her profile ends, recovery did not sign again
    const ben = await newUser('ben'); // the same, with needs-sign turned off
    const cleo = await newUser('cleo'); // expiring: her device is no longer Registered, nothing renews
    const dan = await newUser('dan'); // plan-ending
    const eve = await newUser('eve'); // a plan that renews: nothing
    const fay = await newUser('fay'); // plan-ending, turned off
    const hal = await newUser('hal'); // as Cleo, with expiring turned off
    const gus = await newUser('gus'); // needs-sign of the version he holds, not of the one it replaced
    const dansPhone = await subscribe(dan.cookie);
    for (const [user, off] of [
      [ben, 'needs-sign'],
      [fay, 'plan-ending'],
      [hal, 'expiring'],
    ] as const) {
      const res = await send('PUT', '/api/notifications/choices', user.cookie, { [off]: false });
      expect(res.statusCode, res.body).toBe(200);
    }

    // Plans ending in two days, today (pushes are sent now: the local push service keeps real time).
    const planEnd = new Date(now + 2 * DAY_MS);
    await planOf(dan.id, planEnd, true);
    await planOf(eve.id, planEnd, false);
    await planOf(fay.id, planEnd, true);
    await t.services.reminders.runPass();
    const pushed = await until('the plan-ending push', async () =>
      push.received
        .filter((p) => p.endpoint === dansPhone.endpoint)
        .map((p) => p.payload as PushPayload)
        .find((p) => p.kind === 'plan-ending'),
    );
    expect(pushed).toMatchObject({
      title: `Your plan ends on ${planEnd.toISOString().slice(0, 10)}`,
      body: 'Decrypt Premium monthly, 20 apps/day will not renew: choose a plan to keep premium decrypts.',
      url: '/my?tab=product',
    });
    expect(await listOf(eve, 'plan-ending')).toEqual([]);
    expect(await listOf(fay, 'plan-ending')).toEqual([]);

    for (const user of [ana, ben, cleo, hal, gus]) await registeredDevice(user);
    const anas = await installedApp(ana);
    await installedApp(ben);
    await installedApp(gus);
    now += DAY_MS;
    await installedApp(gus, APP_VER_ID_2);
    // Cleo signs later: her profile ends after her device's year does.
    now += 6 * DAY_MS;
    const cleos = await installedApp(cleo);
    await installedApp(hal);

    // Three days before Ana's profile ends: recovery (14 days before) should have signed it again and did not.
    now = anas.profileExpiresAt!.getTime() - 3 * DAY_MS;
    expect(cleos.profileExpiresAt!.getTime() - now).toBeGreaterThan(7 * DAY_MS);
    await t.services.reminders.runPass();
    await t.services.reminders.runPass(); // again, as another process would: nothing twice

    const [needsSign, ...more] = await listOf(ana, 'needs-sign');
    expect(more).toEqual([]);
    expect(needsSign).toMatchObject({
      title: `${anas.title} needs a new sign`,
      body: expect.stringMatching(
        /^Its profile expires on \d{4}-\d\d-\d\d\. Sign it again, then install it\.$/,
      ),
      url: expect.stringMatching(/^\/search\/kr\//),
    });
    expect(await listOf(ben, 'needs-sign')).toEqual([]);
    expect(await listOf(cleo, 'needs-sign')).toEqual([]);
    // Gus's two versions end together; the phone holds the later one, the one he is told of.
    expect(await listOf(gus, 'needs-sign')).toHaveLength(1);

    // A year after the devices were paid: they expire, and Cleo's profile ends within the week.
    const [cleosDevice] = await t.database.db.select().from(devices).where(eq(devices.userId, cleo.id));
    now = cleosDevice!.expiresAt!.getTime() + 3_600_000;
    await t.services.registration.runPass();
    expect((await t.database.db.select().from(devices).where(eq(devices.userId, cleo.id)))[0]?.status).toBe(
      'Expired',
    );
    expect(cleos.profileExpiresAt!.getTime() - now).toBeLessThan(7 * DAY_MS);
    await t.services.reminders.runPass();
    await t.services.reminders.runPass();

    expect(await listOf(cleo, 'expiring')).toMatchObject([
      {
        title: `${cleos.title} stops opening on ${cleos.profileExpiresAt!.toISOString().slice(0, 10)}`,
        url: '/my?tab=device',
      },
    ]);
    expect(await listOf(hal, 'expiring')).toEqual([]);
    for (const other of [ana, ben, dan, gus]) expect(await listOf(other, 'expiring')).toEqual([]);
    // Ana's artifact has ended by now: still the one notification of it.
    expect(await listOf(ana, 'needs-sign')).toHaveLength(1);
    expect(await listOf(ben, 'needs-sign')).toEqual([]);
    expect(await listOf(dan, 'plan-ending')).toHaveLength(1);
  });

  it('leaves to recovery what it signs again by itself, and tells of what it gave up', () => {
    const at = new Date('2027-01-10T00:00:00Z');
    const artifact = {
      userId: 'u',
      artifactId: 'a',
      title: 'App',
      lastReason: null,
      certFingerprint: 'c',
      certNotAfter: new Date('2028-01-01T00:00:00Z'),
      certRevoked: false,
      profileUuid: 'p',
      profileExpiresAt: new Date('2027-01-15T00:00:00Z'),
      country: 'KR',
      name: 'App',
    };
    const context = { now: at, renewBeforeMs: 14 * DAY_MS, canSign: true };
    // Recovery's point passed more than a day ago and it is still at rest: left.
    expect(reminderFor(artifact, context)).toMatchObject({ kind: 'needs-sign' });
    // Recovery renews only 3 days ahead: not its turn yet.
    expect(reminderFor(artifact, { ...context, renewBeforeMs: 3 * DAY_MS })).toBeUndefined();
    // A revoked certificate is recovery's at once; a re-sign it gave up is the owner's.
    expect(reminderFor({ ...artifact, certRevoked: true, profileExpiresAt: null }, context)).toBeUndefined();
    expect(
      reminderFor({ ...artifact, certRevoked: true, lastReason: 'failed', profileExpiresAt: null }, context),
    ).toMatchObject({ kind: 'needs-sign', why: 'Its signing certificate was revoked.' });
    // Nobody signs for the user: an end still ahead is 'expiring', one passed 'needs-sign'.
    expect(reminderFor(artifact, { ...context, canSign: false })).toMatchObject({
      kind: 'expiring',
      subject: 'profile',
      id: 'p',
    });
    expect(
      reminderFor(artifact, { ...context, canSign: false, now: new Date('2027-01-16T00:00:00Z') }),
    ).toMatchObject({ kind: 'needs-sign', why: 'Its profile expired on 2027-01-15.' });
  });
});
