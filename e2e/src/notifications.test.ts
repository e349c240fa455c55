import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushPayload } from '@sideport/contracts';
import { caller, sessionCookie } from './api-client.js';
import { registeredDevice } from './device-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

let server: RunningServer;
let browser: Browser;

beforeAll(async () => {
  server = await startServer(newDataDir());
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Signed in through the form, with notifications allowed for the site. */
async function signedIn(id: string, viewport?: { width: number; height: number }, userAgent?: string) {
  const s = await openSession(browser, server.url, viewport, undefined, userAgent ? { userAgent } : {});
  await s.context.grantPermissions(['notifications'], { origin: server.url });
  await submitSignIn(s, id);
  await s.page.waitForURL((u) => u.pathname === '/');
  return s;
}

/** What the page's service worker registration shows as notifications now. */
const shown = (s: Session) =>
  s.page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return (await registration.getNotifications()).map((n) => ({
      title: n.title,
      body: n.body,
      url: (n.data as { url: string }).url,
    }));
  });

describe('notifications in the browser', () => {
  it('registers the service worker, subscribes with the VAPID key, shows a push and opens its page on a click', async () => {
    await sessionCookie(server, 'pushreader');
    const s = await signedIn('pushreader');
    // What the page hands pushManager.subscribe, recorded before Chromium asks its push service
    // (which cannot be reached from here).
    await s.page.addInitScript(() => {
      const original = PushManager.prototype.subscribe;
      const asked: string[] = [];
      (window as unknown as { subscribeKeys: string[] }).subscribeKeys = asked;
      PushManager.prototype.subscribe = function (options?: PushSubscriptionOptionsInit) {
        const key = options?.applicationServerKey as Uint8Array;
        asked.push(
          btoa(String.fromCharCode(...key))
            .replace(/\+/g, '-')
            .replace(/\//g, '_')
            .replace(/=+$/, ''),
        );
        return original.call(this, options);
      };
    });
    await s.page.goto('/my?tab=notifications');
    await s.page.getByRole('button', { name: 'Turn on' }).click();
    const cookie = await sessionCookie(server, 'pushreader', { signIn: true });
    const { key } = await caller(server, cookie).json<{ key: string }>('GET', '/api/notifications/vapid-key');
    await expect
      .poll(() => s.page.evaluate(() => (window as unknown as { subscribeKeys: string[] }).subscribeKeys))
      .toEqual([key]);
    const worker = await s.page.evaluate(async () => {
      const registration = await navigator.serviceWorker.ready;
      return { script: registration.active?.scriptURL, scope: registration.scope };
    });
    expect(worker).toEqual({ script: `${server.url}/sw.js`, scope: `${server.url}/` });

    // A push, delivered to the service worker through the DevTools protocol.
    const cdp = await s.context.newCDPSession(s.page);
    const registrationId = new Promise<string>((resolve) =>
      cdp.on(
        'ServiceWorker.workerRegistrationUpdated',
        (event: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
          const found = event.registrations.find((r) => r.scopeURL === `${server.url}/`);
          if (found) resolve(found.registrationId);
        },
      ),
    );
    await cdp.send('ServiceWorker.enable');
    const payload: PushPayload = {
      id: '1',
      kind: 'update-ready',
      title: 'The update to 2.0 is ready to install',
      body: 'Install it on your iPhone.',
      url: '/my?tab=updates',
    };
    await cdp.send('ServiceWorker.deliverPushMessage', {
      origin: server.url,
      registrationId: await registrationId,
      data: JSON.stringify(payload),
    });
    await expect
      .poll(() => shown(s))
      .toEqual([{ title: payload.title, body: payload.body, url: '/my?tab=updates' }]);

    // Its click (dispatched in the worker: the DevTools protocol has no notification click) opens its page.
    const [sw] = s.context.serviceWorkers();
    await sw!.evaluate(async () => {
      // Worker-scope names the page's type library does not declare.
      const scope = self as unknown as {
        registration: ServiceWorkerRegistration;
        dispatchEvent(event: Event): boolean;
        NotificationEvent: new (type: string, init: { notification: Notification }) => Event;
      };
      const [notification] = await scope.registration.getNotifications();
      const event = new scope.NotificationEvent('notificationclick', { notification: notification! });
      let done: Promise<unknown> = Promise.resolve();
      Object.defineProperty(event, 'waitUntil', { value: (p: Promise<unknown>) => (done = p) });
      scope.dispatchEvent(event);
      await done;
    });
    await s.page.waitForURL((u) => u.pathname === '/my' && u.search === '?tab=updates');
    expect(await shown(s)).toEqual([]);
  });

  it("shows the bell's unread count live as notifications are made, and lists them", async () => {
    const cookie = await sessionCookie(server, 'bellreader');
    const s = await signedIn('bellreader', IPHONE_VIEWPORT, IPHONE_USER_AGENT);
    const bell = s.page.getByTestId('notification-bell');
    await expect.poll(() => bell.getAttribute('aria-label')).toBe('Notifications');
    // A device Registered (the dev identity registers at once) tells its owner.
    await registeredDevice(server, cookie, { PRODUCT: 'iPhone15,2', UDID: '00008120-001A2B3C4D5E7501' });
    await expect.poll(() => s.page.getByTestId('notification-count').innerText()).toBe('1');
    await bell.click();
    const item = s.page.locator('.notification-item').first();
    await expect.poll(() => item.innerText()).toMatch(/is Registered/);
    await expect.poll(() => s.page.getByTestId('notification-count').count()).toBe(0);
    await item.click();
    await s.page.waitForURL((u) => u.pathname === '/my' && u.search === '?tab=device');
    // On an iPhone in Safari the Notifications tab shows how to add the app to the Home Screen.
    await s.page.goto('/my?tab=notifications');
    await expect.poll(() => s.page.getByTestId('iphone-guide').isVisible()).toBe(true);
  });
});
