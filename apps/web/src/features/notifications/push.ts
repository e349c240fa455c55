import { removeSubscription, saveSubscription, vapidKey } from './queries';

/** The service worker of public/sw.js: it shows pushes and opens their page on a click; it caches nothing. */
const WORKER_URL = '/sw.js';

/** Whether this browser can receive Web Push here (iPhone: only the web app added to the Home Screen, iOS 16.4+). */
export const canPush = () =>
  typeof window !== 'undefined' &&
  'serviceWorker' in navigator &&
  'PushManager' in window &&
  'Notification' in window;

/** Whether the page runs as the web app added to the Home Screen (or an installed app elsewhere). */
export const isStandalone = () =>
  window.matchMedia('(display-mode: standalone)').matches ||
  (navigator as Navigator & { standalone?: boolean }).standalone === true;

const toBytes = (base64url: string) => {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
};

/** This browser's current subscription, if it has one. */
export async function currentSubscription(): Promise<PushSubscription | null> {
  if (!canPush()) return null;
  const registration = await navigator.serviceWorker.getRegistration('/');
  return (await registration?.pushManager.getSubscription()) ?? null;
}

/**
 * Turns notifications on in this browser: asks the person's permission, registers the service
 * worker, subscribes with the server's VAPID key and hands the subscription to the server.
 */
export async function enablePush(): Promise<void> {
  if ((await Notification.requestPermission()) !== 'granted')
    throw new Error('Notifications are not allowed for this site: allow them in the browser settings.');
  const registration = await navigator.serviceWorker.register(WORKER_URL, { scope: '/' });
  await navigator.serviceWorker.ready;
  const { key } = await vapidKey();
  let subscription: PushSubscription;
  try {
    subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: toBytes(key),
    });
  } catch {
    throw new Error("This browser's push service could not be reached. Please retry later.");
  }
  await saveSubscription(subscription.toJSON());
}

/** Turns them off in this browser: the subscription ends here and on the server. */
export async function disablePush(): Promise<void> {
  const subscription = await currentSubscription();
  if (!subscription) return;
  await removeSubscription(subscription.endpoint);
  await subscription.unsubscribe();
}
