import type { NotificationKind, SignType } from '@sideport/contracts';
import { and, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import {
  apps,
  devices,
  notificationChoices,
  notifications,
  pushDeliveries,
  pushSubscriptions,
  versions,
  type PushDeliveryState,
} from '../../db/schema/index.js';
import { leasedTable, type AttemptOutcome } from '../../platform/lease-queue.js';
import { findSign } from '../sign/queries.js';

export type NotificationRow = typeof notifications.$inferSelect;

const leases = leasedTable<PushDeliveryState, 'worker', string>({
  columns: {
    id: pushDeliveries.id,
    state: pushDeliveries.state,
    holder: pushDeliveries.worker,
    attempts: pushDeliveries.attempts,
    failures: pushDeliveries.failures,
    lostLeases: pushDeliveries.lostLeases,
    leaseExpiresAt: pushDeliveries.leaseExpiresAt,
    lastReason: pushDeliveries.lastReason,
  },
  holderKey: 'worker',
  states: { queued: 'queued', leased: 'leased', givenUp: 'failed' },
});

export async function disabledKinds(db: Database, userId: string): Promise<NotificationKind[]> {
  const rows = await db
    .select({ kind: notificationChoices.kind })
    .from(notificationChoices)
    .where(and(eq(notificationChoices.userId, userId), eq(notificationChoices.enabled, false)));
  return rows.map((r) => r.kind);
}

export async function setChoices(db: Database, userId: string, choices: Array<[NotificationKind, boolean]>) {
  if (choices.length === 0) return;
  await db
    .insert(notificationChoices)
    .values(choices.map(([kind, enabled]) => ({ userId, kind, enabled })))
    .onConflictDoUpdate({
      target: [notificationChoices.userId, notificationChoices.kind],
      set: { enabled: sql`excluded.enabled` },
    });
}

/**
 * Records a notification unless one of the same key exists (another process heard of the same
 * change first), and queues one delivery per subscription of the user in the same transaction.
 * Returns the new row and the deliveries queued, or undefined when it was there already.
 */
export async function insertNotification(
  db: Database,
  row: Omit<typeof notifications.$inferInsert, 'id' | 'readAt'>,
) {
  return db.transaction(async (tx) => {
    const [made] = await tx.insert(notifications).values(row).onConflictDoNothing().returning();
    if (!made) return undefined;
    const queued = await queryRows<{ id: number }>(
      tx,
      sql`
        insert into ${pushDeliveries} (notification_id, subscription_id, created_at, updated_at)
        select ${made.id}, s.id, ${row.createdAt}, ${row.createdAt}
        from ${pushSubscriptions} s where s.user_id = ${row.userId}
        returning id`,
    );
    return { made, queued: queued.length };
  });
}

export async function listOf(db: Database, userId: string, limit: number) {
  return db
    .select()
    .from(notifications)
    .where(eq(notifications.userId, userId))
    .orderBy(desc(notifications.id))
    .limit(limit);
}

export async function unreadCount(db: Database, userId: string) {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from ${notifications} where user_id = ${userId} and read_at is null`,
  );
  return row?.n ?? 0;
}

export async function markRead(db: Database, userId: string, now: Date) {
  await db
    .update(notifications)
    .set({ readAt: now })
    .where(and(eq(notifications.userId, userId), isNull(notifications.readAt)));
}

/** A browser's subscription: a new endpoint, or the same endpoint with new keys (or moved to this user). */
export async function saveSubscription(
  db: Database,
  row: { userId: string; endpoint: string; p256dh: string; auth: string; createdAt: Date },
) {
  await db
    .insert(pushSubscriptions)
    .values(row)
    .onConflictDoUpdate({
      target: pushSubscriptions.endpoint,
      set: { userId: row.userId, p256dh: row.p256dh, auth: row.auth },
    });
}

export async function deleteSubscription(
  db: Database,
  where: { id: number } | { userId: string; endpoint: string },
) {
  const removed = await db
    .delete(pushSubscriptions)
    .where(
      'id' in where
        ? eq(pushSubscriptions.id, where.id)
        : and(eq(pushSubscriptions.userId, where.userId), eq(pushSubscriptions.endpoint, where.endpoint)),
    )
    .returning({ id: pushSubscriptions.id });
  return removed.length;
}

export async function countSubscriptions(db: Database, userId: string) {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from ${pushSubscriptions} where user_id = ${userId}`,
  );
  return row?.n ?? 0;
}

/** A delivery as a sender holds it: the push's notification and the subscription it goes to. */
export interface HeldDelivery {
  id: number;
  attempt: number;
  failures: number;
  lostLeases: number;
  subscriptionId: number;
  endpoint: string;
  p256dh: string;
  auth: string;
  notification: Pick<NotificationRow, 'id' | 'kind' | 'title' | 'body' | 'url'>;
}

