import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  numeric,
  pgSequence,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

/** Store metadata of an app in one country, as the iTunes Search/Lookup APIs last described it. */
export const apps = pgTable(
  'apps',
  {
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    name: text('name').notNull(),
    developer: text('developer').notNull(),
    version: text('version').notNull(),
    iconUrl: text('icon_url').notNull(),
    storeUrl: text('store_url').notNull(),
    rating: doublePrecision('rating'),
    ratingCount: integer('rating_count'),
    bundleId: text('bundle_id').notNull(),
    minimumOs: text('minimum_os').notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    price: numeric('price', { precision: 10, scale: 2, mode: 'number' }),
    fetchedAt: timestamp('fetched_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.country, t.appId] })],
);

/**
 * A decrypt entry: one requested (or decrypted) version of an app. app_ver_id is the store's
 * external version identifier; an app-level request does not know it until the agent reports it.
 * `seq` only grows, so lists can be anchored and stay stable while entries are added.
 */
export const versions = pgTable(
  'versions',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    appVerId: bigint('app_ver_id', { mode: 'number' }),
    version: text('version'),
    status: text('status').notNull(),
    premium: boolean('premium').notNull().default(false),
    requestedBy: text('requested_by').references(() => users.id, {
      onDelete: 'set null',
      onUpdate: 'cascade',
    }),
    reason: text('reason'),
    requestedAt: timestamp('requested_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** Set once when the entry becomes Done; orders the latest list. */
    doneSeq: bigint('done_seq', { mode: 'number' }),
    doneAt: timestamp('done_at', { withTimezone: true }),
    /** Of the checked IPA (Info.plist and the stored file), once Done. */
    minimumOs: text('minimum_os'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    /** Storage key of the decrypted IPA, once Done. */
    fileKey: text('file_key'),
    /** The working agent's last progress line (0-100), while the entry is being worked. */
    progress: integer('progress'),
  },
  (t) => [
    uniqueIndex('versions_app_ver_key')
      .on(t.appId, t.appVerId)
      .where(sql`${t.appVerId} is not null`),
    // One waiting app-level request per app and country: a second request joins it.
    uniqueIndex('versions_app_level_active_key')
      .on(t.country, t.appId)
      .where(
        sql`${t.appVerId} is null and ${t.status} in ('Pending', 'Downloading', 'Downloaded', 'Process')`,
      ),
    index('versions_latest_idx')
      .on(t.doneSeq.desc().nullsFirst())
      .where(sql`${t.status} = 'Done'`),
    index('versions_queue_idx')
      .on(t.premium.desc().nullsFirst(), t.seq)
      .where(sql`${t.status} in ('Pending', 'Downloading', 'Downloaded', 'Process')`),
    index('versions_app_idx').on(t.country, t.appId),
  ],
);

/** Hands out done_seq values: the order in which versions became Done. */
export const versionDoneSeq = pgSequence('version_done_seq');

/** Which apps a search returned, in store order, so a repeated search does not hit the store. */
export const searchCache = pgTable(
  'search_cache',
  {
    country: text('country').notNull(),
    term: text('term').notNull(),
    appIds: jsonb('app_ids').$type<number[]>().notNull(),
    fetchedAt: timestamp('fetched_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.country, t.term] })],
);

/** Apps an admin refused for good; a blacklisted app cannot be requested again. */
export const blacklist = pgTable(
  'blacklist',
  {
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    addedBy: text('added_by'),
    addedAt: timestamp('added_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.country, t.appId] })],
);
