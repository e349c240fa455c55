import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { devices, enrollmentTokens } from '../../db/schema/index.js';
import { canonicalUdid } from './udid.js';

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
    deviceName?: string | null;
  },
): Promise<DeviceRow> {
  const [row] = await db
    .insert(devices)
    .values({ ...device, udid: canonicalUdid(device.udid) })
    .returning();
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

// ---- enrollment tokens ----

export type EnrollmentTokenRow = typeof enrollmentTokens.$inferSelect;

export async function insertEnrollmentToken(
  db: Database,
  row: Omit<EnrollmentTokenRow, 'usedAt'>,
): Promise<void> {
  await db.insert(enrollmentTokens).values(row);
}

/** Tokens of the user still usable at `now` (unused, unexpired). */
export async function countLiveEnrollmentTokens(db: Database, userId: string, now: Date): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(enrollmentTokens)
    .where(
      and(
        eq(enrollmentTokens.userId, userId),
        isNull(enrollmentTokens.usedAt),
        gt(enrollmentTokens.expiresAt, now),
      ),
    );
  return row?.n ?? 0;
}

export async function findEnrollmentToken(
  db: Database,
  tokenHash: string,
): Promise<EnrollmentTokenRow | undefined> {
  const [row] = await db.select().from(enrollmentTokens).where(eq(enrollmentTokens.tokenHash, tokenHash));
  return row;
}

/** Marks the token used when it is still usable; the user it was issued to, or undefined. */
export async function consumeEnrollmentToken(
  db: Database,
  tokenHash: string,
  now: Date,
): Promise<string | undefined> {
  const [row] = await db
    .update(enrollmentTokens)
    .set({ usedAt: now })
    .where(
      and(
        eq(enrollmentTokens.tokenHash, tokenHash),
        isNull(enrollmentTokens.usedAt),
        gt(enrollmentTokens.expiresAt, now),
      ),
    )
    .returning({ userId: enrollmentTokens.userId });
  return row?.userId;
}

/** Tokens that expired before `before`: nothing can use them, and replays of them are refused as unknown. */
export async function deleteEnrollmentTokensBefore(db: Database, before: Date): Promise<void> {
  await db.delete(enrollmentTokens).where(lt(enrollmentTokens.expiresAt, before));
}

/** An enrolled device (status Add); undefined when the user already has this UDID. */
export async function insertEnrolledDevice(
  db: Database,
  device: {
    userId: string;
    product: string;
    udid: string;
    platform: DeviceRow['platform'];
    deviceName: string | null;
  },
): Promise<DeviceRow | undefined> {
  const [row] = await db
    .insert(devices)
    .values({ ...device, udid: canonicalUdid(device.udid), status: 'Add' })
    .onConflictDoNothing({ target: [devices.userId, devices.udid] })
    .returning();
  return row;
}

// ---- registration ----

export async function findDevice(db: Database, id: number): Promise<DeviceRow | undefined> {
  const [row] = await db.select().from(devices).where(eq(devices.id, id));
  return row;
}

/**
 * Takes the next device to register and marks it Process, in one statement: a paid Pending device
 * (fresh, or whose retry is due), or one in Process whose worker's lease ran out (a process died,
 * or an admin confirmed the Mac). `FOR UPDATE SKIP LOCKED` lets several processes claim at once
 * without taking the same device or waiting on each other. A Mac (by its model, as isMacProduct
 * tells) no admin has confirmed gets no lease: it waits in Process for the admin console.
 */
export async function claimNextDevice(
  db: Database,
  now: Date,
  leaseUntil: Date,
): Promise<DeviceRow | undefined> {
  const at = now.toISOString();
  const rows = await queryRows<{ id: string | number }>(
    db,
    sql`
      with next as (
        select id from ${devices}
        where (status = 'Pending' and paid_years > 0 and (reason is null or retry_at <= ${at}))
           or (status = 'Process' and lease_expires_at <= ${at})
        order by id
        limit 1
        for update skip locked
      )
      update ${devices} d
      set status = 'Process',
          lease_expires_at = case when d.product ilike '%mac%' and d.confirmed_at is null then null
                                  else ${leaseUntil.toISOString()}::timestamptz end
      from next where d.id = next.id
      returning d.id`,
  );
  const id = rows[0]?.id;
  return id === undefined ? undefined : findDevice(db, Number(id));
}

/**
 * Registered for `years` more: from its expiry, or from now when that is past (a renewal never
 * loses paid time, nor gives a lapsed period back). Only while this worker still holds the lease.
 */
export async function finishRegistration(
  db: Database,
  done: { id: number; lease: Date; years: number; now: Date; appleDeviceId: string | null },
): Promise<DeviceRow | undefined> {
  const now = done.now.toISOString();
  const [row] = await db
    .update(devices)
    .set({
      status: 'Registered',
      expiresAt: sql`greatest(coalesce(${devices.expiresAt}, ${now}::timestamptz), ${now}::timestamptz) + (${done.years} * interval '1 year')`,
      paidYears: sql`${devices.paidYears} - ${done.years}`,
      registeredAt: done.now,
      reason: null,
      attempts: 0,
      retryAt: null,
      leaseExpiresAt: null,
      ...(done.appleDeviceId === null ? {} : { appleDeviceId: done.appleDeviceId }),
    })
    .where(
      and(eq(devices.id, done.id), eq(devices.status, 'Process'), eq(devices.leaseExpiresAt, done.lease)),
    )
    .returning();
  return row;
}

