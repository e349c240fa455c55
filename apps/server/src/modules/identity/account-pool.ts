/**
 * A pool of Apple developer accounts (docs/sign-service.md, A pool of developer accounts). Apple
 * registers at most 100 devices of each family per account per membership year, and a removed
 * device frees no slot until the membership renews; the pool spreads devices over several
 * accounts, each its own signing identity (apple-identity.ts: its certificate, its profiles).
 *
 * - A paid device goes to an account with a free slot in its family, on its user's account while
 *   that has one; otherwise the user moves, every device, to an account with room for all of them
 *   (never split: a profile lists one team's devices, and each artifact is signed once per user).
 * - An account an admin disabled, or whose key Apple stopped taking, is left: each registration
 *   pass re-registers its users' devices on the others and has their apps signed again.
 * - A payment for a device no account can take is refused before the checkout.
 *
 * Decisions are made one at a time (an advisory lock) and recorded with the slots they take before
 * Apple is asked; no transaction is held while Apple answers.
 */
import {
  DEVICE_FAMILIES,
  type AddDeveloperAccountRequest,
  type DeveloperAccount,
  type DeviceFamily,
} from '@sideport/contracts';
import { isUniqueViolation, type Database } from '../../db/client.js';
import { ascPrivateKeyPem } from '../../platform/config.js';
import { AppError, fail, badRequest, notFound, conflict } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import type { SecretBox } from '../../platform/secrets.js';
import { familyOf } from '../devices/family.js';
import { appleDeviceName, type DeviceRegistrar, type DeviceToRegister } from '../devices/registration.js';
import type { DeviceService, PlacedDevice } from '../devices/service.js';
import { createAppleIdentityProvider } from './apple-identity.js';
import { isAscError, type AscClient, type AscKey } from './asc-client.js';
import { membershipYear, noDevices, choosePlacement, type Candidate, type GroupDevice } from './placement.js';
import * as pq from './pool-queries.js';
import * as q from './queries.js';
import type { SigningIdentityProvider } from './ports.js';

/** An account the configuration gives: ASC_KEY_ID's first, then ASC_ACCOUNTS_FILE's. */
export interface ConfiguredAccount {
  keyId: string;
  issuerId: string;
  privateKeyPem: string;
  name?: string | undefined;
  membershipRenewsAt?: Date | undefined;
}

