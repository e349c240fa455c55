import type { DeviceFamily } from '@sideport/contracts';
import { and, eq, gte } from 'drizzle-orm';
import type { Database } from '../../../db/client.js';
import { deviceSlots } from '../../../db/schema/index.js';

// The slots a pool's accounts gave their devices: one per device per membership year, freed only
// when the year ends (docs/sign-service.md, A pool of developer accounts).

export type SlotRow = typeof deviceSlots.$inferSelect;

/** The slots an account's devices took since `since` (the start of its membership year). */
export async function slotsSince(
  db: Database,
  accountId: number,
  since: Date,
): Promise<Array<Pick<SlotRow, 'udid' | 'family'>>> {
  return db
    .select({ udid: deviceSlots.udid, family: deviceSlots.family })
    .from(deviceSlots)
    .where(and(eq(deviceSlots.accountId, accountId), gte(deviceSlots.registeredAt, since)));
}

export async function findSlot(db: Database, accountId: number, udid: string): Promise<SlotRow | undefined> {
  const [row] = await db
    .select()
    .from(deviceSlots)
    .where(and(eq(deviceSlots.accountId, accountId), eq(deviceSlots.udid, udid)));
  return row;
}

/** Records a registration: the slot is taken from `at` for the rest of that membership year. */
export async function takeSlot(
  db: Database,
  slot: { accountId: number; udid: string; family: DeviceFamily; userId: string | null; registeredAt: Date },
): Promise<void> {
  await db
    .insert(deviceSlots)
    .values(slot)
    .onConflictDoUpdate({
      target: [deviceSlots.accountId, deviceSlots.udid],
      set: { family: slot.family, userId: slot.userId, registeredAt: slot.registeredAt },
    });
}

/** Puts a slot back as it was before a registration Apple refused: gone, or its earlier registration. */
export async function restoreSlot(
  db: Database,
  accountId: number,
  udid: string,
  previous: SlotRow | undefined,
): Promise<void> {
  if (previous) {
    await db
      .update(deviceSlots)
      .set({ family: previous.family, userId: previous.userId, registeredAt: previous.registeredAt })
      .where(and(eq(deviceSlots.accountId, accountId), eq(deviceSlots.udid, udid)));
  } else {
    await db.delete(deviceSlots).where(and(eq(deviceSlots.accountId, accountId), eq(deviceSlots.udid, udid)));
  }
}
