/**
 * Apple's wait (docs/sign-service.md, Registration): on some accounts a device Apple registered is
 * left out of the profiles made for hours after (operators of other signers report it). A profile
 * made after a device's registration that does not list it holds the device in Process with the
 * reason the owner reads on My page; the user's signs stay queued meanwhile (sign/queries.ts skips
 * them), since whatever they made would not install on it. A periodic task checks again, backing
 * off, by making the user's profile anew: once Apple lists the device it is Registered again and
 * the signs proceed.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { queryRows } from '../../db/client.js';
import { devices } from '../../db/schema/index.js';
import type { EventBus } from '../../platform/events.js';

/** What the owner reads on My page while Apple has not listed the device. */
export const APPLE_WAIT_REASON =
  'Apple has registered this device but does not list it in new profiles yet; on some accounts this takes a few hours. Sideport checks again by itself, and your signs start once Apple lists it.';

/**
 * Thrown where a profile was made without a device it was asked for: the sign that needed it goes
 * back to the queue, its attempt not counted.
 */
export class DeviceWaitsForApple extends Error {
  constructor(readonly udids: readonly string[]) {
    super(`Apple did not list ${udids.join(', ')} in the profile made for it; the device waits.`);
    this.name = 'DeviceWaitsForApple';
  }
}

export const isDeviceWaitingForApple = (err: unknown): err is DeviceWaitsForApple =>
  err instanceof DeviceWaitsForApple;

export interface AppleWaitSettings {
  /** The first check after a device is left out; doubled per check that finds it still left out. */
  firstCheckMs: number;
  maxCheckMs: number;
}

export const DEFAULT_APPLE_WAIT_SETTINGS: AppleWaitSettings = {
  firstCheckMs: 10 * 60_000,
  maxCheckMs: 6 * 3_600_000,
};

export interface AppleWaitDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  settings?: Partial<AppleWaitSettings>;
}

export function createAppleWait({ db, clock, bus, log, settings: overrides }: AppleWaitDeps) {
  const settings = { ...DEFAULT_APPLE_WAIT_SETTINGS, ...overrides };
  const publish = (userId: string) => bus.publish({ kind: 'live', event: { type: 'device' }, userId });

  /** Holds a user's Registered devices of these UDIDs in Process until their next check. */
  async function hold(userId: string, udids: readonly string[]): Promise<number> {
    if (udids.length === 0) return 0;
    const now = clock().toISOString();
    const rows = await db
      .update(devices)
      .set({
        status: 'Process',
        reason: APPLE_WAIT_REASON,
        leaseExpiresAt: null,
        appleWaitUntil: sql`${now}::timestamptz + least(${settings.firstCheckMs} * power(2, ${devices.appleWaitChecks}), ${settings.maxCheckMs}) * interval '1 millisecond'`,
        appleWaitChecks: sql`${devices.appleWaitChecks} + 1`,
      })
      .where(
        and(eq(devices.userId, userId), eq(devices.status, 'Registered'), inArray(devices.udid, [...udids])),
      )
      .returning({ id: devices.id, until: devices.appleWaitUntil });
    if (rows.length > 0) {
      log.warn({ userId, devices: rows }, 'devices left out of a new profile wait for Apple');
      await publish(userId);
    }
    return rows.length;
  }

  /** A profile listed every one of the user's Registered devices: their count of checks starts over. */
  async function listed(userId: string): Promise<void> {
    await db
      .update(devices)
      .set({ appleWaitChecks: 0 })
      .where(
        and(
          eq(devices.userId, userId),
          eq(devices.status, 'Registered'),
          sql`${devices.appleWaitChecks} > 0`,
        ),
      );
  }

  /**
   * Devices whose check is due become Registered again and `check` makes their user's profile
   * anew (the signing service's signingMaterial): one that Apple still leaves out is held again,
   * by `hold`, with a longer wait. Returns the users checked.
   */
  async function recheck(check: (userId: string) => Promise<unknown>): Promise<string[]> {
    const now = clock().toISOString();
    const due = await queryRows<{ user_id: string; udid: string }>(
      db,
      sql`
        update ${devices} set status = 'Registered', reason = null, apple_wait_until = null
        where id in (
          select id from ${devices}
          where status = 'Process' and apple_wait_until <= ${now}
          for update skip locked)
        returning user_id, udid`,
    );
    const users = new Map<string, string[]>();
    for (const row of due) users.set(row.user_id, [...(users.get(row.user_id) ?? []), row.udid]);
    for (const [userId, udids] of users) {
      try {
        await check(userId);
        log.info({ userId, udids }, 'Apple lists the devices that waited');
      } catch (err) {
        // Still left out: `hold` ran inside the check. Anything else (Apple down): held again.
        if (!isDeviceWaitingForApple(err)) {
          log.warn({ userId, err }, 'could not check the devices waiting for Apple; held again');
          await hold(userId, udids);
        }
      }
      await publish(userId);
    }
    return [...users.keys()];
  }

  return { hold, listed, recheck };
}

export type AppleWait = ReturnType<typeof createAppleWait>;
