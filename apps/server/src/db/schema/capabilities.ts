import type { SignedComponent } from '@sideport/ipa';
import { bigint, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './accounts.js';
import { developerAccounts } from './developer-accounts.js';

/**
 * The signed components of a Done version and the entitlements each was signed with, read once from
 * its stored IPA (modules/versions/capabilities/): what a re-sign keeps of its capabilities follows
 * from them, the mode and the team that signs, and is computed when asked.
 */
export const versionComponents = pgTable(
  'version_components',
  {
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    appVerId: bigint('app_ver_id', { mode: 'number' }).notNull(),
    components: jsonb('components').$type<SignedComponent[]>().notNull(),
    readAt: timestamp('read_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.appVerId] })],
);

/**
 * The profile a DUP copy is signed with when the operator has App Store Connect make explicit App
 * IDs for copies (modules/identity/copy-app-ids.ts): one per user and copy bundle id, for the
 * explicit App ID with the capabilities the app claims enabled, listing the user's Registered
 * devices. Made again, as user_profiles are, when the devices, the certificate or the capabilities
 * change or it is about to expire.
 */
export const copyProfiles = pgTable(
  'copy_profiles',
  {
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    /** The copy's bundle id: the explicit App ID's identifier. */
    bundleId: text('bundle_id').notNull(),
    /** The App Store Connect capability types enabled on it, sorted. */
    capabilityTypes: jsonb('capability_types').$type<string[]>().notNull(),
    /** The .mobileprovision file, base64. */
    profile: text('profile').notNull(),
    uuid: text('uuid').notNull(),
    /** The UDIDs it lists, sorted. */
    udids: jsonb('udids').$type<string[]>().notNull(),
    appleProfileId: text('apple_profile_id'),
    accountId: bigint('account_id', { mode: 'number' }).references(() => developerAccounts.id, {
      onDelete: 'set null',
    }),
    certificateFingerprint: text('certificate_fingerprint'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.bundleId] })],
);