/** Back to Pending with why; `retryAt` null leaves it for an admin's retry. Only while the lease is held. */
export async function failRegistration(
  db: Database,
  failed: {
    id: number;
    lease: Date;
    reason: string;
    retryAt: Date | null;
    /** False when a part the registration needs was down: the attempt is not counted. */
    isCounted?: boolean;
  },
): Promise<DeviceRow | undefined> {
  const [row] = await db
    .update(devices)
    .set({
      status: 'Pending',
      reason: failed.reason,
      attempts: failed.isCounted === false ? devices.attempts : sql`${devices.attempts} + 1`,
      retryAt: failed.retryAt,
      leaseExpiresAt: null,
    })
    .where(
      and(eq(devices.id, failed.id), eq(devices.status, 'Process'), eq(devices.leaseExpiresAt, failed.lease)),
    )
    .returning();
  return row;
}

/** Registered devices past their expiry become Expired; returns their owners. */
export async function expireDevices(db: Database, now: Date): Promise<string[]> {
  const rows = await db
    .update(devices)
    .set({ status: 'Expired' })
    .where(and(eq(devices.status, 'Registered'), lte(devices.expiresAt, now)))
    .returning({ userId: devices.userId });
  return rows.map((r) => r.userId);
}

/** An admin's confirmation of a Mac waiting in Process: its lease is due at once, so a worker takes it. */
export async function confirmWaitingMac(db: Database, id: number, now: Date): Promise<DeviceRow | undefined> {
  const [row] = await db
    .update(devices)
    .set({ confirmedAt: now, leaseExpiresAt: now })
    .where(
      and(
        eq(devices.id, id),
        eq(devices.status, 'Process'),
        isNull(devices.leaseExpiresAt),
        isNull(devices.appleWaitUntil),
      ),
    )
    .returning();
  return row;
}

/**
 * An admin's retry: a Pending device is due now with its attempts forgotten; one in Process whose
 * worker holds it is handed to the next claim (a stuck worker, a crash).
 */
export async function retryRegistration(db: Database, id: number, now: Date): Promise<DeviceRow | undefined> {
  const [pending] = await db
    .update(devices)
    .set({ retryAt: now, attempts: 0 })
    .where(and(eq(devices.id, id), eq(devices.status, 'Pending'), gt(devices.paidYears, 0)))
    .returning();
  if (pending) return pending;
  const [held] = await db
    .update(devices)
    .set({ leaseExpiresAt: now })
    .where(and(eq(devices.id, id), eq(devices.status, 'Process'), isNotNull(devices.leaseExpiresAt)))
    .returning();
  return held;
}

/** Devices waiting for registration (Pending or Process), oldest first. */
export async function listWaitingDevices(db: Database, limit: number): Promise<DeviceRow[]> {
  return db
    .select()
    .from(devices)
    .where(inArray(devices.status, ['Pending', 'Process']))
    .orderBy(asc(devices.id))
    .limit(limit);
}

/** A user's Registered devices, with Apple's id of each where it is known. */
export async function registeredDevicesOf(db: Database, userId: string): Promise<DeviceRow[]> {
  return db
    .select()
    .from(devices)
    .where(and(eq(devices.userId, userId), eq(devices.status, 'Registered')))
    .orderBy(asc(devices.id));
}

export async function setAppleDeviceId(db: Database, id: number, appleDeviceId: string): Promise<void> {
  await db.update(devices).set({ appleDeviceId }).where(eq(devices.id, id));
}

// ---- the developer account each device is on (modules/identity/pool/account-pool.ts places them) ----

/** Registered devices on any developer account: what each account holds now. */
export async function registeredOnAccounts(db: Database): Promise<DeviceRow[]> {
  return db
    .select()
    .from(devices)
    .where(and(eq(devices.status, 'Registered'), isNotNull(devices.accountId)))
    .orderBy(asc(devices.id));
}

/** The owners of Registered devices on these accounts. */
export async function usersWithDevicesOn(db: Database, accountIds: number[]): Promise<string[]> {
  if (accountIds.length === 0) return [];
  const rows = await db
    .selectDistinct({ userId: devices.userId })
    .from(devices)
    .where(and(eq(devices.status, 'Registered'), inArray(devices.accountId, accountIds)))
    .orderBy(asc(devices.userId));
  return rows.map((r) => r.userId);
}

export async function setDeviceAccount(db: Database, id: number, accountId: number | null): Promise<void> {
  await db.update(devices).set({ accountId }).where(eq(devices.id, id));
}

/** Devices now on `accountId`, each with Apple's id of it there. */
export async function moveDevicesTo(
  db: Database,
  accountId: number,
  moved: Array<{ id: number; appleDeviceId: string | null }>,
): Promise<void> {
  for (const device of moved) {
    await db
      .update(devices)
      .set({ accountId, appleDeviceId: device.appleDeviceId })
      .where(eq(devices.id, device.id));
  }
}

/**
 * Devices Apple registered before accounts were recorded (one account then): they are on
 * `accountId`. Returns them.
 */
export async function adoptRegisteredDevices(db: Database, accountId: number): Promise<DeviceRow[]> {
  return db
    .update(devices)
    .set({ accountId })
    .where(and(isNull(devices.accountId), isNotNull(devices.appleDeviceId)))
    .returning();
}
