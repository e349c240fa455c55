import type { SignedComponent } from '@sideport/ipa';
import { bigint, jsonb, pgTable, primaryKey, timestamp } from 'drizzle-orm/pg-core';

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
