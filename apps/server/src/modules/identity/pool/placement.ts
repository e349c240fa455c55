/**
 * Where each user's devices go (docs/sign-service.md, A pool of developer accounts): all of them
 * on one account with a free slot in each of their families, decided one at a time under the
 * placement lock and recorded with the slots taken before Apple is asked; a move re-registers the
 * user's devices on their new account and has their apps signed again there. The rules of the
 * choice, as pure functions, are placement-rules.ts.
 */
import { AppError, fail } from '../../../platform/errors.js';
import type { Database } from '../../../db/client.js';
import type { EventBus } from '../../../platform/events.js';
import type { DeviceFamily } from '@sideport/contracts';
import { familyOf } from '../../devices/family.js';
import { appleDeviceName, type DeviceToRegister } from '../../devices/registration.js';
import type { DeviceService, PlacedDevice } from '../../devices/service.js';
import type { SigningIdentityProvider } from '../ports.js';
import { POOL_ACTOR, type Member, type PoolAccounts } from './accounts.js';
import { choosePlacement, isoDate, type GroupDevice } from './placement-rules.js';
import * as pq from './queries.js';
import * as sq from './slot-queries.js';
import type { TeamMoves } from './team-moves.js';
import { usageOf } from './usage.js';

const PLURAL: Record<DeviceFamily, string> = {
  iPhone: 'iPhones',
  iPad: 'iPads',
  'Apple TV': 'Apple TVs',
  'Apple Watch': 'Apple Watches',
  Mac: 'Macs',
};

/** A placement no account can take: it waits for a person (an account added, a membership renewed). */
export class NoFreeSlot extends AppError {
  constructor(message: string) {
    super('NO_FREE_SLOT', message);
  }
}

/** Where a decision put a user's devices, and the slots it took for them. */
export interface Plan {
  account: pq.AccountRow;
  member: Member;
  /** The user's devices that are on another account (or none) and are re-registered on this one. */
  moving: PlacedDevice[];
  /** The account the device being registered was on before (a renewal), to put back if Apple refuses it. */
  previousAccountId: number | null;
  /** Slots taken, with what each was before, to give back what Apple did not register. */
  taken: Array<{ udid: string; previous: sq.SlotRow | undefined }>;
}

export interface PlacementDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  devices: Pick<DeviceService, 'placementOf' | 'registeredOnAccounts' | 'setDeviceAccount' | 'moveDevicesTo'>;
  /** Queues the users' Done signs again (modules/sign/resign.ts). */
  resign: { resignArtifacts(request: { userIds: string[]; reason: string }): Promise<unknown> };
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  accounts: Pick<PoolAccounts, 'isUsable' | 'memberOf'>;
  /** Where each user's moves to another team are kept, for the warning before their next install. */
  teamMoves?: Pick<TeamMoves, 'record'>;
  /** ASC_DEVICES_PER_FAMILY: slots of each family the pool uses on an account. */
  limit: number;
  /** The pool's start (start.ts), which every answer waits for. */
  ready: () => Promise<void>;
  log: { info(obj: object, msg: string): void };
}

