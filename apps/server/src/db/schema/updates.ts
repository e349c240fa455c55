import type { SignType } from '@sideport/contracts';
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  date,
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
 * The store's current version of each app someone installed, per country, as the update check
 * last found it (docs/architecture.md, Update tracking): one row for all users of the app, so one
 * store lookup serves them all. `checkedAt` is set when a process claims the row for a check.
 */
export const storeChecks = pgTable(
  'store_checks',
  {
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    /** The store's version string; null before the first check, or while the store does not list the app. */
    version: text('version'),
    checkedAt: timestamp('checked_at', { withTimezone: true }),
    /** When the check last found a version other than the one before. */
    changedAt: timestamp('changed_at', { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.country, t.appId] }), index('store_checks_due_idx').on(t.checkedAt)],
);

export type UpdateRunState = 'Decrypting' | 'Signing' | 'Ready' | 'Failed';

/**
 * A user's update of one installed app in one mode (the latest; a newer store version replaces
 * it): the decryption it asked for, then the sign of that version in the same mode, then Ready.
 */
export const appUpdates = pgTable(
  'app_updates',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    signType: integer('sign_type').$type<SignType>().notNull(),
    country: text('country').notNull(),
    /** The installed artifact it updates: its version id, bundle id and signing certificate. */
    fromAppVerId: bigint('from_app_ver_id', { mode: 'number' }).notNull(),
    fromBundleId: text('from_bundle_id'),
    fromCertFingerprint: text('from_cert_fingerprint'),
    /** The store version asked for, and its version id once its decryption is Done. */
    toVersion: text('to_version').notNull(),
    toAppVerId: bigint('to_app_ver_id', { mode: 'number' }),
    state: text('state').$type<UpdateRunState>().notNull(),
    /** Started by the automatic updates rather than by the user's click. */
    automatic: boolean('automatic').notNull().default(false),
    /** False once Ready when the new artifact's bundle id or team differs from the installed one. */
    inPlace: boolean('in_place').notNull().default(true),
    reason: text('reason'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex('app_updates_key').on(t.userId, t.appId, t.signType),
    index('app_updates_open_idx')
      .on(t.appId)
      .where(sql`${t.state} in ('Decrypting', 'Signing')`),
  ],
);

/** Automatic updates a premium user turned on: for one app, or for all (app_id 0). */
export const autoUpdates = pgTable(
  'auto_updates',
  {
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.appId] })],
);

/** Automatic updates started per UTC day, against the operator's AUTO_UPDATE_DAILY_CAP. */
export const autoUpdateDays = pgTable('auto_update_days', {
  day: date('day', { mode: 'string' }).primaryKey(),
  started: integer('started').notNull().default(0),
});
