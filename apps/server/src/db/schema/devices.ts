import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { users } from './accounts.js';
import { developerAccounts } from './developer-accounts.js';

/**
 * A user's device for the sign service (docs/product.md, Entities and fields, Device). Status follows docs/architecture.md, Data and state machines:
 * Add (enrolled, unpaid) -> Pending (paid, waiting) -> Process -> Registered (until expires_at) -> Expired.
 * A device's index in the API is its position in the user's list, ordered by id.
 */
export const devices = pgTable(
  'devices',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    product: text('product').notNull(),
    udid: text('udid').notNull(),
    status: text('status')
      .$type<'Add' | 'Expired' | 'Registered' | 'Process' | 'Pending'>()
      .notNull()
      .default('Add'),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    /**
     * Registration years paid for and not yet applied. Each device payment adds one; the registration
     * flow takes them when it turns Pending into Registered (expiry = max(now, expiry) + years).
     */
    paidYears: integer('paid_years').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** IOS (iPhone, iPad) or MAC_OS (Apple-silicon Mac), as App Store Connect names platforms. */
    platform: text('platform').$type<'IOS' | 'MAC_OS'>().notNull().default('IOS'),
    /** When it last became Registered: an artifact signed before it does not list it (check-sign 406). */
    registeredAt: timestamp('registered_at', { withTimezone: true }),
    /** Why registration stopped (Apple's error, shown in the admin console); null when it did not. */
    reason: text('reason'),
    /** DEVICE_NAME as the device sent it at enrollment (the name it gets on the Apple account). */
    deviceName: text('device_name'),
    /** The device's id on the operator's Apple developer account (profiles list devices by it). */
    appleDeviceId: text('apple_device_id'),
    /** Failed registration attempts since the last success or admin retry (the backoff counts them). */
    attempts: integer('attempts').notNull().default(0),
    /** When a failed registration is tried again by itself; null with a reason: it waits for an admin. */
    retryAt: timestamp('retry_at', { withTimezone: true }),
    /**
     * While Process: until when the worker that claimed it holds it (another takes it over after);
     * null while a Mac waits for an admin's confirmation.
     */
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    /** When an admin confirmed this Mac (docs/product.md, Validation and confirmations: 'an extra process follows payment'); null otherwise. */
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }),
    /**
     * The developer account it is registered on (appleDeviceId is that account's id of it), or
     * being registered on; null with the dev identity. A user's devices share one account.
     */
    accountId: bigint('account_id', { mode: 'number' }).references(() => developerAccounts.id, {
      onDelete: 'set null',
    }),
    /**
     * While Process because a profile made after its registration did not list it (Apple's wait,
     * modules/devices/apple-wait.ts): when it is checked again; null otherwise.
     */
    appleWaitUntil: timestamp('apple_wait_until', { withTimezone: true }),
    /** Checks of Apple's wait that found it still left out since it was last listed (the backoff counts them). */
    appleWaitChecks: integer('apple_wait_checks').notNull().default(0),
  },
  (t) => [
    index('devices_user_idx').on(t.userId, t.id),
    uniqueIndex('devices_user_udid_key').on(t.userId, t.udid),
    // One device, one row: a UDID is kept in upper case only (src/modules/devices/udid.ts).
    check('devices_udid_canonical', sql`${t.udid} = upper(${t.udid})`),
    // The registration worker's scan: the few devices Pending or in Process.
    index('devices_waiting_idx')
      .on(t.status, t.id)
      .where(sql`status in ('Pending', 'Process')`),
  ],
);

/**
 * One-time enrollment tokens: the Profile Service .mobileconfig's URL and challenge. Only a hash is
 * kept, so a copy of this table enrolls nothing; a token works once, for 10 minutes.
 */
export const enrollmentTokens = pgTable(
  'enrollment_tokens',
  {
    /** sha256 (hex) of the token. */
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (t) => [
    index('enrollment_tokens_user_idx').on(t.userId),
    index('enrollment_tokens_expires_idx').on(t.expiresAt),
  ],
);

/**
 * The provisioning profile a user's artifacts are signed with: it lists the user's Registered
 * devices. Profiles cannot be edited, so a change of that set makes a new one (the old one is
 * deleted with Apple when it was Apple's).
 */
export const userProfiles = pgTable('user_profiles', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
  /** The .mobileprovision file, base64. */
  profile: text('profile').notNull(),
  uuid: text('uuid').notNull(),
  /** The UDIDs it lists, sorted: the profile is current while they equal the Registered set. */
  udids: jsonb('udids').$type<string[]>().notNull(),
  /** Apple's profile id (App Store Connect); null for a dev identity profile. */
  appleProfileId: text('apple_profile_id'),
  /** The developer account that made it; null for a dev identity profile. */
  accountId: bigint('account_id', { mode: 'number' }).references(() => developerAccounts.id, {
    onDelete: 'set null',
  }),
  /** SHA-256 (hex) of the certificate it names: a profile of a replaced certificate is made again. */
  certificateFingerprint: text('certificate_fingerprint'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});