export function createPlacement(deps: PlacementDeps) {
  const { db, clock, bus, devices, resign, audit, accounts, limit, ready, log } = deps;

  /** The account a user's devices are on: of their Registered devices, else of those being registered. */
  function currentAccount(placed: readonly PlacedDevice[], except?: number): number | undefined {
    const count = (list: readonly PlacedDevice[]) => {
      const counts = new Map<number, number>();
      for (const d of list)
        if (d.accountId !== null && d.id !== except)
          counts.set(d.accountId, (counts.get(d.accountId) ?? 0) + 1);
      return [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0];
    };
    return (
      count(placed.filter((d) => d.status === 'Registered')) ??
      count(placed.filter((d) => d.status === 'Pending' || d.status === 'Process'))
    );
  }

  const asGroup = (list: readonly PlacedDevice[]): GroupDevice[] =>
    list.map((d) => ({ udid: d.udid, family: familyOf(d) }));

  /**
   * Decides, under the placement lock, where the user's devices go: their Registered devices and
   * `device` (being registered) together. The slots the group lacks there are taken and `device`
   * is marked as going there, in the same transaction. undefined: no account has room for them all.
   */
  async function decide(
    userId: string,
    device: DeviceToRegister | undefined,
    exclude: ReadonlySet<number>,
  ): Promise<Plan | undefined> {
    return db.transaction(async (tx) => {
      await pq.lockPlacement(tx);
      const rows = (await pq.listAccounts(tx)).filter((r) => accounts.isUsable(r) && !exclude.has(r.id));
      const placed = await devices.placementOf(userId, tx);
      const registered = placed.filter((d) => d.status === 'Registered' && d.id !== device?.id);
      const joining = device ? placed.find((d) => d.id === device.id) : undefined;
      const group = joining ? [...registered, joining] : registered;
      if (group.length === 0) return undefined;
      const usage = await usageOf(tx, rows, devices, clock());
      const chosen = choosePlacement({
        candidates: rows.map((r) => usage.get(r.id)!),
        current: currentAccount(placed, device?.id),
        group: asGroup(group),
        limit,
      });
      if (!chosen) return undefined;
      const account = rows.find((r) => r.id === chosen.id)!;
      const now = clock();
      const taken: Plan['taken'] = [];
      for (const member of group) {
        if (chosen.held.has(member.udid) || taken.some((t) => t.udid === member.udid)) continue;
        taken.push({ udid: member.udid, previous: await sq.findSlot(tx, account.id, member.udid) });
        await sq.takeSlot(tx, {
          accountId: account.id,
          udid: member.udid,
          family: familyOf(member),
          userId,
          registeredAt: now,
        });
      }
      if (joining) await devices.setDeviceAccount(joining.id, account.id, tx);
      return {
        account,
        member: accounts.memberOf(account)!,
        moving: registered.filter((d) => d.accountId !== account.id),
        previousAccountId: joining?.accountId ?? null,
        taken,
      };
    });
  }

  /** Gives back the slots of devices Apple did not register after all. */
  async function giveBack(plan: Plan, udids: readonly string[]) {
    for (const { udid, previous } of plan.taken.filter((t) => udids.includes(t.udid))) {
      await sq.restoreSlot(db, plan.account.id, udid, previous);
    }
  }

  /** The teams of a move, as the accounts' certificates name them (null where not known). */
  async function teamsOf(fromAccountId: number | null, plan: Plan) {
    const teamOf = async (member: Member | undefined) => (await member?.provider.details?.())?.teamId ?? null;
    const fromRow = fromAccountId === null ? undefined : await pq.findAccount(db, fromAccountId);
    return {
      fromAccountId,
      fromTeam: await teamOf(fromRow && accounts.memberOf(fromRow)),
      toTeam: await teamOf(plan.member),
    };
  }

  /**
   * Re-registers the user's devices of `plan.moving` on the plan's account and moves them there;
   * their artifacts are then signed again with that account's identity.
   */
  async function move(userId: string, plan: Plan, why: string) {
    if (plan.moving.length === 0) return;
    const moved: Array<{ id: number; appleDeviceId: string | null }> = [];
    try {
      for (const device of plan.moving) {
        const { appleDeviceId } = await plan.member.provider.registerDevice({
          id: device.id,
          userId,
          udid: device.udid,
          product: device.product,
          platform: device.platform,
          name: appleDeviceName(device),
        });
        moved.push({ id: device.id, appleDeviceId });
      }
    } catch (err) {
      await giveBack(
        plan,
        plan.moving.filter((d) => !moved.some((m) => m.id === d.id)).map((d) => d.udid),
      );
      throw err;
    }
    const from = [...new Set(plan.moving.map((d) => d.accountId))];
    await db.transaction((tx) => devices.moveDevicesTo(plan.account.id, moved, tx));
    const teams = await teamsOf(from.find((id) => id !== null) ?? null, plan);
    // From one account to another is from one team to another (one key per team in the pool): what
    // the old team's signature kept (keychain, app groups) stays there.
    if (teams.fromAccountId !== null)
      await deps.teamMoves?.record({ userId, toAccountId: plan.account.id, reason: why, ...teams });
    log.info(
      { userId, to: plan.account.keyId, devices: moved.length },
      "moved a user's devices to another developer account",
    );
    await audit(POOL_ACTOR, 'move-devices', {
      user: userId,
      to: plan.account.keyId,
      from: from.map((id) => (id === null ? null : String(id))),
      devices: moved.length,
      from_team: teams.fromTeam,
      to_team: teams.toTeam,
      why,
    });
    await resign.resignArtifacts({
      userIds: [userId],
      reason: `devices moved to developer account ${plan.account.keyId}: ${why}`,
    });
    await bus.publish({ kind: 'live', event: { type: 'device' }, userId });
  }

  /**
   * Why nothing can take the device, for the person paying and the admin console: its family is
   * full everywhere, or no account has room for it with the user's other devices.
   */
  async function noRoomFor(
    device: { product: string; platform: 'IOS' | 'MAC_OS' },
    reader: 'payer' | 'admin',
  ): Promise<string> {
    const family = familyOf(device);
    const rows = (await pq.listAccounts(db)).filter(accounts.isUsable);
    const usage = await usageOf(db, rows, devices, clock());
    const renewals = rows
      .map((r) => usage.get(r.id)!.nextRenewal)
      .filter((d): d is Date => d !== null)
      .sort((a, b) => a.getTime() - b.getTime());
    const when = renewals[0] ? `after ${isoDate(renewals[0])}` : 'later';
    const hasRoom = rows.some((r) => usage.get(r.id)!.used[family] < limit);
    if (reader === 'admin') {
      return `No developer account of the pool has ${hasRoom ? `room for this ${family} with its owner's other devices` : `a free ${family} slot`} this membership year: add an account in the Accounts tab, or retry ${when}.`;
    }
    return hasRoom
      ? `No Apple developer account of this server has room for this ${family} together with your other devices this membership year, so it cannot be registered now. Nothing was charged; please try again ${when}.`
      : `Every Apple developer account of this server is full for ${PLURAL[family]} this membership year, so this ${family} cannot be registered now. Nothing was charged; please try again ${when}.`;
  }

  /**
   * The identity that signs for a user: the account their Registered devices are on. Devices not
   * on one account yet (registered with the dev identity before a key was set, or split by an
   * older version) are placed first; undefined when the user has no Registered device.
   */
  async function identityOf(
    userId: string,
  ): Promise<{ provider: SigningIdentityProvider; accountId: number } | undefined> {
    await ready();
    const registered = (await devices.placementOf(userId)).filter((d) => d.status === 'Registered');
    if (registered.length === 0) return undefined;
    const onAccounts = new Set(registered.map((d) => d.accountId));
    const [only] = onAccounts;
    if (onAccounts.size === 1 && only !== null && only !== undefined) {
      const row = await pq.findAccount(db, only);
      const member = row ? accounts.memberOf(row) : undefined;
      if (member) return { provider: member.provider, accountId: only };
      // Another process may hold the key: the devices stay where they are until an admin decides.
      if (row?.state === 'enabled') {
        throw fail('ACCOUNT_KEY_MISSING', row.keyId);
      }
    }
    const plan = await decide(userId, undefined, new Set());
    if (!plan) {
      throw new NoFreeSlot(
        'No Apple developer account of this server has room for all your devices this membership year. Please try again later.',
      );
    }
    // Devices Apple has not seen (the dev identity's) are registered when their profile is made.
    const unseen = plan.moving.filter((d) => d.accountId === null && d.appleDeviceId === null);
    await db.transaction(async (tx) => {
      for (const device of unseen) await devices.setDeviceAccount(device.id, plan.account.id, tx);
    });
    await move(
      userId,
      { ...plan, moving: plan.moving.filter((d) => !unseen.includes(d)) },
      'its devices were on no single account',
    );
    return { provider: plan.member.provider, accountId: plan.account.id };
  }

  /**
   * Before a device's checkout (GET /api/pay/device/{index}): the sentence that refuses it when
   * no account can take it with the user's other devices; undefined when one can.
   */
  async function paymentRefusal(userId: string, deviceId: number): Promise<string | undefined> {
    await ready();
    const placed = await devices.placementOf(userId);
    const device = placed.find((d) => d.id === deviceId);
    if (!device) return undefined;
    const registered = placed.filter((d) => d.status === 'Registered' && d.id !== deviceId);
    const rows = (await pq.listAccounts(db)).filter(accounts.isUsable);
    const usage = await usageOf(db, rows, devices, clock());
    const chosen = choosePlacement({
      candidates: rows.map((r) => usage.get(r.id)!),
      current: currentAccount(placed, deviceId),
      group: asGroup([...registered, device]),
      limit,
    });
    return chosen ? undefined : noRoomFor(device, 'payer');
  }

  return { decide, giveBack, move, noRoomFor, identityOf, paymentRefusal };
}

export type Placement = ReturnType<typeof createPlacement>;
