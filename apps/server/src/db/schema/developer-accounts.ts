import type { DeveloperAccountState, DeviceFamily } from '@sideport/contracts';
import { bigint, bigserial, index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

/**
 * The Apple developer accounts devices are registered on and signed for (docs/sign-service.md, A
 * pool of developer accounts): the ASC_KEY_ID account and those of ASC_ACCOUNTS_FILE (source
 * 'config', their keys read from the configuration at each start), and keys an admin added
 * (source 'console', the key sealed with SECRET_KEY). One row per team: its issuer id is unique.
 */
export const developerAccounts = pgTable('developer_accounts', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  keyId: text('key_id').notNull().unique(),
  issuerId: text('issuer_id').notNull().unique(),
  name: text('name').notNull(),
  source: text('source').$type<'config' | 'console'>().notNull(),
  /** A console key's .p8, sealed with SECRET_KEY; null for a key the configuration gives. */
  sealedPrivateKey: text('sealed_private_key'),
  state: text('state').$type<DeveloperAccountState>().notNull().default('enabled'),
  /** Why it is disabled or rejected (the admin, or Apple's refusal of its key); null while enabled. */
  stateReason: text('state_reason'),
  stateChangedAt: timestamp('state_changed_at', { withTimezone: true }),
  /**
   * A membership renewal date (midnight UTC) as the admin or the configuration gave it; later
   * renewals follow it yearly. Null: not given, so no slot ever comes back.
   */
  membershipRenewsAt: timestamp('membership_renews_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * Each device registered on an account, and when it last was: Apple counts it against the
 * account's limit for its family for the rest of that membership year, even once it is removed,
 * so a row outlives the device (and its user) that took the slot.
 */
export const deviceSlots = pgTable(
  'device_slots',
  {
    accountId: bigint('account_id', { mode: 'number' })
      .notNull()
      .references(() => developerAccounts.id, { onDelete: 'cascade' }),
    udid: text('udid').notNull(),
    family: text('family').$type<DeviceFamily>().notNull(),
    userId: text('user_id').references(() => users.id, { onDelete: 'set null', onUpdate: 'cascade' }),
    registeredAt: timestamp('registered_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.udid] }),
    index('device_slots_family_idx').on(t.accountId, t.family, t.registeredAt),
  ],
);
