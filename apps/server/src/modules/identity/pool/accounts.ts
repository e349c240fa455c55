/**
 * The accounts of the pool as identities: each account's App Store Connect client and its signing
 * identity (apple-identity.ts), made once per process for the accounts it has a key for, and the
 * watch on their keys: an account whose key Apple stops taking is marked rejected, and its users'
 * devices move to the others (placement.ts).
 */
import type { Database } from '../../../db/client.js';
import type { EventBus } from '../../../platform/events.js';
import type { SecretBox } from '../../../platform/secrets.js';
import type { DeviceService } from '../../devices/service.js';
import { createAppleIdentityProvider } from '../apple-identity.js';
import { isAscError, type AscError } from '../asc-errors.js';
import type { AscClient } from '../asc-client.js';
import type { AscKey } from '../asc-transport.js';
import type { SigningIdentityProvider } from '../ports.js';
import * as q from '../queries.js';
import { isoDate } from './placement-rules.js';
import * as pq from './queries.js';

/** An account the configuration gives: ASC_KEY_ID's first, then ASC_ACCOUNTS_FILE's. */
export interface ConfiguredAccount {
  keyId: string;
  issuerId: string;
  privateKeyPem: string;
  name?: string | undefined;
  membershipRenewsAt?: Date | undefined;
}

/** Who the audit log names for what the pool does by itself. */
export const POOL_ACTOR = 'sideport (account pool)';
/** How a key an admin added in the console is sealed with SECRET_KEY. */
export const SEALED_KEY_PURPOSE = 'asc-private-key';

export interface Member {
  keyId: string;
  provider: SigningIdentityProvider & Required<Pick<SigningIdentityProvider, 'registerDevice'>>;
  /** The client the provider uses: the pool watches its answers for a refused key. */
  client: AscClient;
  /** Without the watch: asking whether the key works. */
  raw: AscClient;
}

export interface PoolAccountsDeps {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  devices: Pick<DeviceService, 'registeredDevices' | 'setAppleDeviceId' | 'usersWithDevicesOn'>;
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  /** ASC_KEY_ID's account first (it stays the first one), then ASC_ACCOUNTS_FILE's; at least one. */
  configured: readonly ConfiguredAccount[];
  /** The App Store Connect client of a key (ASC_BASE_URL and the clock applied). */
  client: (key: AscKey) => AscClient;
  /** SIGN_P12: the first account's own certificate. */
  p12?: { bytes: Buffer; password: string } | undefined;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** Apple refused the key (401, or 403 for want of a role). */
export const isKeyRejected = (err: unknown): err is AscError =>
  isAscError(err) && err.kind === 'KEY_REJECTED';

export function createPoolAccounts(deps: PoolAccountsDeps) {
  const { db, secrets, clock, devices, log } = deps;
  const primaryKeyId = deps.configured[0]!.keyId;
  const members = new Map<string, Member>();
  /** When each key last answered (this process): a pass checks the others. */
  const lastAnswered = new Map<string, number>();
  const checking = new Map<string, Promise<boolean>>();

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
      ensureCapabilities: (id, types) => watch(() => raw.ensureCapabilities(id, types)),
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

  const primary = makeMember(deps.configured[0]!);
  members.set(primaryKeyId, primary);

  const isUsable = (row: pq.AccountRow) => row.state === 'enabled' && memberOf(row) !== undefined;

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

  return {
    primaryKeyId,
    /** The ASC_KEY_ID account's identity. */
    primary,
    memberOf,
    /** Enabled, and this process has its key. */
    isUsable,
    confirmRejected,
    wakeUsersOf,

    /** Asks Apple about the usable keys not heard from within `keyCheckMs`; a refused one is rejected. */
    async checkQuietKeys(rows: readonly pq.AccountRow[], keyCheckMs: number) {
      const now = clock().getTime();
      for (const row of rows.filter(isUsable)) {
        if (now - (lastAnswered.get(row.keyId) ?? 0) < keyCheckMs) continue;
        const member = memberOf(row)!;
        try {
          await member.raw.listCertificates();
          lastAnswered.set(row.keyId, now);
        } catch (err) {
          // Refused: asked once more, and recorded, before the moves that follow.
          if (isKeyRejected(err)) await confirmRejected(row.keyId, member.raw, err.message);
        }
      }
    },

    /** The key answered just now (an admin's check before enabling its account). */
    answered: (keyId: string) => lastAnswered.set(keyId, clock().getTime()),

    /** Every account's identity this process has a key for, the first account first. */
    async providers(): Promise<SigningIdentityProvider[]> {
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
  };
}

export type PoolAccounts = ReturnType<typeof createPoolAccounts>;
