/* global self, URL */
/*
 * Sideport's service worker: it shows Web Push notifications and opens the page a notification
 * names when it is clicked. It handles no fetch and caches nothing, so every page and answer comes
 * from the server as it is now (docs/architecture.md, Notifications).
 */
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { body: event.data ? event.data.text() : '' };
  }
  event.waitUntil(
    self.registration.showNotification(data.title || 'Sideport', {
      body: data.body || '',
      tag: data.id,
      icon: '/icon-192.png',
      data: { url: typeof data.url === 'string' ? data.url : '/', kind: data.kind },
    }),
  );
});

/** The site's own page a notification names (never another origin's). */
function pageOf(notification) {
  const url = new URL((notification.data && notification.data.url) || '/', self.location.origin);
  return url.origin === self.location.origin ? url.href : self.location.origin + '/';
}

async function openPage(href) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((w) => 'navigate' in w);
  if (open) {
    const moved = await open.navigate(href).catch(() => null);
    await (moved || open).focus().catch(() => undefined);
    if (moved) return;
  }
  await self.clients.openWindow(href);
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(openPage(pageOf(event.notification)));
});
