import {
  NOTIFICATION_KINDS,
  type NotificationChoices,
  type NotificationEvent,
  type NotificationKind,
  type NotificationList,
  type PushSubscriptionBody,
} from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { badRequest, notFound } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import * as q from './queries.js';

export interface NotificationsServiceDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish' | 'publishMany'>;
  /** The VAPID public key browsers subscribe with (vapid.ts). */
  vapidPublicKey: string;
  /** PUSH_ALLOW_HTTP: a push service on plain http is accepted (a local one, as the tests run). */
  allowHttpEndpoints: boolean;
}

/** What a notification says and where its click goes (a path of the site); `key` names the change, once per user. */
export interface Notice {
  kind: NotificationKind;
  key: string;
  title: string;
  body: string;
  url: string;
}

const LIST_SIZE = 50;

/**
 * Notifications (docs/architecture.md, Notifications): what a person is told, once per change,
 * in the bell's list and, for the kinds they did not turn off, pushed to each browser they
 * subscribed (sender.ts sends them from a lease queue, so a burst never holds the API).
 */
export function createNotificationsService(deps: NotificationsServiceDeps) {
  const { db, clock, bus } = deps;

  function checkEndpoint(endpoint: string) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw badRequest('endpoint must be the push service URL the browser gave.');
    }
    const isAllowed = url.protocol === 'https:' || (deps.allowHttpEndpoints && url.protocol === 'http:');
    if (!isAllowed) throw badRequest('endpoint must be an https URL of a push service.');
  }

  return {
    /**
     * Tells `userId` of a change, unless they turned its kind off: one notification per key (a
     * change heard by several processes is told once), in the bell's list and pushed to each of
     * their subscriptions. Nothing is queued for a person with no subscription.
     */
    async notify(userId: string, notice: Notice) {
      if ((await q.disabledKinds(db, userId)).includes(notice.kind)) return undefined;
      const result = await q.insertNotification(db, { userId, ...notice, createdAt: clock() });
      if (!result) return undefined;
      const event: NotificationEvent = {
        type: 'notification',
        id: String(result.made.id),
        kind: notice.kind,
      };
      await bus.publishMany([
        { kind: 'live', event, userId },
        ...(result.queued > 0 ? [{ kind: 'push-queued' as const }] : []),
      ]);
      return result.made;
    },

    /** GET /api/notifications: the newest, and how many are unread. */
    async list(userId: string): Promise<NotificationList> {
      const [rows, unread] = await Promise.all([q.listOf(db, userId, LIST_SIZE), q.unreadCount(db, userId)]);
      return {
        unread,
        notifications: rows.map((r) => ({
          id: String(r.id),
          kind: r.kind,
          title: r.title,
          body: r.body,
          url: r.url,
          created_at: r.createdAt.toISOString(),
          read_at: r.readAt?.toISOString() ?? null,
        })),
      };
    },

    async markRead(userId: string) {
      await q.markRead(db, userId, clock());
    },

    async choices(userId: string): Promise<NotificationChoices> {
      const off = new Set(await q.disabledKinds(db, userId));
      return Object.fromEntries(NOTIFICATION_KINDS.map((k) => [k, !off.has(k)])) as NotificationChoices;
    },

    async setChoices(userId: string, change: Partial<Record<NotificationKind, boolean>>) {
      await q.setChoices(
        db,
        userId,
        Object.entries(change).filter((e): e is [NotificationKind, boolean] => typeof e[1] === 'boolean'),
      );
      return this.choices(userId);
    },

    vapidKey: () => ({ key: deps.vapidPublicKey }),

    /** POST /api/notifications/subscriptions: this browser's subscription (one per device and browser). */
    async subscribe(userId: string, body: PushSubscriptionBody) {
      checkEndpoint(body.endpoint);
      await q.saveSubscription(db, {
        userId,
        endpoint: body.endpoint,
        p256dh: body.keys.p256dh,
        auth: body.keys.auth,
        createdAt: clock(),
      });
    },

    /** DELETE /api/notifications/subscriptions: the caller's subscription of that endpoint. */
    async unsubscribe(userId: string, endpoint: string) {
      if ((await q.deleteSubscription(db, { userId, endpoint })) === 0) throw notFound('This subscription');
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
