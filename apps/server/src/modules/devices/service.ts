import type { Device } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import type { EventBus } from '../../platform/events.js';
import * as q from './queries.js';

export interface DeviceServiceDeps {
  db: Database;
  /** Tells the owner's open pages, and every process's registration worker, of a payment. */
  bus: Pick<EventBus, 'publish'>;
}

export type DeviceStatus = q.DeviceRow['status'];

export interface UserDevice {
  id: number;
  /** Position in the user's list: the {index} of GET /api/pay/device/{index}. */
  index: number;
  product: string;
  udid: string;
  status: DeviceStatus;
  expiresAt: Date | null;
  paidYears: number;
  /** DEVICE_NAME from enrollment. */
  name: string | null;
  /** Why it waits in Process for Apple to list it in profiles (apple-wait.ts); null otherwise. */
  appleWaitReason: string | null;
}

/** A Registered device, as the signing identity (modules/identity) lists it in a profile. */
export interface RegisteredDevice {
  id: number;
  udid: string;
  platform: q.DeviceRow['platform'];
  /** When it became Registered: an artifact signed before it does not list it. */
  registeredAt: Date | null;
  /** Apple's id of it on the developer account; null until the account learns of it. */
  appleDeviceId: string | null;
  /** The developer account it is on (modules/identity/pool/account-pool.ts); null with the dev identity. */
  accountId: number | null;
}

/** A device as the pool of developer accounts places it: its family's model, status and account. */
export interface PlacedDevice {
  id: number;
  userId: string;
  udid: string;
  product: string;
  platform: q.DeviceRow['platform'];
  status: DeviceStatus;
  deviceName: string | null;
  accountId: number | null;
  appleDeviceId: string | null;
}

const placed = (row: q.DeviceRow): PlacedDevice => ({
  id: row.id,
  userId: row.userId,
  udid: row.udid,
  product: row.product,
  platform: row.platform,
  status: row.status,
  deviceName: row.deviceName,
  accountId: row.accountId,
  appleDeviceId: row.appleDeviceId,
});

/**
 * The part of the devices domain that billing, the account page and the signing identity need: the
 * user's devices, the payment hand-over, the Registered devices a profile lists. Enrollment and
 * registration are enrollment-service.ts and registration.ts.
 */
export function createDeviceService({ db, bus }: DeviceServiceDeps) {
  async function listDevices(userId: string): Promise<UserDevice[]> {
    const rows = await q.listDevicesOf(db, userId);
    return rows.map((row, index) => ({
      id: row.id,
      index,
      product: row.product,
      udid: row.udid,
      status: row.status,
      expiresAt: row.expiresAt,
      paidYears: row.paidYears,
      name: row.deviceName,
      appleWaitReason: row.appleWaitUntil === null ? null : row.reason,
    }));
  }

  return {
    listDevices,

    /** The user's Registered devices, in list order. */
    async registeredDevices(userId: string): Promise<RegisteredDevice[]> {
      return (await q.registeredDevicesOf(db, userId)).map((row) => ({
        id: row.id,
        udid: row.udid,
        platform: row.platform,
        registeredAt: row.registeredAt,
        appleDeviceId: row.appleDeviceId,
        accountId: row.accountId,
      }));
    },

    // What the pool of developer accounts (modules/identity/pool/account-pool.ts) reads and moves. Each
    // takes the caller's transaction (`tx`): the pool decides and records a placement in one.

    /** Every device of a user, in list order. */
    async placementOf(userId: string, tx: Database = db): Promise<PlacedDevice[]> {
      return (await q.listDevicesOf(tx, userId)).map(placed);
    },

    /** Registered devices on any developer account. */
    async registeredOnAccounts(tx: Database = db): Promise<PlacedDevice[]> {
      return (await q.registeredOnAccounts(tx)).map(placed);
    },

    /** Who has Registered devices on these accounts. */
    usersWithDevicesOn: (accountIds: number[], tx: Database = db) => q.usersWithDevicesOn(tx, accountIds),

    /** The account a device is being registered on (or none again, when Apple refused it). */
    setDeviceAccount: (deviceId: number, accountId: number | null, tx: Database = db) =>
      q.setDeviceAccount(tx, deviceId, accountId),

    /** Devices re-registered on another account, with Apple's id of each there. */
    moveDevicesTo: (
      accountId: number,
      moved: Array<{ id: number; appleDeviceId: string | null }>,
      tx: Database = db,
    ) => q.moveDevicesTo(tx, accountId, moved),

    /** Devices Apple registered before accounts were recorded are on this (the first) account. */
    async adoptRegisteredDevices(accountId: number, tx: Database = db): Promise<PlacedDevice[]> {
      return (await q.adoptRegisteredDevices(tx, accountId)).map(placed);
    },

    /** Apple's id of a device registered before the developer account was configured. */
    async setAppleDeviceId(deviceId: number, appleDeviceId: string): Promise<void> {
      await q.setAppleDeviceId(db, deviceId, appleDeviceId);
    },

    async findDeviceByIndex(userId: string, index: number): Promise<UserDevice | undefined> {
      return (await listDevices(userId))[index];
    },

    /** device_info of /api/info (docs/product.md, Entities and fields): expired_date only when Registered. */
    async deviceInfo(userId: string): Promise<Device[]> {
      return (await listDevices(userId)).map((d) => ({
        Product: d.product,
        UDID: d.udid,
        status: d.status,
        ...(d.status === 'Registered' && d.expiresAt ? { expired_date: d.expiresAt.toISOString() } : {}),
        name: d.name,
        // Apple's wait (apple-wait.ts) is told to the owner; registration's other reasons are the admin's.
        ...(d.status === 'Process' && d.appleWaitReason ? { reason: d.appleWaitReason } : {}),
      }));
    },

    async addDevice(device: {
      userId: string;
      product: string;
      udid: string;
      status?: DeviceStatus;
      expiresAt?: Date | null;
    }) {
      return q.insertDevice(db, device);
    },

    /**
     * A paid registration year: status Pending and one more paid year. Runs in the caller's
     * transaction (`tx`) so it commits together with the payment event.
     */
    async recordRegistrationPayment(userId: string, deviceId: number, tx: Database = db): Promise<boolean> {
      const paid = await q.markDevicePaid(tx, userId, deviceId);
      // Leaves at commit: the registration worker of every process hears of it then.
      if (paid) await bus.publish({ kind: 'live', event: { type: 'device' }, userId }, tx);
      return paid;
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
