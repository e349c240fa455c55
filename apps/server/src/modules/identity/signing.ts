import { X509Certificate } from 'node:crypto';
import type { IdentitySource } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import type { SecretBox } from '../../platform/secrets.js';
import { settingOrCreate } from '../../platform/settings.js';
import type { DeviceRegistrar } from '../devices/registration.js';
import type { AccountPool } from './account-pool.js';
import type { DeviceService } from '../devices/service.js';
import { canonicalUdid } from '../devices/udid.js';
import { createDevIdentity, createDevProfile, devIdentitySource, DEV_IDENTITY_LABEL, type DevIdentity } from './dev-identity.js';
import * as q from './queries.js';

/**
 * Who signs: the operator's Apple identity (App Store Connect) or Sideport's dev identity. Each
 * makes the provisioning profile that lists a user's devices, and is what the devices domain's
 * registration registers a paid device with (DeviceRegistrar): Apple's registers it on the
 * developer account, the dev identity has nothing to register.
 */
export interface SigningIdentityProvider extends DeviceRegistrar {
  readonly kind: 'dev' | 'apple';
  /** For the admin console and the start-up line. */
  readonly description: string;
  source(): Promise<IdentitySource>;
  makeProfile(request: { userId: string; udids: readonly string[] }): Promise<{
    bytes: Buffer;
    uuid: string;
    expiresAt: Date;
    appleProfileId?: string;
  }>;
  /** Deletes a profile that a new one replaced (Apple's; nothing to do for the dev identity). */
  dropProfile?(appleProfileId: string): Promise<void>;
  /** What the admin console shows; never calls Apple. */
  details?(): Promise<IdentityDetails>;
  /** The CA that issued the signing certificate, PEM: the dev identity's own (Apple's is public). */
  caCertificatePem?(): Promise<string>;
}

export interface IdentityDetails {
  teamId: string | null;
  /** The signing certificate's common name; null until one exists (made on first use). */
  certificateName: string | null;
  certificateExpiresAt: Date | null;
}

/** Team (the OU, as Apple's certificates carry it), name and expiry of a PEM certificate. */
export function certificateDetails(certPem: string): IdentityDetails {
  const cert = new X509Certificate(certPem);
  // Node writes the subject one 'KEY=value' per line.
  const field = (key: string) =>
    cert.subject
      .split('\n')
      .find((line) => line.startsWith(`${key}=`))
      ?.slice(key.length + 1) ?? null;
  return { teamId: field('OU'), certificateName: field('CN'), certificateExpiresAt: new Date(cert.validTo) };
}

/** What a sign job needs for one user: an identity and a profile listing the user's Registered devices. */
export interface SigningMaterial {
  identity: IdentitySource;
  profile: Buffer;
  profileUuid: string;
  /** The devices the profile lists (its Registered devices when it was made), sorted by UDID. */
  udids: string[];
  identityKind: 'dev' | 'apple';
}

const DEV_IDENTITY_SETTING = 'dev_identity';
const DEV_IDENTITY_PURPOSE = 'dev-identity';

/**
 * The dev identity (docs/architecture.md, Topology, embedded default): made once, sealed with SECRET_KEY and
 * kept in the database, so every process and every restart signs with the same one.
 */
export function createDevIdentityProvider(deps: { db: Database; secrets: SecretBox; clock: () => Date }): SigningIdentityProvider {
  let loaded: Promise<DevIdentity> | undefined;
  const identity = () =>
    (loaded ??= settingOrCreate(deps.db, DEV_IDENTITY_SETTING, () =>
      deps.secrets.seal(JSON.stringify(createDevIdentity({ clock: deps.clock })), DEV_IDENTITY_PURPOSE),
    ).then((sealed) => JSON.parse(deps.secrets.open(sealed, DEV_IDENTITY_PURPOSE).toString('utf8')) as DevIdentity));
  return {
    kind: 'dev',
    description: `${DEV_IDENTITY_LABEL}: a local CA made by Sideport. It runs the whole pipeline; real devices will not install what it signs.`,
    source: async () => devIdentitySource(await identity()),
    details: async () => certificateDetails((await identity()).certPem),
    caCertificatePem: async () => (await identity()).caCertPem,
    async makeProfile({ userId, udids }) {
      const made = createDevProfile(await identity(), {
        devices: udids,
        name: `${DEV_IDENTITY_LABEL} ${userId}`,
        clock: deps.clock,
      });
      return { bytes: made.bytes, uuid: made.uuid, expiresAt: made.expirationDate };
    },
  };
}

