import {
  bigserial,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

const userRef = () =>
  text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' });

/** The payment provider's customer of a user (a Stripe Customer), created on the first checkout. */
export const billingCustomers = pgTable('billing_customers', {
  userId: userRef().primaryKey(),
  provider: text('provider').notNull(),
  customerId: text('customer_id').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * Provider events already applied. The event id is the key: inserting it in the same transaction as
 * the state change makes each event apply exactly once, whatever the retries and concurrent deliveries.
 */
export const billingEvents = pgTable('billing_events', {
  eventId: text('event_id').primaryKey(),
  provider: text('provider').notNull(),
  type: text('type').notNull(),
  userId: text('user_id'),
  receivedAt: timestamp('received_at', { withTimezone: true }).notNull(),
});

/**
 * A premium subscription as last reported by the provider. Events may arrive in any order, so the
 * period end only grows, and status/plan are replaced only by an observation at least as new
 * (`status_at`, the event's own time); canceled is final.
 */
export const subscriptions = pgTable(
  'subscriptions',
  {
    subscriptionId: text('subscription_id').primaryKey(),
    provider: text('provider').notNull(),
    userId: userRef(),
    /** Service number of GET /api/pay/service/{n} (docs/product.md, Calls): 0, 1, 3 or 4. */
    plan: integer('plan').notNull(),
    status: text('status').notNull(),
    statusAt: timestamp('status_at', { withTimezone: true }).notNull(),
    currentPeriodEnd: timestamp('current_period_end', { withTimezone: true }),
    /** The provider said it ends with its paid period (Stripe's cancel_at_period_end): nothing renews it. */
    endsAtPeriodEnd: boolean('ends_at_period_end').notNull().default(false),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('subscriptions_user_idx').on(t.userId)],
);

/** Every payment applied, for the record and the dev portal page. */
export const payments = pgTable(
  'payments',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: userRef(),
    provider: text('provider').notNull(),
    eventId: text('event_id').notNull(),
    /** plan:N, reset or device:ID */
    item: text('item').notNull(),
    amountCents: integer('amount_cents'),
    paidAt: timestamp('paid_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('payments_user_idx').on(t.userId, t.paidAt)],
);

/** Decrypts used per user per UTC day (the daily limit). */
export const dailyUsage = pgTable(
  'daily_usage',
  {
    userId: userRef(),
    day: date('day', { mode: 'string' }).notNull(),
    used: integer('used').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.userId, t.day] })],
);

/** A checkout of the dev (test-mode) provider, waiting for Pay or Cancel on the local page. */
export const devCheckouts = pgTable('dev_checkouts', {
  id: text('id').primaryKey(),
  userId: userRef(),
  item: jsonb('item').notNull(),
  successUrl: text('success_url').notNull(),
  cancelUrl: text('cancel_url').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  /** paid or canceled, once decided. */
  outcome: text('outcome'),
});
