import type { BusEvent } from '../../platform/events.js';
import type { Database } from '../../db/client.js';
import * as q from './queries.js';
import type { Notice, NotificationsService } from './service.js';

export interface NotificationSourcesDeps {
  db: Database;
  notifications: Pick<NotificationsService, 'notify'>;
  log: { warn(obj: object, msg: string): void };
}

/** The search page of an app in a country: its card opens the version modal, where Sign and Install are. */
const appPage = (country: string, name: string) =>
  `/search/${country.toLowerCase()}/${encodeURIComponent(name)}`;

/**
 * The changes people are told of, from the events every process hears (a version Done, a sign
 * Done, a device's change): each event is kept when heard and turned into notifications by the
 * periodic task that drains them (lifecycle.ts), so nothing of it runs on the bus's listener.
 * Every process hears every event and makes the same notifications; their keys make them once.
 * Updates that became Ready are told by the update runs themselves (modules/updates/runs.ts).
 */
export function createNotificationSources(deps: NotificationSourcesDeps) {
  const { db, notifications } = deps;
  const pending: BusEvent[] = [];

  async function fromEvent(message: BusEvent) {
    if (message.kind !== 'live') return;
    const { event, userId } = message;
    if (event.type === 'version' && event.status === 'Done' && event.app_ver_id !== null) {
      const [appId, appVerId] = [Number(event.app_id), Number(event.app_ver_id)];
      const entry = await q.requesterOf(db, appId, appVerId);
      if (!entry?.requestedBy) return;
      const name = entry.name ?? `App ${appId}`;
      await notifications.notify(entry.requestedBy, {
        kind: 'decrypt-done',
        key: `decrypt-done:${appId}:${appVerId}`,
        title: `${name} ${entry.version ?? ''} is decrypted`.replace(/\s+/g, ' '),
        body: 'Sign it for your devices, or download the IPA.',
        url: appPage(event.country, name),
      });
      return;
    }
    if (event.type === 'sign' && event.status === 'Done' && userId !== undefined) {
      const sign = await q.signArtifact(
        db,
        userId,
        Number(event.app_id),
        Number(event.app_ver_id),
        event.sign_type,
      );
      if (!sign?.artifactId) return;
      const notice: Notice = event.resigning
        ? {
            kind: 'resigned',
            key: `resigned:${sign.artifactId}`,
            title: `${sign.title} was signed again`,
            body: 'Its certificate was revoked or expiring: install it again to keep it working.',
            url: '/my?tab=updates',
          }
        : {
            kind: 'sign-ready',
            key: `sign-ready:${sign.artifactId}`,
            title: `${sign.title} is ready to install`,
            body: 'Its sign for your devices is Done.',
            url: '/my?tab=updates',
          };
      await notifications.notify(userId, notice);
      return;
    }
    if (event.type === 'device' && userId !== undefined) {
      for (const device of await q.devicesOf(db, userId)) {
        const name = device.name ?? device.product;
        if (device.status === 'Registered' && device.registeredAt) {
          await notifications.notify(userId, {
            kind: 'device-registered',
            key: `device-registered:${device.id}:${device.registeredAt.getTime()}`,
            title: `${name} is Registered`,
            body: 'Apps signed for it from now on install on it.',
            url: '/my?tab=device',
          });
        } else if (device.status === 'Pending' && device.reason && device.retryAt === null) {
          await notifications.notify(userId, {
            kind: 'device-refused',
            key: `device-refused:${device.id}:${device.reason}`,
            title: `${name} could not be registered`,
            body: device.reason,
            url: '/my?tab=device',
          });
        }
      }
    }
  }

  return {
    /** Keeps an event that may tell a person something; true when one was kept (the task should run). */
    hear(event: BusEvent): boolean {
      if (event.kind !== 'live') return false;
      const { type } = event.event;
      const isRelevant =
        (type === 'version' && event.event.status === 'Done') ||
        (type === 'sign' && event.event.status === 'Done') ||
        type === 'device';
      if (isRelevant) pending.push(event);
      return isRelevant;
    },

    /** Turns the events heard so far into notifications. */
    async drain() {
      while (pending.length > 0) {
        const event = pending.shift()!;
        await fromEvent(event).catch((err: unknown) =>
          deps.log.warn({ err }, 'a notification could not be made'),
        );
      }
    },
  };
}

export type NotificationSources = ReturnType<typeof createNotificationSources>;