export interface SigningServiceDeps {
  db: Database;
  clock: () => Date;
  /** The identity in use: the dev identity, or the first account of the pool. */
  identity: SigningIdentityProvider;
  /** Whose Registered devices a profile lists. */
  devices: Pick<DeviceService, 'registeredDevices'>;
  /**
   * With several developer accounts (account-pool.ts): the one a user's devices are on signs for
   * them, and a profile another account made is deleted there.
   */
  pool?: Pick<AccountPool, 'identityOf' | 'providerOf'> | undefined;
}

/**
 * Signing material per user. The profile is made on first use and kept while it lists exactly the
 * user's Registered devices and has not expired; otherwise a new one is made (profiles cannot be
 * edited) and the old one dropped.
 */
export function createSigningService({ db, clock, identity: defaultIdentity, devices, pool }: SigningServiceDeps) {
  // One profile made at a time per user in this process: two sign jobs of a user need only one.
  const making = new Map<string, Promise<SigningMaterial | undefined>>();

  async function materialFor(userId: string): Promise<SigningMaterial | undefined> {
    const placed = pool ? await pool.identityOf(userId) : undefined;
    if (pool && !placed) return undefined;
    const identity = placed?.provider ?? defaultIdentity;
    const accountId = placed?.accountId ?? null;
    // The devices of the account that signs: a user's devices share one (a move is one commit).
    const registered = (await devices.registeredDevices(userId)).filter((d) => !placed || d.accountId === accountId);
    if (registered.length === 0) return undefined;
    const udids = [...new Set(registered.map((d) => canonicalUdid(d.udid)))].sort();
    const stored = await q.findUserProfile(db, userId);
    const isCurrent =
      stored !== undefined &&
      stored.accountId === accountId &&
      stored.expiresAt.getTime() > clock().getTime() + 86_400_000 &&
      stored.udids.length === udids.length &&
      stored.udids.every((udid, i) => udid === udids[i]);
    if (stored && isCurrent) {
      return {
        identity: await identity.source(),
        profile: Buffer.from(stored.profile, 'base64'),
        profileUuid: stored.uuid,
        udids,
        identityKind: identity.kind,
      };
    }
    const made = await identity.makeProfile({ userId, udids });
    await q.saveUserProfile(db, {
      userId,
      profile: made.bytes.toString('base64'),
      uuid: made.uuid,
      udids,
      appleProfileId: made.appleProfileId ?? null,
      accountId,
      createdAt: clock(),
      expiresAt: made.expiresAt,
    });
    if (stored?.appleProfileId) {
      // Deleted where it was made: another account's, when the user's devices moved.
      const maker = stored.accountId === accountId ? identity : await pool?.providerOf(stored.accountId ?? 0);
      await maker?.dropProfile?.(stored.appleProfileId).catch(() => {});
    }
    return { identity: await identity.source(), profile: made.bytes, profileUuid: made.uuid, udids, identityKind: identity.kind };
  }

  return {
    /** undefined when the user has no Registered device (nothing to sign for). */
    signingMaterial(userId: string): Promise<SigningMaterial | undefined> {
      let pending = making.get(userId);
      if (!pending) {
        pending = materialFor(userId).finally(() => making.delete(userId));
        making.set(userId, pending);
      }
      return pending;
    },

    identityInfo: () => ({ kind: defaultIdentity.kind, description: defaultIdentity.description }),

    /** identityInfo and the certificate in use, for the admin console. */
    async identityDetails(): Promise<IdentityDetails> {
      return defaultIdentity.details ? defaultIdentity.details() : { teamId: null, certificateName: null, certificateExpiresAt: null };
    },

    /** The dev identity's CA certificate (PEM), which checks its signatures; undefined for Apple's. */
    async identityCaPem(): Promise<string | undefined> {
      return defaultIdentity.caCertificatePem ? defaultIdentity.caCertificatePem() : undefined;
    },

    /** The user's Registered devices and when each became so (check-sign compares an artifact with them). */
    async registeredDevices(userId: string): Promise<Array<{ udid: string; registeredAt: Date | null }>> {
      return (await devices.registeredDevices(userId)).map((d) => ({ udid: d.udid, registeredAt: d.registeredAt }));
    },
  };
}

export type SigningService = ReturnType<typeof createSigningService>;