/**
 * Claims up to `limit` queued deliveries (and those whose lease ran out, their lost lease
 * counted) for `worker`, oldest first, skipping rows another sender holds.
 */
export async function claimDeliveries(
  db: Database,
  worker: string,
  now: Date,
  leaseSeconds: number,
  limit: number,
  maxLostLeases: number,
): Promise<HeldDelivery[]> {
  const wasLost = sql`${pushDeliveries.state} = 'leased'`;
  const claimed = await db
    .update(pushDeliveries)
    .set({
      ...leases.claimed(worker, now, leaseSeconds),
      ...leases.lostOnClaim(wasLost, 'The sender stopped before the push was sent', { maxLostLeases }),
    })
    .where(
      inArray(
        pushDeliveries.id,
        sql`(select id from ${pushDeliveries}
              where (state = 'queued' and (not_before is null or not_before <= ${now}))
                 or (state = 'leased' and lease_expires_at < ${now})
              order by id limit ${limit} for update skip locked)`,
      ),
    )
    .returning();
  if (claimed.length === 0) return [];
  const rows = await db
    .select({
      id: pushDeliveries.id,
      subscriptionId: pushSubscriptions.id,
      endpoint: pushSubscriptions.endpoint,
      p256dh: pushSubscriptions.p256dh,
      auth: pushSubscriptions.auth,
      notificationId: notifications.id,
      kind: notifications.kind,
      title: notifications.title,
      body: notifications.body,
      url: notifications.url,
    })
    .from(pushDeliveries)
    .innerJoin(pushSubscriptions, eq(pushSubscriptions.id, pushDeliveries.subscriptionId))
    .innerJoin(notifications, eq(notifications.id, pushDeliveries.notificationId))
    .where(
      inArray(
        pushDeliveries.id,
        claimed.map((c) => c.id),
      ),
    );
  const byId = new Map(claimed.map((c) => [c.id, c]));
  return rows.map((r) => {
    const c = byId.get(r.id)!;
    return {
      id: r.id,
      attempt: c.attempts,
      failures: c.failures,
      lostLeases: c.lostLeases,
      subscriptionId: r.subscriptionId,
      endpoint: r.endpoint,
      p256dh: r.p256dh,
      auth: r.auth,
      notification: { id: r.notificationId, kind: r.kind, title: r.title, body: r.body, url: r.url },
    };
  });
}

const held = (worker: string, d: Pick<HeldDelivery, 'id' | 'attempt'>) =>
  leases.held({ id: d.id, holder: worker, attempt: d.attempt });

/** Sent: the deliveries are done with (one statement for a claim's batch). */
export async function deliveriesDone(
  db: Database,
  worker: string,
  sent: Array<Pick<HeldDelivery, 'id' | 'attempt'>>,
) {
  if (sent.length === 0) return;
  await db.delete(pushDeliveries).where(or(...sent.map((d) => held(worker, d))));
}

/** Not sent this time: queued again after `notBefore`, or given up. */
export async function deliveryEnded(
  db: Database,
  worker: string,
  d: Pick<HeldDelivery, 'id' | 'attempt'>,
  outcome: AttemptOutcome,
  now: Date,
  notBefore: Date | null,
) {
  await db
    .update(pushDeliveries)
    .set({ ...leases.ended(outcome, now), notBefore })
    .where(held(worker, d));
}

export async function countQueued(db: Database) {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from ${pushDeliveries} where state in ('queued', 'leased')`,
  );
  return row?.n ?? 0;
}

/** Who asked for a version's decryption (the notification of its Done goes to them). */
export async function requesterOf(db: Database, appId: number, appVerId: number) {
  const [row] = await db
    .select({
      requestedBy: versions.requestedBy,
      version: versions.version,
      country: versions.country,
      name: apps.name,
    })
    .from(versions)
    .leftJoin(apps, and(eq(apps.country, versions.country), eq(apps.appId, versions.appId)))
    .where(and(eq(versions.appId, appId), eq(versions.appVerId, appVerId)));
  return row;
}

/** A user's sign of a version in a mode: its artifact names the notification of its Done. */
export function signArtifact(
  db: Database,
  userId: string,
  appId: number,
  appVerId: number,
  signType: SignType,
) {
  return findSign(db, { userId, source: 'version', appId, appVerId, signType });
}

/** A user's devices, for the notifications of a registration or a refusal. */
export async function devicesOf(db: Database, userId: string) {
  return db
    .select({
      id: devices.id,
      product: devices.product,
      name: devices.deviceName,
      status: devices.status,
      registeredAt: devices.registeredAt,
      reason: devices.reason,
      retryAt: devices.retryAt,
    })
    .from(devices)
    .where(eq(devices.userId, userId));
}
