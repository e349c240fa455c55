import { and, asc, eq, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { devices, userProfiles } from '../../db/schema/index.js';

export type DeviceRow = typeof devices.$inferSelect;

/** A user's devices in list order (the order of their API index). */
export async function listDevicesOf(db: Database, userId: string): Promise<DeviceRow[]> {
  return db.select().from(devices).where(eq(devices.userId, userId)).orderBy(asc(devices.id));
}

export async function insertDevice(
  db: Database,
  device: {
    userId: string;
    product: string;
    udid: string;
    status?: DeviceRow['status'];
    expiresAt?: Date | null;
  },
): Promise<DeviceRow> {
  const [row] = await db.insert(devices).values(device).returning();
  return row!;
}

/**
 * Records one paid registration year and hands the device to the registration flow (Pending).
 * Returns false when the device is not the user's.
 */
export async function markDevicePaid(db: Database, userId: string, deviceId: number): Promise<boolean> {
  const updated = await db
    .update(devices)
    .set({ status: 'Pending', paidYears: sql`${devices.paidYears} + 1` })
    .where(and(eq(devices.id, deviceId), eq(devices.userId, userId)))
    .returning({ id: devices.id });
  return updated.length === 1;
}

export type UserProfileRow = typeof userProfiles.$inferSelect;

export async function findUserProfile(db: Database, userId: string): Promise<UserProfileRow | undefined> {
  const [row] = await db.select().from(userProfiles).where(eq(userProfiles.userId, userId));
  return row;
}

export async function saveUserProfile(db: Database, row: UserProfileRow) {
  const { userId: _key, ...set } = row;
  await db.insert(userProfiles).values(row).onConflictDoUpdate({ target: userProfiles.userId, set });
}
