import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    /** argon2id of the md5 the client sends; the password itself never reaches the server. */
    passwordHash: text('password_hash').notNull(),
    grade: integer('grade').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // Ids are unique without regard to case, so 'Alice' and 'alice' cannot be two accounts.
  (t) => [uniqueIndex('users_id_lower_key').on(sql`lower(${t.id})`)],
);

export const sessions = pgTable(
  'sessions',
  {
    /** sha256 of the cookie token: a copy of this table does not let anyone sign in. */
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('sessions_user_id_idx').on(t.userId), index('sessions_expires_at_idx').on(t.expiresAt)],
);

/** Fixed-window counters shared by every API process (sign-in attempts per id and per address). */
export const rateLimits = pgTable('rate_limits', {
  key: text('key').primaryKey(),
  count: integer('count').notNull(),
  resetAt: timestamp('reset_at', { withTimezone: true }).notNull(),
});

/**
 * One-time tokens a signed-in page asks for before it navigates to a call that changes state
 * (docs/security.md, Cross-site requests): a navigation cannot carry the web app's request header,
 * and a browser without Fetch Metadata sends nothing that tells it from another site's link. Only
 * a hash is kept; each is bound to its user and the one path it opens, and lives a minute.
 */
export const navigationTokens = pgTable(
  'navigation_tokens',
  {
    /** sha256 (hex) of the token. */
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    /** The decoded path, without query, that the token opens. */
    path: text('path').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('navigation_tokens_expires_at_idx').on(t.expiresAt)],
);
