import type { NotificationKind } from '@sideport/contracts';
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

/**
 * A browser's Web Push subscription (RFC 8030): one per device and browser the person allowed
 * notifications on, removed when the push service answers 404 or 410. `p256dh` and `auth` are the
 * browser's keys a payload is encrypted to (RFC 8291).
 */
export const pushSubscriptions = pgTable(
  'push_subscriptions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    endpoint: text('endpoint').notNull(),
    p256dh: text('p256dh').notNull(),
    auth: text('auth').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex('push_subscriptions_endpoint_key').on(t.endpoint),
    index('push_subscriptions_user_idx').on(t.userId),
  ],
);

/** A kind a person turned off (or on again): absent means on. */
export const notificationChoices = pgTable(
  'notification_choices',
  {
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    kind: text('kind').$type<NotificationKind>().notNull(),
    enabled: boolean('enabled').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.kind] })],
);

/**
 * What a person was told (the bell's list; each push shows one). `key` names the change it tells
 * of, so processes that hear of one change make one notification.
 */
export const notifications = pgTable(
  'notifications',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    kind: text('kind').$type<NotificationKind>().notNull(),
    key: text('key').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    url: text('url').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    readAt: timestamp('read_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('notifications_key').on(t.userId, t.key),
    index('notifications_user_idx').on(t.userId, t.id),
  ],
);

export type PushDeliveryState = 'queued' | 'leased' | 'failed';

/**
 * One push of a notification to one subscription, handed to senders under leases
 * (platform/lease-queue.ts); a delivered push's row is deleted.
 */
export const pushDeliveries = pgTable(
  'push_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    notificationId: bigint('notification_id', { mode: 'number' })
      .notNull()
      .references(() => notifications.id, { onDelete: 'cascade' }),
    subscriptionId: bigint('subscription_id', { mode: 'number' })
      .notNull()
      .references(() => pushSubscriptions.id, { onDelete: 'cascade' }),
    state: text('state').$type<PushDeliveryState>().notNull().default('queued'),
    attempts: integer('attempts').notNull().default(0),
    failures: integer('failures').notNull().default(0),
    lostLeases: integer('lost_leases').notNull().default(0),
    worker: text('worker'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    lastReason: text('last_reason'),
    /** Not sent before this (a push service's Retry-After, or the backoff after a failure). */
    notBefore: timestamp('not_before', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    index('push_deliveries_claim_idx')
      .on(t.id)
      .where(sql`${t.state} = 'queued'`),
    index('push_deliveries_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} = 'leased'`),
  ],
);
