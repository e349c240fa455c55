// zod/mini, like account.ts: My page and the navigation bar parse these in the web app.
import * as z from 'zod/mini';

/**
 * What a person can be told of (docs/architecture.md, Notifications), each with its own choice on
 * My page: on by default, off for a kind the person turned off.
 */
export const NOTIFICATION_KINDS = [
  'decrypt-done',
  'sign-ready',
  'update-ready',
  'device-registered',
  'device-refused',
  'resigned',
  'needs-sign',
  'expiring',
  'plan-ending',
] as const;
export const notificationKind = z.enum(NOTIFICATION_KINDS);
export type NotificationKind = z.infer<typeof notificationKind>;

/** As My page's choices name each kind. */
export const NOTIFICATION_KIND_LABELS: Record<NotificationKind, string> = {
  'decrypt-done': 'A decrypt I asked for is Done',
  'sign-ready': 'A sign is ready to install',
  'update-ready': 'An update is ready to install',
  'device-registered': 'A device is Registered',
  'device-refused': 'A device registration was refused',
  resigned: 'An app was re-signed after a revocation',
  'needs-sign': 'An app needs a new sign',
  expiring: 'A certificate or profile expires with nothing to renew it',
  'plan-ending': 'My plan is ending',
};

/** One notification of the in-app list (the bell); the same a push shows. `url` is a path of the site. */
export const notificationEntry = z.object({
  id: z.string(),
  kind: notificationKind,
  title: z.string(),
  body: z.string(),
  url: z.string(),
  /** ISO times. */
  created_at: z.string(),
  read_at: z.nullable(z.string()),
});
export type NotificationEntry = z.infer<typeof notificationEntry>;

/** GET /api/notifications: the newest notifications and how many are unread. */
export const notificationList = z.object({
  unread: z.int(),
  notifications: z.array(notificationEntry),
});
export type NotificationList = z.infer<typeof notificationList>;

/** GET and PUT /api/notifications/choices: each kind on or off. */
export const notificationChoices = z.record(notificationKind, z.boolean());
export type NotificationChoices = z.infer<typeof notificationChoices>;

/** PUT /api/notifications/choices body: the kinds to change. */
export const notificationChoiceChange = z.partialRecord(notificationKind, z.boolean());

/** GET /api/notifications/vapid-key: the server's VAPID public key (base64url), for pushManager.subscribe. */
export const vapidKeyAnswer = z.object({ key: z.string() });

/** POST /api/notifications/subscriptions: a browser's PushSubscription as its toJSON() gives it. */
export const pushSubscriptionBody = z.object(
  {
    endpoint: z.string().check(z.maxLength(2000, 'endpoint is too long.')),
    keys: z.object({
      p256dh: z
        .string()
        .check(z.regex(/^[A-Za-z0-9_-]{80,100}={0,2}$/, 'keys.p256dh must be a P-256 public key.')),
      auth: z
        .string()
        .check(z.regex(/^[A-Za-z0-9_-]{16,24}={0,2}$/, 'keys.auth must be 16 bytes, base64url.')),
    }),
  },
  { error: 'Send the PushSubscription: {endpoint, keys: {p256dh, auth}}.' },
);
export type PushSubscriptionBody = z.infer<typeof pushSubscriptionBody>;

/** DELETE /api/notifications/subscriptions body: the endpoint of the subscription to remove. */
export const pushUnsubscribeBody = z.object(
  { endpoint: z.string().check(z.maxLength(2000, 'endpoint is too long.')) },
  { error: 'Send {endpoint}.' },
);

/** Live event: a notification was made for the caller (the bell's count follows). */
export const notificationEvent = z.object({
  type: z.literal('notification'),
  id: z.string(),
  kind: notificationKind,
});
export type NotificationEvent = z.infer<typeof notificationEvent>;

/** What a push carries (encrypted, RFC 8291): what the notification shows and where its click goes; never a secret. */
export interface PushPayload {
  id: string;
  kind: NotificationKind;
  title: string;
  body: string;
  url: string;
}
