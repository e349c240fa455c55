import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NOTIFICATION_KINDS,
  type NotificationKind,
  type NotificationList,
  type PushPayload,
} from '@sideport/contracts';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { pushDeliveries, pushSubscriptions, settings } from '../../db/schema/index.js';
import { until } from '../../test/agent-process.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { startPushService, type BrowserSubscription, type PushService } from '../../test/push-service.js';

const APP_ID = 7400;
const APP_VER_ID = 874000001;
const BUNDLE_ID = 'com.example.notifyme';

/**
 * Web Push against a local push service written from RFC 8030/8291/8292 (src/test/push-service.ts):
 * it checks each push's VAPID signature and decrypts its payload with the browser's own keys, so
 * what it records is what a browser would show.
 */
describe.each(databaseKinds)('notifications on %s', (kind) => {
  let t: TestApp;
  let push: PushService;
  let store: ItunesServer;
  let seq = 0;

  const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, cookie: string, payload?: object) =>
    t.app.inject({ method, url, headers: { cookie, ...WEB_CLIENT }, ...(payload ? { payload } : {}) });
  async function newUser(name: string) {
    const id = `${name}_${kind}_${++seq}`;
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
  const pushesTo = (browser: BrowserSubscription) =>
    push.received.filter((p) => p.endpoint === browser.endpoint).map((p) => p.payload as PushPayload);
  const notice = (kind: NotificationKind, key: string) => ({
    kind,
    key,
    title: `About ${kind}`,
    body: `Something of ${kind} changed.`,
    url: '/my',
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
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await push?.close();
    await store?.close();
  });

  it('makes the VAPID key pair at first start and keeps it sealed with the other secrets', async () => {
    const { cookie } = await newUser('vapid');
    const res = await send('GET', '/api/notifications/vapid-key', cookie);
    expect(res.statusCode).toBe(200);
    const { key } = res.json() as { key: string };
    // An uncompressed P-256 point: 65 bytes, first 0x04.
    expect(Buffer.from(key, 'base64url')).toHaveLength(65);
    expect(Buffer.from(key, 'base64url')[0]).toBe(4);
    const [row] = await t.database.db.select().from(settings).where(eq(settings.key, 'vapid_keys'));
    expect(row!.value.startsWith('v1.')).toBe(true);
    expect(row!.value).not.toContain(key);
  });

  it('pushes each kind to every browser of the right user only, encrypted to its keys and signed with the VAPID key', async () => {
    const alice = await newUser('alice');
    const bob = await newUser('bob');
    const [phone, laptop] = [await subscribe(alice.cookie), await subscribe(alice.cookie)];
    const bobsPhone = await subscribe(bob.cookie);
    const { key } = (await send('GET', '/api/notifications/vapid-key', alice.cookie)).json() as {
      key: string;
    };

    for (const k of NOTIFICATION_KINDS)
      await t.services.notifications.notify(alice.id, notice(k, `test:${k}`));
    // The same change heard again (another process) is told once.
    await t.services.notifications.notify(alice.id, notice('decrypt-done', 'test:decrypt-done'));

    for (const browser of [phone, laptop]) {
      const got = await until(`every kind at ${browser.endpoint}`, async () => {
        const payloads = pushesTo(browser);
        return payloads.length >= NOTIFICATION_KINDS.length ? payloads : undefined;
      });
      expect(got.map((p) => p.kind).sort()).toEqual([...NOTIFICATION_KINDS].sort());
      expect(got.find((p) => p.kind === 'update-ready')).toMatchObject({
        title: 'About update-ready',
        body: 'Something of update-ready changed.',
        url: '/my',
      });
    }
    expect(pushesTo(bobsPhone)).toEqual([]);
    expect(push.refused).toEqual([]);
    for (const received of push.received.filter((p) => p.endpoint === phone.endpoint)) {
      expect(received.vapidKey).toBe(key);
      expect(received.jwt.sub).toBe('https://sideport.example');
      expect(received.ttl).toBe('86400');
    }
    // The bell's list has them, unread, until read.
    const list = (await send('GET', '/api/notifications', alice.cookie)).json() as NotificationList;
    expect(list.unread).toBe(NOTIFICATION_KINDS.length);
    expect(list.notifications).toHaveLength(NOTIFICATION_KINDS.length);
    expect((await send('POST', '/api/notifications/read', alice.cookie)).statusCode).toBe(204);
    expect(((await send('GET', '/api/notifications', alice.cookie)).json() as NotificationList).unread).toBe(
      0,
    );
    expect(((await send('GET', '/api/notifications', bob.cookie)).json() as NotificationList).unread).toBe(0);
  });

  it('tells a person of their device Registered and their sign ready, from the changes themselves', async () => {
    const carol = await newUser('carol');
    const phone = await subscribe(carol.cookie);
    const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await enrollDevice(t, carol.cookie, { UDID: '00008110-00000000ABCE7401', PRODUCT: 'iPhone15,2' });
    await payForDevice(t, carol.cookie, 0);
    await until('the device to be Registered', async () =>
      (await deviceInfo(t, carol.cookie))[0]?.status === 'Registered' ? true : undefined,
    );
    const registered = await until('the Registered push', async () =>
      pushesTo(phone).find((p) => p.kind === 'device-registered'),
    );
    expect(registered).toMatchObject({ url: '/my?tab=device' });

    expect(
      (await send('PUT', `/api/sign/${APP_ID}/${APP_VER_ID}`, carol.cookie, { type: 0 })).statusCode,
    ).toBe(200);
    const ready = await until('the sign-ready push', async () =>
      pushesTo(phone).find((p) => p.kind === 'sign-ready'),
    );
    expect(ready).toMatchObject({ title: `App ${APP_ID} is ready to install` });
  });

  it('sends nothing of a kind the person turned off', async () => {
    const dave = await newUser('dave');
    const phone = await subscribe(dave.cookie);
    const off = await send('PUT', '/api/notifications/choices', dave.cookie, { 'sign-ready': false });
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json()).toMatchObject({ 'sign-ready': false, 'update-ready': true });
    await t.services.notifications.notify(dave.id, notice('sign-ready', 'off:1'));
    await t.services.notifications.notify(dave.id, notice('update-ready', 'off:2'));
    await until('the update-ready push', async () => (pushesTo(phone).length > 0 ? true : undefined));
    expect(pushesTo(phone).map((p) => p.kind)).toEqual(['update-ready']);
    const list = (await send('GET', '/api/notifications', dave.cookie)).json() as NotificationList;
    expect(list.notifications.map((n) => n.kind)).toEqual(['update-ready']);
  });

  it('removes a subscription its push service answers 410 for, and keeps sending to the others', async () => {
    const erin = await newUser('erin');
    const [gone, kept] = [await subscribe(erin.cookie), await subscribe(erin.cookie)];
    push.answer.set(gone.endpoint, { status: 410 });
    await t.services.notifications.notify(erin.id, notice('decrypt-done', 'gone:1'));
    await until('the push to the kept browser', async () => (pushesTo(kept).length === 1 ? true : undefined));
    const endpoints = async () =>
      (
        await t.database.db
          .select({ endpoint: pushSubscriptions.endpoint })
          .from(pushSubscriptions)
          .where(eq(pushSubscriptions.userId, erin.id))
      ).map((r) => r.endpoint);
    await until('the gone subscription to be removed', async () =>
      (await endpoints()).length === 1 ? true : undefined,
    );
    expect(await endpoints()).toEqual([kept.endpoint]);
    expect(pushesTo(gone)).toEqual([]);
  });

  it('queues nothing for a person with no subscription', async () => {
    const frank = await newUser('frank');
    const browser = await subscribe(frank.cookie);
    const removed = await send('DELETE', '/api/notifications/subscriptions', frank.cookie, {
      endpoint: browser.endpoint,
    });
    expect(removed.statusCode).toBe(204);
    await t.services.notifications.notify(frank.id, notice('decrypt-done', 'none:1'));
    const [queued] = await t.database.db.select({ n: sql<number>`count(*)::int` }).from(pushDeliveries);
    expect(queued!.n).toBe(0);
    expect(((await send('GET', '/api/notifications', frank.cookie)).json() as NotificationList).unread).toBe(
      1,
    );
  });

  it('refuses bad input with a sentence and changes nothing', async () => {
    const gina = await newUser('gina');
    const noKeys = await send('POST', '/api/notifications/subscriptions', gina.cookie, {
      endpoint: 'https://push.example/1',
      keys: { p256dh: 'short', auth: 'x' },
    });
    expect(noKeys.statusCode).toBe(400);
    expect(noKeys.body).toMatch(/p256dh must be a P-256 public key/);
    const browser = push.subscribe();
    const notHttps = await send('POST', '/api/notifications/subscriptions', gina.cookie, {
      endpoint: 'ftp://push.example/1',
      keys: browser.keys,
    });
    expect(notHttps.statusCode).toBe(400);
    expect(notHttps.body).toBe('endpoint must be an https URL of a push service.');
    const badKind = await send('PUT', '/api/notifications/choices', gina.cookie, { bogus: false });
    expect(badKind.statusCode).toBe(400);
    const notMine = await send('DELETE', '/api/notifications/subscriptions', gina.cookie, {
      endpoint: 'https://push.example/1',
    });
    expect(notMine.statusCode).toBe(404);
    const [subs] = await t.database.db
      .select({ n: sql<number>`count(*)::int` })
      .from(pushSubscriptions)
      .where(eq(pushSubscriptions.userId, gina.id));
    expect(subs!.n).toBe(0);
  });
});
