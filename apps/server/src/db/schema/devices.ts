import { bigserial, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
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
  },
  (t) => [index('devices_user_idx').on(t.userId, t.id), uniqueIndex('devices_user_udid_key').on(t.userId, t.udid)],
);
