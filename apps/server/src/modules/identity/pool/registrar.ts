/**
 * The pool as the devices domain's registrar (devices/registration.ts): a paid device is
 * registered on the account placement chooses, on another when Apple refuses it there for a
 * rejected key or a full account; each pass first moves the users of accounts no longer in use.
 */
import type { Database } from '../../../db/client.js';
import { familyOf } from '../../devices/family.js';
import type { DeviceRegistrar } from '../../devices/registration.js';
import type { DeviceService } from '../../devices/service.js';
import { isAscError } from '../asc-errors.js';
import { isKeyRejected, type PoolAccounts } from './accounts.js';
import { NoFreeSlot, type Placement } from './placement.js';
import * as pq from './queries.js';

const HOUR_MS = 3_600_000;
const RELOCATIONS_PER_PASS = 50;

export type PoolRegistrar = Required<Pick<DeviceRegistrar, 'registerDevice' | 'needsAPerson' | 'beforePass'>>;

export interface PoolRegistrarDeps {
  db: Database;
  devices: Pick<DeviceService, 'setDeviceAccount' | 'usersWithDevicesOn'>;
  accounts: Pick<PoolAccounts, 'primary' | 'isUsable' | 'confirmRejected' | 'checkQuietKeys'>;
  placement: Pick<Placement, 'decide' | 'move' | 'giveBack' | 'noRoomFor'>;
  /** The pool's start (start.ts), which every registration waits for. */
  ready: () => Promise<void>;
  /** A key that answered within this long is trusted; past it a pass asks Apple whether it still works. */
  keyCheckMs?: number;
  log: { warn(obj: object, msg: string): void };
}

export function createPoolRegistrar(deps: PoolRegistrarDeps): PoolRegistrar {
  const { db, devices, accounts, placement, ready, log } = deps;
  const keyCheckMs = deps.keyCheckMs ?? HOUR_MS;
  return {
    async registerDevice(device) {
      await ready();
      const exclude = new Set<number>();
      for (;;) {
        const plan = await placement.decide(device.userId, device, exclude);
        if (!plan) throw new NoFreeSlot(await placement.noRoomFor(device, 'admin'));
        try {
          await placement.move(
            device.userId,
            plan,
            `its account has no free ${familyOf(device)} slot for a new device`,
          );
          return await plan.member.provider.registerDevice(device);
        } catch (err) {
          await placement.giveBack(plan, [device.udid]);
          await devices.setDeviceAccount(device.id, plan.previousAccountId);
          // Another account may take it: this one's key was rejected, or Apple counts devices on it
          // that Sideport did not register.
          const rejected =
            isKeyRejected(err) &&
            (await accounts.confirmRejected(plan.member.keyId, plan.member.raw, err.message));
          const full = isAscError(err) && err.kind === 'DEVICE_LIMIT';
          if (!rejected && !full) throw err;
          exclude.add(plan.account.id);
          const left = (await pq.listAccounts(db)).filter((r) => accounts.isUsable(r) && !exclude.has(r.id));
          if (left.length === 0) throw err;
        }
      }
    },

    needsAPerson: (err) =>
      err instanceof NoFreeSlot || (accounts.primary.provider.needsAPerson?.(err) ?? false),

    /** Moves the users of accounts no longer in use, and asks Apple about keys not heard from lately. */
    async beforePass() {
      await ready();
      await accounts.checkQuietKeys(await pq.listAccounts(db), keyCheckMs);
      const outOfUse = (await pq.listAccounts(db)).filter((r) => r.state !== 'enabled');
      const stranded = await devices.usersWithDevicesOn(outOfUse.map((r) => r.id));
      for (const userId of stranded.slice(0, RELOCATIONS_PER_PASS)) {
        const plan = await placement.decide(userId, undefined, new Set());
        if (!plan) continue;
        const account = outOfUse.find((r) => plan.moving.some((d) => d.accountId === r.id));
        await placement
          .move(
            userId,
            plan,
            account ? `${account.name} (${account.keyId}) is ${account.state}` : 'its account is not in use',
          )
          .catch((err: unknown) =>
            log.warn({ err, userId }, "could not move a user's devices to another developer account"),
          );
      }
    },
  };
}
