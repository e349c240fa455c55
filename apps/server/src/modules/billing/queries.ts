import { and, asc, desc, eq, gt, inArray, isNull, notInArray, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import {
  billingCustomers,
  billingEvents,
  dailyUsage,
  devCheckouts,
  payments,
  subscriptions,
} from '../../db/schema/index.js';
import { ENTITLING_STATUSES, FINAL_STATUSES, REPLACING_STATUS } from './schemas.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type DevCheckoutRow = typeof devCheckouts.$inferSelect;

export async function findCustomerId(db: Database, userId: string) {
  const [row] = await db
    .select({ id: billingCustomers.customerId })
    .from(billingCustomers)
    .where(eq(billingCustomers.userId, userId));
  return row?.id;
}

export async function insertCustomer(
  db: Database,
  row: { userId: string; provider: string; customerId: string },
) {
  await db.insert(billingCustomers).values(row).onConflictDoNothing({ target: billingCustomers.userId });
}

export async function findUserOfCustomer(db: Database, customerId: string) {
  const [row] = await db
    .select({ userId: billingCustomers.userId })
    .from(billingCustomers)
    .where(eq(billingCustomers.customerId, customerId));
  return row?.userId;
}

/**
 * Claims an event id. False when it was applied before, or is being applied by a concurrent
 * transaction that then commits (the insert waits on the key, then conflicts).
 */
export async function claimEvent(db: Database, row: typeof billingEvents.$inferInsert): Promise<boolean> {
  const inserted = await db
    .insert(billingEvents)
    .values(row)
    .onConflictDoNothing()
    .returning({ id: billingEvents.eventId });
  return inserted.length === 1;
}

export async function countEvents(db: Database) {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(billingEvents);
  return row?.n ?? 0;
}

/** The subscription row, locked for the rest of the transaction. */
export async function lockSubscription(
  db: Database,
  subscriptionId: string,
): Promise<SubscriptionRow | undefined> {
  const [row] = await db
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.subscriptionId, subscriptionId))
    .for('update');
  return row;
}

export async function findSubscription(db: Database, subscriptionId: string) {
  const [row] = await db.select().from(subscriptions).where(eq(subscriptions.subscriptionId, subscriptionId));
  return row;
}

/** Inserts unless present (a concurrent insert wins); the caller then locks and merges. */
export async function insertSubscription(db: Database, row: typeof subscriptions.$inferInsert) {
  await db.insert(subscriptions).values(row).onConflictDoNothing();
}

export async function updateSubscription(
  db: Database,
  subscriptionId: string,
  set: Pick<SubscriptionRow, 'plan' | 'status' | 'statusAt' | 'currentPeriodEnd' | 'updatedAt'> &
    Partial<Pick<SubscriptionRow, 'endsAtPeriodEnd'>>,
) {
  await db.update(subscriptions).set(set).where(eq(subscriptions.subscriptionId, subscriptionId));
}

/** Subscriptions that entitle the user now: active or trialing, paid period not over. */
export async function entitlingSubscriptions(db: Database, userId: string, now: Date) {
  return db
    .select({ plan: subscriptions.plan, currentPeriodEnd: subscriptions.currentPeriodEnd })
    .from(subscriptions)
    .where(
      and(
        eq(subscriptions.userId, userId),
        inArray(subscriptions.status, [...ENTITLING_STATUSES]),
        gt(subscriptions.currentPeriodEnd, now),
      ),
    );
}

/** Subscriptions that still run or may charge again: not final, not being replaced. */
export async function liveSubscriptionsOf(db: Database, userId: string) {
  return db
    .select()
    .from(subscriptions)
    .where(
      and(
        eq(subscriptions.userId, userId),
        notInArray(subscriptions.status, [...FINAL_STATUSES, REPLACING_STATUS]),
      ),
    )
    .orderBy(asc(subscriptions.subscriptionId));
}

/** Every subscription of the user, locked in a fixed order (so two lockers cannot deadlock). */
export async function lockSubscriptionsOf(db: Database, userId: string): Promise<SubscriptionRow[]> {
  return db
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.userId, userId))
    .orderBy(asc(subscriptions.subscriptionId))
    .for('update');
}

/** Sets a status decided here (not observed from the provider), at `at`. */
export async function setSubscriptionStatus(
  db: Database,
  subscriptionId: string,
  set: { status: string; statusAt: Date; updatedAt: Date },
) {
  await db.update(subscriptions).set(set).where(eq(subscriptions.subscriptionId, subscriptionId));
}

export async function subscriptionsOf(db: Database, userId: string) {
  return db
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.userId, userId))
    .orderBy(desc(subscriptions.currentPeriodEnd));
}

export async function insertPayment(db: Database, row: typeof payments.$inferInsert) {
  await db.insert(payments).values(row);
}

export async function paymentsOf(db: Database, userId: string) {
  return db
    .select()
    .from(payments)
    .where(eq(payments.userId, userId))
    .orderBy(desc(payments.paidAt), desc(payments.id));
}

export async function usageOn(db: Database, userId: string, day: string) {
  const [row] = await db
    .select({ used: dailyUsage.used })
    .from(dailyUsage)
    .where(and(eq(dailyUsage.userId, userId), eq(dailyUsage.day, day)));
  return row?.used ?? 0;
}

/**
 * Counts one use if the user is under `limit` that day, atomically (one statement, so concurrent
 * API processes cannot both take the last one). Returns the new count, or undefined when at the limit.
 */
export async function incrementUsage(db: Database, userId: string, day: string, limit: number) {
  const [row] = await db
    .insert(dailyUsage)
    .values({ userId, day, used: 1 })
    .onConflictDoUpdate({
      target: [dailyUsage.userId, dailyUsage.day],
      set: { used: sql`${dailyUsage.used} + 1` },
      setWhere: sql`${dailyUsage.used} < ${limit}`,
    })
    .returning({ used: dailyUsage.used });
  return row?.used;
}

/** Gives back one use counted on that day (never below 0; nothing when the day was reset). */
export async function decrementUsage(db: Database, userId: string, day: string) {
  await db
    .update(dailyUsage)
    .set({ used: sql`${dailyUsage.used} - 1` })
    .where(and(eq(dailyUsage.userId, userId), eq(dailyUsage.day, day), sql`${dailyUsage.used} > 0`));
}

export async function clearUsage(db: Database, userId: string, day: string) {
  await db.delete(dailyUsage).where(and(eq(dailyUsage.userId, userId), eq(dailyUsage.day, day)));
}

export async function insertDevCheckout(db: Database, row: typeof devCheckouts.$inferInsert) {
  await db.insert(devCheckouts).values(row);
}

export async function findDevCheckout(db: Database, id: string): Promise<DevCheckoutRow | undefined> {
  const [row] = await db.select().from(devCheckouts).where(eq(devCheckouts.id, id));
  return row;
}

/** Decides an open checkout once; false when it was already decided. */
export async function decideDevCheckout(db: Database, id: string, outcome: 'paid' | 'canceled') {
  const updated = await db
    .update(devCheckouts)
    .set({ outcome })
    .where(and(eq(devCheckouts.id, id), isNull(devCheckouts.outcome)))
    .returning({ id: devCheckouts.id });
  return updated.length === 1;
}