export interface AccountPoolDeps {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  devices: Pick<
    DeviceService,
    | 'registeredDevices'
    | 'setAppleDeviceId'
    | 'placementOf'
    | 'registeredOnAccounts'
    | 'usersWithDevicesOn'
    | 'setDeviceAccount'
    | 'moveDevicesTo'
    | 'adoptRegisteredDevices'
  >;
  /** Queues the users' Done signs again (modules/sign/resign.ts). */
  resign: { resignArtifacts(request: { userIds: string[]; reason: string }): Promise<unknown> };
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  /** ASC_KEY_ID's account first (it stays the first one), then ASC_ACCOUNTS_FILE's; at least one. */
  configured: readonly ConfiguredAccount[];
  /** The App Store Connect client of a key (ASC_BASE_URL and the clock applied). */
  client: (key: AscKey) => AscClient;
  /** SIGN_P12: the first account's own certificate. */
  p12?: { bytes: Buffer; password: string } | undefined;
  /** ASC_DEVICES_PER_FAMILY: slots of each family the pool uses on an account (Apple's 100, or fewer). */
  slotsPerFamily: number;
  /** A key that answered within this long is trusted; past it a pass asks Apple whether it still works. */
  keyCheckMs?: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** Who the audit log names for what the pool does by itself. */
export const POOL_ACTOR = 'sideport (account pool)';
const SEALED_KEY_PURPOSE = 'asc-private-key';
/**
 * A configured account whose key this process's configuration lacks: the process places no device
 * there and signs for nobody there, but leaves its devices be (another process may have the key,
 * and an admin decides: disabling it moves them).
 */
const NOT_CONFIGURED =
  "This server's configuration (ASC_KEY_ID or ASC_ACCOUNTS_FILE) has no key for it, so no device goes to it; disable it to move its devices.";
const HOUR_MS = 3_600_000;
const RELOCATIONS_PER_PASS = 50;

const PLURAL: Record<DeviceFamily, string> = {
  iPhone: 'iPhones',
  iPad: 'iPads',
  'Apple TV': 'Apple TVs',
  'Apple Watch': 'Apple Watches',
  Mac: 'Macs',
};

const isoDate = (date: Date) => date.toISOString().slice(0, 10);

/** A placement no account can take: it waits for a person (an account added, a membership renewed). */
class NoFreeSlot extends AppError {
  constructor(message: string) {
    super('NO_FREE_SLOT', message);
  }
}

interface Member {
  keyId: string;
  provider: SigningIdentityProvider & Required<Pick<SigningIdentityProvider, 'registerDevice'>>;
  /** The client the provider uses: the pool watches its answers for a refused key. */
  client: AscClient;
  /** Without the watch: asking whether the key works. */
  raw: AscClient;
}

/** Where a decision put a user's devices, and the slots it took for them. */
interface Plan {
  account: pq.AccountRow;
  member: Member;
  /** The user's devices that are on another account (or none) and are re-registered on this one. */
  moving: PlacedDevice[];
  /** The account the device being registered was on before (a renewal), to put back if Apple refuses it. */
  previousAccountId: number | null;
  /** Slots taken, with what each was before, to give back what Apple did not register. */
  taken: Array<{ udid: string; previous: pq.SlotRow | undefined }>;
}

/** What the pool knows of each account this membership year. */
interface Usage extends Candidate {
  users: Set<string>;
  devices: number;
  nextRenewal: Date | null;
}

export function createAccountPool(deps: AccountPoolDeps) {
  const { db, secrets, clock, devices, log } = deps;
  const limit = deps.slotsPerFamily;
  const keyCheckMs = deps.keyCheckMs ?? HOUR_MS;
  const primaryKeyId = deps.configured[0]!.keyId;
  const members = new Map<string, Member>();
  /** When each key last answered (this process): a pass checks the others. */
  const lastAnswered = new Map<string, number>();
  const checking = new Map<string, Promise<boolean>>();

  // ---- each account's identity ----

  /**
   * The account's client, watched: when Apple refuses its key (401, or 403 for want of a role),
   * the pool asks once more; refused again, the account is taken as rejected and its users move.
   * The check is not waited for: the call may have been made inside a transaction (the
   * certificate is made under a lock), which the check's own writes would wait on.
   */
  function watched(keyId: string, raw: AscClient): AscClient {
    const watch = <T>(call: () => Promise<T>): Promise<T> =>
      call().then(
        (value) => {
          lastAnswered.set(keyId, clock().getTime());
          return value;
        },
        (err: unknown) => {
          if (isKeyRejected(err)) {
            void confirmRejected(keyId, raw, err.message).catch((checkErr: unknown) =>
              log.warn({ err: checkErr, keyId }, 'could not check a refused App Store Connect key'),
            );
          }
          throw err;
        },
      );
    return {
      registerDevice: (device) => watch(() => raw.registerDevice(device)),
      listDevices: (filter) => watch(() => raw.listDevices(filter)),
      ensureBundleId: (bundleId) => watch(() => raw.ensureBundleId(bundleId)),
      createAdHocProfile: (profile) => watch(() => raw.createAdHocProfile(profile)),
      listProfiles: (filter) => watch(() => raw.listProfiles(filter)),
      deleteProfile: (id) => watch(() => raw.deleteProfile(id)),
      listCertificates: (filter) => watch(() => raw.listCertificates(filter)),
      createDistributionCertificate: (options) => watch(() => raw.createDistributionCertificate(options)),
    };
  }

  /** `accountId`: the row of an account other than the first, whose certificate is kept apart. */
  function makeMember(key: AscKey, accountId?: number): Member {
    const raw = deps.client(key);
    const client = watched(key.keyId, raw);
    const isPrimary = key.keyId === primaryKeyId;
    const provider = createAppleIdentityProvider({
      db,
      secrets,
      clock,
      asc: client,
      devices,
      keyId: key.keyId,
      // The first account keeps the setting it always had; each other account has its own.
      ...(isPrimary ? {} : { identitySetting: q.createdIdentitySetting(accountId) }),
      p12: isPrimary ? deps.p12 : undefined,
      log,
    });
    if (!provider.registerDevice) throw new Error('an Apple identity registers devices');
    return { keyId: key.keyId, provider: provider as Member['provider'], client, raw };
  }

  /** The identity of an account; undefined when this process has no key for it. */
  function memberOf(row: pq.AccountRow): Member | undefined {
    const known = members.get(row.keyId);
    if (known) return known;
    let privateKeyPem: string | undefined;
    if (row.source === 'console' && row.sealedPrivateKey) {
      privateKeyPem = secrets.open(row.sealedPrivateKey, SEALED_KEY_PURPOSE).toString('utf8');
    } else {
      privateKeyPem = deps.configured.find((c) => c.keyId === row.keyId)?.privateKeyPem;
    }
    if (privateKeyPem === undefined) return undefined;
    const member = makeMember({ keyId: row.keyId, issuerId: row.issuerId, privateKeyPem }, row.id);
    members.set(row.keyId, member);
    return member;
  }

  const primaryConfig = deps.configured[0]!;
  const primary = makeMember(primaryConfig);
  members.set(primaryKeyId, primary);

  const isUsable = (row: pq.AccountRow) => row.state === 'enabled' && memberOf(row) !== undefined;
  const isKeyRejected = (err: unknown): err is Error => isAscError(err) && err.kind === 'KEY_REJECTED';

  /** Asks Apple once more whether the key works; refused again, the account is rejected. */
  function confirmRejected(keyId: string, raw: AscClient, said: string): Promise<boolean> {
    let pending = checking.get(keyId);
    if (!pending) {
      pending = (async () => {
        try {
          await raw.listCertificates();
          return false;
        } catch (err) {
          if (!isAscError(err) || err.kind !== 'KEY_REJECTED') return false;
          await reject(keyId, said);
          return true;
        }
      })().finally(() => checking.delete(keyId));
      checking.set(keyId, pending);
    }
    return pending;
  }

  async function reject(keyId: string, said: string) {
    const row = (await pq.listAccounts(db)).find((a) => a.keyId === keyId);
    if (!row) return;
    const reason = `Apple refused its key on ${isoDate(clock())}: ${said}`;
    const changed = await pq.setAccountState(db, row.id, {
      state: 'rejected',
      reason,
      at: clock(),
      onlyFrom: 'enabled',
    });
    if (!changed) return;
    log.warn(
      { keyId },
      'App Store Connect refused a key of the pool: its devices move to the other accounts',
    );
    await deps.audit(POOL_ACTOR, 'reject-account', { id: String(row.id), key_id: keyId, reason });
    await wakeUsersOf(row.id);
  }

  /** Tells every process (their registration passes move the devices) and the users' pages. */
  async function wakeUsersOf(accountId: number) {
    for (const userId of await devices.usersWithDevicesOn([accountId])) {
      await deps.bus.publish({ kind: 'live', event: { type: 'device' }, userId });
    }
  }

  // ---- start: the configured accounts and the devices registered before there was a pool ----

  async function start() {
    const now = clock();
    for (const account of deps.configured) {
      // Twice: a process starting beside this one may insert the account first.
      for (let attempt = 1; ; attempt++) {
        const rows = await pq.listAccounts(db);
        // A new key of a team already in the pool (a rotated key) keeps its account: slots, devices, certificate.
        const same =
          rows.find((r) => r.keyId === account.keyId) ??
          rows.find((r) => r.issuerId.toLowerCase() === account.issuerId.toLowerCase());
        const fields = {
          keyId: account.keyId,
          issuerId: account.issuerId,
          name: account.name ?? same?.name ?? `Key ${account.keyId}`,
          membershipRenewsAt: account.membershipRenewsAt ?? null,
        };
        try {
          await (same
            ? pq.updateConfiguredAccount(db, same.id, fields)
            : pq.insertConfiguredAccount(db, fields));
          break;
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          if (attempt === 2) {
            throw new Error(
              `Key ${account.keyId} (issuer ${account.issuerId}) belongs to another account of the pool than its team's. One key per team: remove one of them.`,
              { cause: err },
            );
          }
        }
      }
    }
    // Devices registered on the one account of earlier versions: on the first account, each a slot.
    const first = (await pq.listAccounts(db)).find((a) => a.keyId === primaryKeyId)!;
    await db.transaction(async (tx) => {
      await pq.lockPlacement(tx);
      for (const device of await devices.adoptRegisteredDevices(first.id, tx)) {
        await pq.takeSlot(tx, {
          accountId: first.id,
          udid: device.udid,
          family: familyOf(device),
          userId: device.userId,
          registeredAt: now,
        });
      }
    });
  }
  let started: Promise<void> | undefined;
  const ready = () => {
    if (!started) {
      started = start();
      started.catch(() => (started = undefined));
    }
    return started;
  };

  // ---- what each account holds ----

  async function usageOf(tx: Database, rows: readonly pq.AccountRow[]): Promise<Map<number, Usage>> {
    const now = clock();
    const onAccounts = await devices.registeredOnAccounts(tx);
    const usage = new Map<number, Usage>();
    for (const row of rows) {
      const year = membershipYear(row.membershipRenewsAt, now);
      // A slot counts when taken this membership year, or while its device is still on the account.
      const slots = new Map<string, DeviceFamily>();
      for (const slot of await pq.slotsSince(tx, row.id, year.start)) slots.set(slot.udid, slot.family);
      const here = onAccounts.filter((d) => d.accountId === row.id);
      for (const device of here) slots.set(device.udid, familyOf(device));
      const used = noDevices();
      for (const family of slots.values()) used[family]++;
      usage.set(row.id, {
        id: row.id,
        used,
        held: new Set(slots.keys()),
        users: new Set(here.map((d) => d.userId)),
        devices: here.length,
        nextRenewal: year.nextRenewal,
      });
    }
    return usage;
  }

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
      const rows = (await pq.listAccounts(tx)).filter((r) => isUsable(r) && !exclude.has(r.id));
      const placed = await devices.placementOf(userId, tx);
      const registered = placed.filter((d) => d.status === 'Registered' && d.id !== device?.id);
      const joining = device ? placed.find((d) => d.id === device.id) : undefined;
      const group = joining ? [...registered, joining] : registered;
      if (group.length === 0) return undefined;
      const usage = await usageOf(tx, rows);
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
        taken.push({ udid: member.udid, previous: await pq.findSlot(tx, account.id, member.udid) });
        await pq.takeSlot(tx, {
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
        member: memberOf(account)!,
        moving: registered.filter((d) => d.accountId !== account.id),
        previousAccountId: joining?.accountId ?? null,
        taken,
      };
    });
  }

  /** Gives back the slots of devices Apple did not register after all. */
  async function giveBack(plan: Plan, udids: readonly string[]) {
    for (const { udid, previous } of plan.taken.filter((t) => udids.includes(t.udid))) {
      await pq.restoreSlot(db, plan.account.id, udid, previous);
    }
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
    log.info(
      { userId, to: plan.account.keyId, devices: moved.length },
      "moved a user's devices to another developer account",
    );
    await deps.audit(POOL_ACTOR, 'move-devices', {
      user: userId,
      to: plan.account.keyId,
      from: from.map((id) => (id === null ? null : String(id))),
      devices: moved.length,
      why,
    });
    await deps.resign.resignArtifacts({
      userIds: [userId],
      reason: `devices moved to developer account ${plan.account.keyId}: ${why}`,
    });
    await deps.bus.publish({ kind: 'live', event: { type: 'device' }, userId });
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
    const rows = (await pq.listAccounts(db)).filter(isUsable);
    const usage = await usageOf(db, rows);
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

  // ---- registration (devices/registration.ts) ----

  const registrar: Required<Pick<DeviceRegistrar, 'registerDevice' | 'needsAPerson' | 'beforePass'>> = {
    async registerDevice(device) {
      await ready();
      const exclude = new Set<number>();
      for (;;) {
        const plan = await decide(device.userId, device, exclude);
        if (!plan) throw new NoFreeSlot(await noRoomFor(device, 'admin'));
        try {
          await move(
            device.userId,
            plan,
            `its account has no free ${familyOf(device)} slot for a new device`,
          );
          return await plan.member.provider.registerDevice(device);
        } catch (err) {
          await giveBack(plan, [device.udid]);
          await devices.setDeviceAccount(device.id, plan.previousAccountId);
          // Another account may take it: this one's key was rejected, or Apple counts devices on it
          // that Sideport did not register.
          const rejected =
            isKeyRejected(err) && (await confirmRejected(plan.member.keyId, plan.member.raw, err.message));
          const full = isAscError(err) && err.kind === 'DEVICE_LIMIT';
          if (!rejected && !full) throw err;
          exclude.add(plan.account.id);
          const left = (await pq.listAccounts(db)).filter((r) => isUsable(r) && !exclude.has(r.id));
          if (left.length === 0) throw err;
        }
      }
    },

    needsAPerson: (err) => err instanceof NoFreeSlot || (primary.provider.needsAPerson?.(err) ?? false),

    /** Moves the users of accounts no longer in use, and asks Apple about keys not heard from lately. */
    async beforePass() {
      await ready();
      const rows = await pq.listAccounts(db);
      const now = clock().getTime();
      for (const row of rows.filter(isUsable)) {
        if (now - (lastAnswered.get(row.keyId) ?? 0) < keyCheckMs) continue;
        const member = memberOf(row)!;
        try {
          await member.raw.listCertificates();
          lastAnswered.set(row.keyId, now);
        } catch (err) {
          // Refused: asked once more, and recorded, before the moves below.
          if (isKeyRejected(err)) await confirmRejected(row.keyId, member.raw, err.message);
        }
      }
      const outOfUse = (await pq.listAccounts(db)).filter((r) => r.state !== 'enabled');
      const stranded = await devices.usersWithDevicesOn(outOfUse.map((r) => r.id));
      for (const userId of stranded.slice(0, RELOCATIONS_PER_PASS)) {
        const plan = await decide(userId, undefined, new Set());
        if (!plan) continue;
        const account = outOfUse.find((r) => plan.moving.some((d) => d.accountId === r.id));
        await move(
          userId,
          plan,
          account ? `${account.name} (${account.keyId}) is ${account.state}` : 'its account is not in use',
        ).catch((err: unknown) =>
          log.warn({ err, userId }, "could not move a user's devices to another developer account"),
        );
      }
    },
  };

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
    const accounts = new Set(registered.map((d) => d.accountId));
    const [only] = accounts;
    if (accounts.size === 1 && only !== null && only !== undefined) {
      const row = await pq.findAccount(db, only);
      const member = row ? memberOf(row) : undefined;
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

  // ---- the admin console ----

  async function view(row: pq.AccountRow, usage: Usage): Promise<DeveloperAccount> {
    const member = memberOf(row);
    const details = member?.provider.details
      ? await member.provider.details().catch(() => undefined)
      : undefined;
    return {
      id: String(row.id),
      name: row.name,
      key_id: row.keyId,
      issuer_id: row.issuerId,
      team_id: details?.teamId ?? null,
      source: row.source,
      primary: row.keyId === primaryKeyId,
      state: row.state,
      reason: row.state === 'enabled' ? (member ? null : NOT_CONFIGURED) : row.stateReason,
      membership_renews_at: usage.nextRenewal ? isoDate(usage.nextRenewal) : null,
      users: usage.users.size,
      devices: usage.devices,
      slots: DEVICE_FAMILIES.map((family) => ({
        family,
        used: usage.used[family],
        free: Math.max(0, limit - usage.used[family]),
        limit,
      })),
    };
  }

  async function viewOf(id: number): Promise<DeveloperAccount> {
    const row = await pq.findAccount(db, id);
    if (!row) throw notFound('This account');
    return view(row, (await usageOf(db, [row])).get(row.id)!);
  }

  /**
   * A renewal date as given (YYYY-MM-DD): a real date, and the next renewal at most a year away.
   * Kept as that next renewal (a past date rolls forward by years), so what is stored, shown and
   * audited is one date.
   */
  function renewalDate(text: string | null | undefined): Date | null {
    if (text === null || text === undefined) return null;
    const date = new Date(`${text}T00:00:00Z`);
    if (Number.isNaN(date.getTime()) || isoDate(date) !== text) {
      throw badRequest('Give the membership renewal date as YYYY-MM-DD, or null.');
    }
    const { nextRenewal } = membershipYear(date, clock());
    if (nextRenewal === null) {
      throw badRequest(
        'The membership renewal date is at most a year away: give the next renewal, as Apple shows it on the membership page.',
      );
    }
    return nextRenewal;
  }

  /** Apple's answer to a key: it works, or a sentence saying why not. */
  async function keyWorks(raw: AscClient): Promise<string | undefined> {
    try {
      await raw.listCertificates();
      return undefined;
    } catch (err) {
      if (isAscError(err) && err.kind === 'KEY_REJECTED') {
        // Apple's words only when Apple answered; a refusal of ours is ours.
        const why = err.apple
          ? `App Store Connect refused this key (${err.apple.detail ? `Apple said: "${err.apple.detail}"` : `status ${err.apple.status}, no explanation`}).`
          : err.message;
        return `${why} Check the key id, the issuer id and the .p8 text, and that the key has the Admin role.`;
      }
      throw err;
    }
  }

  return {
    ready,
    /** The ASC_KEY_ID account's identity: what the console's identity card shows. */
    primary: primary.provider,
    registrar,
    identityOf,

    /** Every account's identity this process has a key for, the first account first. */
    async providers(): Promise<SigningIdentityProvider[]> {
      await ready();
      const rows = await pq.listAccounts(db);
      const sorted = [...rows].sort(
        (a, b) => Number(b.keyId === primaryKeyId) - Number(a.keyId === primaryKeyId),
      );
      return sorted
        .map(memberOf)
        .filter((m): m is Member => m !== undefined)
        .map((m) => m.provider);
    },

    /** The identity of an account by its id (a profile made there is deleted there). */
    async providerOf(accountId: number): Promise<SigningIdentityProvider | undefined> {
      const row = await pq.findAccount(db, accountId);
      return row ? memberOf(row)?.provider : undefined;
    },

    /**
     * Before a device's checkout (GET /api/pay/device/{index}): the sentence that refuses it when
     * no account can take it with the user's other devices; undefined when one can.
     */
    async paymentRefusal(userId: string, deviceId: number): Promise<string | undefined> {
      await ready();
      const placed = await devices.placementOf(userId);
      const device = placed.find((d) => d.id === deviceId);
      if (!device) return undefined;
      const registered = placed.filter((d) => d.status === 'Registered' && d.id !== deviceId);
      const rows = (await pq.listAccounts(db)).filter(isUsable);
      const usage = await usageOf(db, rows);
      const chosen = choosePlacement({
        candidates: rows.map((r) => usage.get(r.id)!),
        current: currentAccount(placed, deviceId),
        group: asGroup([...registered, device]),
        limit,
      });
      return chosen ? undefined : noRoomFor(device, 'payer');
    },

    /** GET /api/admin/accounts: the first account first, then in the order they joined. */
    async list(): Promise<DeveloperAccount[]> {
      await ready();
      const rows = await pq.listAccounts(db);
      const usage = await usageOf(db, rows);
      const views = await Promise.all(rows.map((row) => view(row, usage.get(row.id)!)));
      return views.sort((a, b) => Number(b.primary) - Number(a.primary));
    },

    /** POST /api/admin/accounts: a key checked with Apple, then kept sealed with SECRET_KEY. */
    async add(request: AddDeveloperAccountRequest, actor: string): Promise<DeveloperAccount> {
      await ready();
      const privateKeyPem = ascPrivateKeyPem(request.private_key.replace(/\\n/g, '\n').trim());
      if (!privateKeyPem) {
        throw badRequest(
          'The private key must be the text of the AuthKey .p8 file (a PEM PRIVATE KEY on the P-256 curve).',
        );
      }
      const renewsAt = renewalDate(request.membership_renews_at);
      const rows = await pq.listAccounts(db);
      const sameKey = rows.find((r) => r.keyId === request.key_id);
      if (sameKey) throw conflict(`Key ${request.key_id} is already in the pool (${sameKey.name}).`);
      const sameTeam = rows.find((r) => r.issuerId.toLowerCase() === request.issuer_id.toLowerCase());
      if (sameTeam) {
        throw conflict(
          `This team is already in the pool with key ${sameTeam.keyId} (${sameTeam.name}): one key per team, since its devices count once.`,
        );
      }
      const key = { keyId: request.key_id, issuerId: request.issuer_id, privateKeyPem };
      const refusal = await keyWorks(deps.client(key));
      if (refusal) throw badRequest(refusal);
      let row: pq.AccountRow;
      try {
        row = await pq.insertConsoleAccount(db, {
          keyId: key.keyId,
          issuerId: key.issuerId,
          name: request.name?.trim() || `Key ${key.keyId}`,
          sealedPrivateKey: secrets.seal(privateKeyPem, SEALED_KEY_PURPOSE),
          membershipRenewsAt: renewsAt,
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`Key ${key.keyId} or its team is already in the pool.`);
        throw err;
      }
      await deps.audit(actor, 'add-account', { id: String(row.id), key_id: row.keyId, name: row.name });
      return viewOf(row.id);
    },

    /** An admin takes an account out of the pool: its users' devices move to the others. */
    async disable(id: number, actor: string): Promise<DeveloperAccount> {
      await ready();
      const row = await pq.findAccount(db, id);
      if (!row) throw notFound('This account');
      if (row.state !== 'enabled') throw conflict('This account is already out of the pool.');
      const reason = `Disabled by ${actor} on ${isoDate(clock())}.`;
      await pq.setAccountState(db, id, { state: 'disabled', reason, at: clock() });
      await deps.audit(actor, 'disable-account', { id: String(id), key_id: row.keyId });
      await wakeUsersOf(id);
      return viewOf(id);
    },

    /** An admin puts an account back in the pool, once Apple takes its key again. */
    async enable(id: number, actor: string): Promise<DeveloperAccount> {
      await ready();
      const row = await pq.findAccount(db, id);
      if (!row) throw notFound('This account');
      if (row.state === 'enabled') throw conflict('This account is already in the pool.');
      const member = memberOf(row);
      if (!member) {
        throw conflict(
          "This server's configuration (ASC_KEY_ID or ASC_ACCOUNTS_FILE) has no key for this account: put it back there first.",
        );
      }
      const refusal = await keyWorks(member.raw);
      if (refusal) throw conflict(refusal);
      lastAnswered.set(row.keyId, clock().getTime());
      await pq.setAccountState(db, id, { state: 'enabled', reason: null, at: clock() });
      await deps.audit(actor, 'enable-account', { id: String(id), key_id: row.keyId });
      return viewOf(id);
    },

    /** PATCH /api/admin/accounts/{id}: when the account's membership renews. */
    async setRenewal(id: number, renewsAt: string | null, actor: string): Promise<DeveloperAccount> {
      await ready();
      const date = renewalDate(renewsAt);
      const row = await pq.setMembershipRenewal(db, id, date);
      if (!row) throw notFound('This account');
      // What was stored: a past date is kept as the next renewal it rolls forward to.
      await deps.audit(actor, 'set-account-renewal', {
        id: String(id),
        key_id: row.keyId,
        renews_at: row.membershipRenewsAt ? isoDate(row.membershipRenewsAt) : null,
      });
      return viewOf(id);
    },
  };
}

export type AccountPool = ReturnType<typeof createAccountPool>;
