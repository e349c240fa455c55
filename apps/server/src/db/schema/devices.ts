import { bigserial, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

/**
 * A user's device for the sign service (spec section 3, Device). Status follows DESIGN.md section 3:
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
    status: text('status').$type<'Add' | 'Expired' | 'Registered' | 'Process' | 'Pending'>().notNull().default('Add'),
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
  },
  (t) => [index('devices_user_idx').on(t.userId, t.id), uniqueIndex('devices_user_udid_key').on(t.userId, t.udid)],
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
  createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});
